package cli

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// chunkTimeout is how long one chunk's answer may take before the chunk is sent
// again (the daemon acknowledges an exact resend unchanged); chunkRetries bounds it.
const (
	chunkTimeout = 30 * time.Second
	chunkRetries = 3
)

func uploadCmd() *cobra.Command {
	var configDir, sessionID string
	cmd := &cobra.Command{
		Use:   "upload --session ID FILE...",
		Short: "Upload files into a session's workspace in chunks",
		Long: `Upload each FILE into the workspace of session ID through file/upload/begin, chunk and
commit, with a progress bar on stderr. Each file's entry (ref_id, marker,
workspace_path, size_bytes, deduplicated) is printed as one line of JSON on stdout;
pass its ref_id in session/prompt attachments. A chunk whose answer is lost is sent
again with the same offset.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			if sessionID == "" {
				return errors.New("--session is required")
			}
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			c, err := dialDaemon(ctx, configDir)
			cancel()
			if err != nil {
				return err
			}
			defer c.Close()
			c.conn.SetDeadline(time.Time{}) // each call sets its own from here on
			u := &uploader{c: c, stderr: cmd.ErrOrStderr(), timeout: chunkTimeout}
			for _, path := range files {
				entry, err := u.upload(sessionID, path)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				if _, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n", entry); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&configDir, "config-dir", "", "config directory of the daemon (default $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")
	f.StringVar(&sessionID, "session", "", "the session whose workspace receives the files (required)")
	return cmd
}

// uploader sends files over one connection. Its calls carry their own deadline;
// a line cut short by a deadline is kept and completed by the next read.
type uploader struct {
	c       *rpcClient
	stderr  io.Writer
	timeout time.Duration
	partial []byte
}

func (u *uploader) upload(sessionID, path string) (jsontext.Value, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	var begun struct {
		UploadID   string `json:"upload_id"`
		ChunkBytes int    `json:"chunk_bytes"`
	}
	err = u.call("file/upload/begin", map[string]any{
		"session_id": sessionID, "size_bytes": len(data), "filename": filepath.Base(path), "sha256": hex.EncodeToString(sum[:]),
	}, &begun)
	if err != nil {
		return nil, err
	}
	step := begun.ChunkBytes
	if step <= 0 {
		step = 1 << 20
	}
	bar := u.progress(filepath.Base(path), len(data))
	for off := 0; off < len(data); off += step {
		chunk := data[off:min(off+step, len(data))]
		if err := u.chunk(begun.UploadID, off, chunk); err != nil {
			return nil, err
		}
		bar.Add(len(chunk))
	}
	bar.Finish()
	var entry jsontext.Value
	if err := u.call("file/upload/commit", map[string]any{"upload_id": begun.UploadID}, &entry); err != nil {
		return nil, err
	}
	return entry, nil
}

// chunk sends one chunk; when its answer does not come in time it sends the same
// chunk again, which the daemon acknowledges unchanged if it had accepted it.
func (u *uploader) chunk(id string, off int, data []byte) error {
	params := map[string]any{"upload_id": id, "offset": off, "data_b64": base64.StdEncoding.EncodeToString(data)}
	var res struct {
		ReceivedBytes int `json:"received_bytes"`
	}
	for attempt := 0; ; attempt++ {
		err := u.call("file/upload/chunk", params, &res)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && attempt < chunkRetries {
			fmt.Fprintf(u.stderr, "no answer for the chunk at offset %d within %s; sending it again\n", off, u.timeout)
			continue
		}
		if err != nil {
			return err
		}
		if res.ReceivedBytes != off+len(data) {
			return fmt.Errorf("the daemon reports %d bytes received, want %d", res.ReceivedBytes, off+len(data))
		}
		return nil
	}
}

// call sends one request and waits at most u.timeout for its answer, skipping
// notifications and late answers to earlier attempts.
func (u *uploader) call(method string, params, result any) error {
	c := u.c
	c.next++
	id := c.next
	req, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
		ID      int64  `json:"id"`
	}{"2.0", method, params, id})
	if err != nil {
		return err
	}
	c.conn.SetDeadline(time.Now().Add(u.timeout))
	if _, err := c.conn.Write(append(req, '\n')); err != nil {
		return fmt.Errorf("sending %s to %s: %w", method, c.endpoint, err)
	}
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			u.partial = append(u.partial, line...)
			return fmt.Errorf("waiting for the answer to %s from %s: %w", method, c.endpoint, err)
		}
		if len(u.partial) > 0 {
			line = append(u.partial, line...)
			u.partial = nil
		}
		var msg struct {
			Method string         `json:"method"`
			ID     jsontext.Value `json:"id"`
			Result jsontext.Value `json:"result"`
			Error  *rpcError      `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return fmt.Errorf("the daemon sent an unreadable line: %w", err)
		}
		if msg.Method != "" || string(msg.ID) != strconv.FormatInt(id, 10) {
			continue
		}
		if msg.Error != nil {
			return msg.Error
		}
		return json.Unmarshal(msg.Result, result)
	}
}

// progress is a bar with bytes, rate and ETA on a terminal; elsewhere a plain line
// per tenth of the file.
func (u *uploader) progress(name string, size int) interface {
	Add(int) error
	Finish() error
} {
	if f, ok := u.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return progressbar.NewOptions64(int64(size),
			progressbar.OptionSetWriter(f),
			progressbar.OptionSetDescription(name),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(f) }),
		)
	}
	return &plainProgress{w: u.stderr, name: name, size: size, start: time.Now()}
}

type plainProgress struct {
	w          io.Writer
	name       string
	size, done int
	shown      int // tenths shown
	start      time.Time
}

func (p *plainProgress) Add(n int) error {
	p.done += n
	if p.size == 0 {
		return nil
	}
	if tenth := p.done * 10 / p.size; tenth > p.shown {
		p.shown = tenth
		elapsed := time.Since(p.start).Seconds()
		rate := float64(p.done) / max(elapsed, 1e-9)
		eta := float64(p.size-p.done) / max(rate, 1)
		fmt.Fprintf(p.w, "%s: %d/%d bytes (%d%%), %.1f MB/s, ETA %.0fs\n", p.name, p.done, p.size, p.done*100/p.size, rate/1e6, eta)
	}
	return nil
}

func (p *plainProgress) Finish() error {
	if p.size == 0 {
		fmt.Fprintf(p.w, "%s: 0 bytes\n", p.name)
	}
	return nil
}
