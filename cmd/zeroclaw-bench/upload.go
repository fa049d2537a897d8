//go:build linux

package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// The upload measurement sends one file through file/upload/begin, one
// file/upload/chunk per 1 MiB (1.4 MB of base64 per frame) and file/upload/commit,
// each chunk after the previous one's answer (the daemon takes them in offset
// order), and times from the first chunk written to the commit's answer read. The
// echo server gets the same frames.

const (
	uploadBytes = 10 << 20 // the largest file the daemon takes
	chunkBytes  = 1 << 20  // the chunk size the daemon announces
)

// uploadPayload returns the file of upload n: its first 8 bytes hold n, so that no
// two uploads of a run are the same file (the daemon deduplicates by hash).
func uploadPayload(n uint64) []byte {
	b := make([]byte, uploadBytes)
	for i := range b {
		b[i] = byte(i*7 + i>>12)
	}
	binary.LittleEndian.PutUint64(b, n)
	return b
}

// uploadResult is what the bench needs of the answers.
type uploadResult struct {
	UploadID  string `json:"upload_id"`
	SizeBytes int    `json:"size_bytes"`
	Received  int    `json:"received_bytes"`
}

// upload is one measured upload: the answers of each step, and the time the chunks
// and the commit took.
type upload struct {
	Begin, Chunk, Commit []byte // result members, for the echo server's answers
	Elapsed              time.Duration
}

// uploadFile uploads data into sessionID and checks the commit's size.
func (c *client) uploadFile(sessionID string, data []byte) (upload, error) {
	var u upload
	begin, err := json.Marshal(map[string]any{"session_id": sessionID, "size_bytes": len(data), "filename": "bench.bin"})
	if err != nil {
		return u, err
	}
	res, err := c.call("file/upload/begin", string(begin))
	if err != nil {
		return u, fmt.Errorf("file/upload/begin: %w", err)
	}
	u.Begin = append([]byte(nil), res...)
	var b uploadResult
	if err := json.Unmarshal(res, &b); err != nil || b.UploadID == "" {
		return u, fmt.Errorf("file/upload/begin result %.200s", res)
	}
	// Every frame is built before the clock starts: the client is not what is measured.
	quoted := strconv.Quote(b.UploadID)
	var frames [][]byte
	for off := 0; off < len(data); off += chunkBytes {
		chunk := data[off:min(off+chunkBytes, len(data))]
		f := make([]byte, 0, base64.StdEncoding.EncodedLen(len(chunk))+128)
		f = append(f, `{"upload_id":`...)
		f = append(f, quoted...)
		f = append(f, `,"offset":`...)
		f = strconv.AppendInt(f, int64(off), 10)
		f = append(f, `,"data_b64":"`...)
		f = base64.StdEncoding.AppendEncode(f, chunk)
		f = append(f, `"}`...)
		frames = append(frames, f)
	}
	commit := `{"upload_id":` + quoted + `}`

	start := time.Now()
	for i, f := range frames {
		res, err := c.call("file/upload/chunk", string(f))
		if err != nil {
			return u, fmt.Errorf("file/upload/chunk %d: %w", i, err)
		}
		if i == 0 {
			u.Chunk = append([]byte(nil), res...)
		}
	}
	res, err = c.call("file/upload/commit", commit)
	u.Elapsed = time.Since(start)
	if err != nil {
		return u, fmt.Errorf("file/upload/commit: %w", err)
	}
	u.Commit = append([]byte(nil), res...)
	var r uploadResult
	if err := json.Unmarshal(res, &r); err != nil || r.SizeBytes != len(data) {
		return u, fmt.Errorf("file/upload/commit result %.200s, want size_bytes %d", res, len(data))
	}
	return u, nil
}

// uploadReport is the payload rate of 10 MiB uploads, daemon and echo server in
// alternating rounds.
type uploadReport struct {
	Rounds     int       `json:"rounds"`
	Bytes      int       `json:"bytes"`
	DaemonMiBs []float64 `json:"daemon_mib_s"` // each round
	EchoMiBs   []float64 `json:"echo_mib_s"`
	// Medians, and the median of the per-round ratios daemon / echo.
	DaemonMedian float64 `json:"daemon_median_mib_s"`
	EchoMedian   float64 `json:"echo_median_mib_s"`
	Ratio        float64 `json:"ratio"`
}

func mibPerSecond(n int, d time.Duration) float64 { return float64(n) / (1 << 20) / d.Seconds() }

// measureUploads runs rounds of one daemon upload and one echo upload, on the
// daemon's session sessionID.
func measureUploads(daemonC, echoC *client, sessionID string, rounds int, first uint64, s *uploadReport) error {
	s.Rounds, s.Bytes = rounds, uploadBytes
	var ratios []float64
	for i := range rounds {
		data := uploadPayload(first + uint64(i))
		daemonC.nc.SetDeadline(time.Now().Add(ioTimeout))
		d, err := daemonC.uploadFile(sessionID, data)
		if err != nil {
			return fmt.Errorf("daemon, round %d: %w", i+1, err)
		}
		echoC.nc.SetDeadline(time.Now().Add(ioTimeout))
		e, err := echoC.uploadFile(sessionID, data)
		if err != nil {
			return fmt.Errorf("echo, round %d: %w", i+1, err)
		}
		dr, er := mibPerSecond(len(data), d.Elapsed), mibPerSecond(len(data), e.Elapsed)
		s.DaemonMiBs = append(s.DaemonMiBs, dr)
		s.EchoMiBs = append(s.EchoMiBs, er)
		ratios = append(ratios, dr/er)
	}
	s.DaemonMedian, s.EchoMedian, s.Ratio = median(s.DaemonMiBs), median(s.EchoMiBs), median(ratios)
	return nil
}
