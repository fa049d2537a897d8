package rpc

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/upload"
)

// uploadFrames are the frames of one 10 MB upload in 1 MiB chunks, built once, as
// the load generator replays them: only the first chunk changes per iteration (so
// nothing is deduplicated), and no sha256 is declared (so the client hashes nothing).
type uploadFrames struct {
	data   []byte
	chunks [][]byte // the chunk frames after the upload_id, each ending in "}\n"

	chunking, committing time.Duration
}

func newUploadFrames() *uploadFrames {
	f := &uploadFrames{data: randomBytes(10_000_000)}
	for off := 0; off < len(f.data); off += upload.ChunkBytes {
		f.chunks = append(f.chunks, nil)
	}
	f.encode(0)
	for i := 1; i < len(f.chunks); i++ {
		f.encode(i)
	}
	return f
}

func (f *uploadFrames) encode(i int) {
	off := i * upload.ChunkBytes
	chunk := f.data[off:min(off+upload.ChunkBytes, len(f.data))]
	b := fmt.Appendf(f.chunks[i][:0], `","offset":%d,"data_b64":"`, off)
	b = base64.StdEncoding.AppendEncode(b, chunk)
	f.chunks[i] = append(b, "\"}}\n"...)
}

// send writes one upload's frames (begin, every chunk, commit), each once the
// previous one is answered, as a client must: chunks are served in order only when
// sent in order.
func (f *uploadFrames) send(b *testing.B, conn net.Conn, r *bufio.Reader, sid string, iter int) {
	start := time.Now()
	f.data[0], f.data[1], f.data[2], f.data[3] = byte(iter), byte(iter>>8), byte(iter>>16), byte(iter>>24)
	f.encode(0)
	answer := func() []byte {
		line, err := r.ReadBytes('\n')
		if err != nil || bytes.Contains(line, []byte(`"error"`)) {
			b.Fatalf("answer: %q, %v", line, err)
		}
		return line
	}
	fmt.Fprintf(conn, `{"jsonrpc":"2.0","id":"b","method":"file/upload/begin","params":{"session_id":%q,"size_bytes":%d}}`+"\n", sid, len(f.data))
	line := answer()
	i := bytes.Index(line, []byte(`"upload_id":"`)) + 13
	id := line[i : i+bytes.IndexByte(line[i:], '"')]
	w := bufio.NewWriterSize(conn, 64<<10)
	for n, c := range f.chunks {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"file/upload/chunk","params":{"upload_id":"%s`, n, id)
		w.Write(c)
		w.Flush()
		answer()
	}
	sent := time.Now()
	fmt.Fprintf(conn, `{"jsonrpc":"2.0","id":"c","method":"file/upload/commit","params":{"upload_id":"%s"}}`+"\n", id)
	answer()
	f.chunking += sent.Sub(start)
	f.committing += time.Since(sent)
}

// report adds the time spent per upload in begin and chunks, and in the commit.
func (f *uploadFrames) report(b *testing.B) {
	b.ReportMetric(float64(f.chunking.Milliseconds())/float64(b.N), "chunks-ms/op")
	b.ReportMetric(float64(f.committing.Milliseconds())/float64(b.N), "commit-ms/op")
}

// BenchmarkUploadPath10MB is the daemon's upload path from the socket on: the
// frames of a 10 MB upload replayed (begin, ten chunks, commit with its fsync),
// pipelined on one connection. Compare BenchmarkUploadRawBaseline10MB.
func BenchmarkUploadPath10MB(b *testing.B) {
	_, addr := benchServer(b)
	c := dialLines(b, addr)
	sid := c.call("session/new", `{"agentAlias":"default"}`)["sessionId"].(string)
	f := newUploadFrames()
	b.SetBytes(int64(len(f.data)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f.send(b, c.conn, c.r, sid, i)
	}
	f.report(b)
}

// BenchmarkUploadRawBaseline10MB replays the same frames to a server that does
// only what the socket needs: it reads lines, finds the id without decoding
// (strings skipped with IndexByte), and answers each in one write per burst.
func BenchmarkUploadRawBaseline10MB(b *testing.B) {
	ln, err := net.Listen("unix", filepath.Join(b.TempDir(), "raw.sock"))
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	b.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		r := bufio.NewReaderSize(conn, 4<<20)
		w := bufio.NewWriterSize(conn, 64<<10)
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return
			}
			w.WriteString(`{"jsonrpc":"2.0","id":`)
			w.Write(rawID(line))
			w.WriteString(`,"result":{"upload_id":"upl_0123456789abcdef0123456789abcdef","received_bytes":0}}` + "\n")
			if r.Buffered() == 0 {
				w.Flush()
			}
		}
	})
	conn, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	f := newUploadFrames()
	r := bufio.NewReaderSize(conn, 64<<10)
	b.SetBytes(int64(len(f.data)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f.send(b, conn, r, "s", i)
	}
	f.report(b)
}

// rawID finds the value of the top-level "id" member of a frame, skipping strings
// with IndexByte.
func rawID(line []byte) []byte {
	depth := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '{':
			depth++
		case '}':
			depth--
		case '"':
			j := i + 1
			for {
				k := bytes.IndexByte(line[j:], '"')
				if k < 0 {
					return []byte("null")
				}
				j += k
				if n := backslashes(line[:j]); n%2 == 0 {
					break
				}
				j++
			}
			if depth == 1 && string(line[i:j+1]) == `"id"` {
				v := bytes.TrimLeft(line[j+1:], " :")
				end := bytes.IndexAny(v, ",}")
				return bytes.TrimSpace(v[:end])
			}
			i = j
		}
	}
	return []byte("null")
}

func backslashes(b []byte) int {
	n := 0
	for n < len(b) && b[len(b)-1-n] == '\\' {
		n++
	}
	return n
}
