package rpc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fullfs"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/upload"
)

// The bytes of an upload of more than one chunk are written to a temporary file in
// the workspace as its chunks arrive (upload's spool), so that its commit is left
// the last chunk and the fsync. These tests hold that file to the rules of the
// commit's own: named by nothing until the commit places it, gone with any upload
// that goes without being placed, and never the reason a commit fails where
// writing the file whole at the commit would succeed.

// tempFiles returns the sizes of the temporary files in ws's uploads directory.
func tempFiles(t *testing.T, ws string) []int64 {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(ws, "uploads"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var sizes []int64
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, fi.Size())
		}
	}
	return sizes
}

// spooledSize is an upload of two chunks and a byte: spooled.
const spooledSize = 2*upload.ChunkBytes + 1

// beginSpooled begins a spooled upload and sends its first chunk, then waits (in
// the bubble) until the spool has written it.
func beginSpooled(t *testing.T, p *peer, sid, ws, extra string) string {
	t.Helper()
	id := p.begin(sid, spooledSize, extra)
	if _, err := p.chunk(id, 0, randomBytes(upload.ChunkBytes)); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	if got := tempFiles(t, ws); len(got) != 1 || got[0] != upload.ChunkBytes {
		t.Fatalf("after the first chunk uploads/ holds temporary files of %v bytes, want one of %d", got, upload.ChunkBytes)
	}
	return id
}

func TestAnUploadsTemporaryFileGoesWithItWhenItIsNotCommitted(t *testing.T) {
	for name, drop := range map[string]func(t *testing.T, h *harness, p *peer, sid, id string){
		"its connection closed": func(t *testing.T, h *harness, p *peer, sid, id string) {
			p.conn.Close()
		},
		"it sat idle": func(t *testing.T, h *harness, p *peer, sid, id string) {
			time.Sleep(upload.IdleLimit) // fake time: its timer fires
		},
		"it was reclaimed for another upload": func(t *testing.T, h *harness, p *peer, sid, id string) {
			// Fill the budget with silent uploads of other connections, make them
			// and the spooled one idle past a shorter deadline, before their timers.
			var q *peer
			for i := range 25 {
				if i%4 == 0 {
					q = h.peer(t, "")
				}
				q.begin(sid, upload.MaxBytes, "")
			}
			p.must("config/set", `{"prop":"rpc.upload_idle_secs","value":1}`)
			time.Sleep(time.Second)
			h.peer(t, "").begin(sid, upload.MaxBytes, "")
			if n, _ := h.srv.uploads.Staged(); n != 1 {
				t.Fatalf("%d uploads staged after the reclaim, want the new one", n)
			}
			_, err := p.chunk(id, upload.ChunkBytes, randomBytes(upload.ChunkBytes))
			wantReason(t, err, "unknown_upload")
		},
		"its declared sha256 did not match": func(t *testing.T, h *harness, p *peer, sid, id string) {
			if _, err := p.chunk(id, upload.ChunkBytes, randomBytes(upload.ChunkBytes+1)); err != nil {
				t.Fatal(err)
			}
			_, err := p.call("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id))
			wantReason(t, err, "sha256_mismatch")
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startBubbleServer(t, Config{}, config.Default(), session.Options{})
				p := h.peer(t, "")
				sid, ws := workspaceOf(t, p, `{"agentAlias":"default"}`)
				extra := ""
				if strings.Contains(name, "sha256") {
					extra = `,"sha256":"` + strings.Repeat("ab", 32) + `"`
				}
				id := beginSpooled(t, p, sid, ws, extra)
				drop(t, h, p, sid, id)
				synctest.Wait()
				if got := tempFiles(t, ws); len(got) != 0 {
					t.Errorf("temporary files of %v bytes left", got)
				}
				if name != "it was reclaimed for another upload" {
					if n, charged := h.srv.uploads.Staged(); n != 0 || charged != 0 {
						t.Errorf("%d uploads (%d bytes) still staged", n, charged)
					}
				}
			})
		})
	}
}

// docs/protocol.md, "Storage failures", on a real full disk (a tmpfs, as root), for a
// spooled upload: whether the disk is full before its chunks or fills while they
// arrive, the commit answers -32603, naming no path, and leaves no temporary file;
// when the space returns before the commit, the commit lands the upload whole (it
// writes what the spool could not); and the daemon goes on working without a restart.
func TestASpooledUploadOnAFullDiskFailsVisiblyOrLandsWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := fullfs.Mount(t, 8<<20)
		h := startBubbleServer(t, Config{}, config.Default(), session.Options{})
		p := h.peer(t, "")
		sid, ws := workspaceOf(t, p, fmt.Sprintf(`{"agentAlias":"default","cwd":%q}`, fs.Dir))
		if ws != fs.Dir {
			t.Fatalf("workspace %s, want the small file system %s", ws, fs.Dir)
		}
		commit := func(id string) (map[string]any, error) {
			return p.call("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id))
		}
		// fails commits id on the full disk.
		fails := func(what, id string) {
			t.Helper()
			if !fs.Full() {
				t.Fatalf("%s: the disk is not full: the case proves nothing", what)
			}
			_, err := commit(id)
			e := wantCode(t, err, -32603)
			if e.Message != "internal error: the upload could not be stored: the file could not be written" {
				t.Errorf("%s: %v, want the write's storage failure (and no path)", what, e)
			}
			synctest.Wait()
			if got := tempFiles(t, ws); len(got) != 0 {
				t.Errorf("%s: temporary files of %v bytes left", what, got)
			}
		}
		data := randomBytes(spooledSize)

		fs.Fill()
		fails("full before the chunks", p.sendAll(sid, data))
		fs.Free()

		id := p.begin(sid, len(data), "")
		if _, err := p.chunk(id, 0, data[:upload.ChunkBytes]); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := tempFiles(t, ws); len(got) != 1 || got[0] != upload.ChunkBytes {
			t.Fatalf("the first chunk was not spooled: temporary files of %v bytes", got)
		}
		fs.Fill()
		for off := upload.ChunkBytes; off < len(data); off += upload.ChunkBytes {
			if _, err := p.chunk(id, off, data[off:min(off+upload.ChunkBytes, len(data))]); err != nil {
				t.Fatal(err)
			}
		}
		fails("full while the chunks arrived", id)

		id = p.sendAll(sid, data) // the disk is still full: the spool cannot write
		fs.Free()
		f, err := commit(id)
		if err != nil {
			t.Fatalf("commit once the space returned: %v", err)
		}
		got, err := os.ReadFile(filepath.Join(ws, f["workspace_path"].(string)))
		if err != nil || !bytes.Equal(got, data) || f["deduplicated"] != false {
			t.Fatalf("landed %v: %d bytes, %v; want the %d sent", f, len(got), err, len(data))
		}
		if got := tempFiles(t, ws); len(got) != 0 {
			t.Errorf("temporary files of %v bytes left", got)
		}
		other := randomBytes(spooledSize + 7)
		if f := p.upload(sid, "after.bin", other); f["size_bytes"] != float64(len(other)) {
			t.Errorf("an upload after the recovery: %v", f)
		}
	})
}
