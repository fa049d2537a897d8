//go:build unix

package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json/v2"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// fakeUploads serves file/upload/* as docs/protocol.md, "Files", says, and never
// answers the first try of the chunk at dropAt: the client must send it again.
type fakeUploads struct {
	mu       sync.Mutex
	data     bytes.Buffer
	dropAt   int64
	dropped  bool
	chunks   int
	begin    map[string]any
	received []int64
}

func (f *fakeUploads) Handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p map[string]any
	json.Unmarshal(req.Params, &p)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch req.Method {
	case "file/upload/begin":
		f.begin = p
		return map[string]any{"upload_id": "up_1", "chunk_bytes": 4, "max_bytes": 10 << 20}, nil
	case "file/upload/chunk":
		f.chunks++
		off := int64(p["offset"].(float64))
		b, _ := base64.StdEncoding.DecodeString(p["data_b64"].(string))
		if off == f.dropAt && !f.dropped {
			f.dropped = true
			f.data.Write(b) // accepted, but the answer is lost
			f.mu.Unlock()
			<-ctx.Done()
			f.mu.Lock()
			return nil, ctx.Err()
		}
		if off == int64(f.data.Len()) {
			f.data.Write(b)
		} else if off+int64(len(b)) != int64(f.data.Len()) { // a repeat is acknowledged unchanged
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "bad offset", map[string]any{"reason": "bad_offset"})
		}
		return map[string]any{"upload_id": "up_1", "received_bytes": f.data.Len()}, nil
	case "file/upload/commit":
		return map[string]any{"ref_id": "sha256:x", "marker": "[Document: f.txt] uploads/x.txt", "workspace_path": "uploads/x.txt", "size_bytes": f.data.Len()}, nil
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "no")
}

func TestUploadResendsAChunkWhoseAnswerWasLost(t *testing.T) {
	srvSide, cliSide := net.Pipe()
	f := &fakeUploads{dropAt: 4}
	srv := jsonrpc.NewConn(jsonrpc.NewNDJSON(srvSide), f, jsonrpc.Options{})
	go srv.Run()
	defer srv.Close()
	c := newClient("pipe", options{chunkTimeout: 200 * time.Millisecond, logger: nopLogger()}, nil)
	c.firstLink(jsonrpc.NewNDJSON(cliSide), nil)
	defer c.Close()

	path := filepath.Join(t.TempDir(), "f.txt")
	content := []byte("0123456789")
	os.WriteFile(path, content, 0o600)
	var progress []int64
	entry, err := c.Upload(ctxFor(t), "s1", path, func(done, total int64) {
		if total != 10 {
			t.Errorf("total %d", total)
		}
		progress = append(progress, done)
	})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !bytes.Equal(f.data.Bytes(), content) || f.chunks != 4 || entry.SizeBytes != 10 {
		t.Fatalf("stored %q in %d chunk calls, entry %+v", f.data.Bytes(), f.chunks, entry)
	}
	if f.begin["session_id"] != "s1" || f.begin["size_bytes"] != float64(10) || f.begin["filename"] != "f.txt" ||
		f.begin["sha256"] != "84d89877f0d4041efb6bf91a16f0248f2fd573e6af05c19f96bedb9f882f7882" {
		t.Fatalf("begin params %v", f.begin)
	}
	if want := []int64{0, 4, 8, 10}; !slicesEqual(progress, want) {
		t.Fatalf("progress %v, want %v", progress, want)
	}
}

func slicesEqual(a, b []int64) bool { return string(mustJSON(a)) == string(mustJSON(b)) }

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func nopLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
