package rpc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/upload"
)

// pauseCommits makes every commit of srv stop once its temporary file is written
// and synced, before it takes any lock, and hand the test a channel to let it go
// on. It must be called before srv serves a connection.
func pauseCommits(t *testing.T, srv *Server) <-chan chan struct{} {
	paused := make(chan chan struct{})
	done := make(chan struct{})
	t.Cleanup(func() { close(done) }) // runs before the server's shutdown: nothing stays paused
	srv.testPrepared = func() {
		resume := make(chan struct{})
		select {
		case paused <- resume:
			select {
			case <-resume:
			case <-done:
			}
		case <-done:
		}
	}
	return paused
}

// sendAll begins an upload of data and sends all of it, without committing.
func (p *peer) sendAll(sid string, data []byte) string {
	p.t.Helper()
	id := p.begin(sid, len(data), `,"filename":"big.bin"`)
	for off := 0; off < len(data); off += upload.ChunkBytes {
		if _, err := p.chunk(id, off, data[off:min(off+upload.ChunkBytes, len(data))]); err != nil {
			p.t.Fatalf("chunk at %d: %v", off, err)
		}
	}
	return id
}

func waitPaused(t *testing.T, paused <-chan chan struct{}, commit <-chan map[string]any) chan struct{} {
	t.Helper()
	select {
	case resume := <-paused:
		return resume
	case m := <-commit:
		t.Fatalf("the commit answered %v without writing its temporary file first", m)
	}
	return nil
}

// Issue 12: the slow I/O of a commit (writing and syncing 10 MB) holds no lock, so a
// config/set sent while it runs completes before the commit does; the check that
// follows is made against the policy in force once the commit takes the locks.
func TestAConfigSetCompletesWhileALargeUploadLands(t *testing.T) {
	s := newConfServer(t, files)
	paused := pauseCommits(t, s.srv)
	alice, op := s.as(4242).peer(t, ""), s.operator(t)
	sid, ws := workspaceOf(t, alice, `{"agentAlias":"full"}`)
	data := randomBytes(10_000_000)

	commit := alice.start("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, alice.sendAll(sid, data)))
	resume := waitPaused(t, paused, commit)
	// The commit's file is written and synced, and the commit has not answered: a
	// config write must not wait for it. (await fails the test after 30 s.)
	if _, err := op.await(op.start("config/set", `{"prop":"rpc.upload_idle_secs","value":600}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-commit:
		t.Fatalf("the commit answered %v while paused", m)
	default:
	}
	close(resume)
	f, err := alice.await(commit)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(ws, f["workspace_path"].(string)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("landed %d bytes, %v; want the 10 MB", len(got), err)
	}
	if entries, _ := os.ReadDir(filepath.Join(ws, "uploads")); len(entries) != 1 {
		t.Errorf("uploads/ holds %d entries, want the file alone", len(entries))
	}

	// A grant withdrawn while the file is written, before the locks: the commit is
	// checked against the policy in force when it takes them, and fails with
	// nothing named and its temporary file gone.
	other := randomBytes(3 << 20)
	commit = alice.start("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, alice.sendAll(sid, other)))
	resume = waitPaused(t, paused, commit)
	op.must("config/set", `{"prop":"permission_profiles.uploader.grants","value":["sessions:execute"]}`)
	close(resume)
	_, err = alice.await(commit)
	if e := wantCode(t, err, -32012); e.Data["grant"] != "files:create" {
		t.Errorf("commit after the grant went: %v", e)
	}
	if entries, _ := os.ReadDir(filepath.Join(ws, "uploads")); len(entries) != 1 {
		t.Errorf("uploads/ holds %d entries, want the first file alone", len(entries))
	}
}

// Issue 12, docs/protocol.md, "Storage failures": an upload whose index write fails
// answers -32603 and never success; what was stored before stays, and once the store
// works again the same upload lands without a restart.
func TestAnUploadWhoseIndexWriteFailsAnswersAnInternalError(t *testing.T) {
	var failing atomic.Bool
	st, err := store.Open(filepath.Join(t.TempDir(), "sessions.db"), store.Options{FailWrites: func(op string) error {
		if op == store.OpIndexUpload && failing.Load() {
			return errors.New("disk full (injected)")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := startServerWith(t, Config{}, config.Default(), session.Options{Store: st})
	p := h.peer(t, "")
	sid, ws := workspaceOf(t, p, `{"agentAlias":"default"}`)
	before := p.upload(sid, "before.txt", []byte("stored before"))

	failing.Store(true)
	data := randomBytes(2 << 20)
	id := p.sendAll(sid, data)
	_, err = p.call("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id))
	if e := wantCode(t, err, -32603); !strings.Contains(e.Message, "the upload index could not be written") || strings.Contains(e.Message, ws) {
		t.Errorf("commit with a failing store: %v", e)
	}
	_, err = p.call("file/attach", fmt.Sprintf(`{"session_id":%q,"files":[{"data_b64":%q}]}`, sid, b64([]byte("attached"))))
	wantCode(t, err, -32603)
	// A repeat of indexed bytes writes nothing to the store: it still answers.
	if again := p.upload(sid, "before.txt", []byte("stored before")); again["deduplicated"] != true {
		t.Errorf("repeat while the store fails: %v", again)
	}

	failing.Store(false)
	f := p.upload(sid, "big.bin", data)
	if f["deduplicated"] != false || f["workspace_path"] != "uploads/"+sumHex(data)+".bin" {
		t.Errorf("after recovery: %v", f)
	}
	r := p.must("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":"x","attachments":[{"ref_id":%q},{"ref_id":%q}]}`,
		sid, before["ref_id"], f["ref_id"]))
	if !strings.Contains(r["text"].(string), "uploads/"+sumHex(data)) {
		t.Errorf("the recovered upload is not indexed: %q", r["text"])
	}
	for _, e := range func() []os.DirEntry { e, _ := os.ReadDir(filepath.Join(ws, "uploads")); return e }() {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("a temporary file was left: %s", e.Name())
		}
	}
}

// A repeat of stored bytes writes no temporary file when the stored file is intact;
// if the file is changed after that look and before the locks, the check under the
// locks sees it and writes the bytes back all the same. A repeat of more than one
// chunk had its chunks written to a temporary file as they arrived: that file is
// removed before the locks too.
func TestARepeatWhoseFileChangesBeforeTheLocksIsWrittenBack(t *testing.T) {
	for _, size := range []int{5000, spooledSize} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			h := startServerWith(t, Config{}, config.Default(), session.Options{})
			paused := pauseCommits(t, h.srv)
			p := h.peer(t, "")
			sid, ws := workspaceOf(t, p, `{"agentAlias":"default"}`)
			data := randomBytes(size)
			commit := p.start("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, p.sendAll(sid, data)))
			close(waitPaused(t, paused, commit))
			f, err := p.await(commit)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(ws, f["workspace_path"].(string))

			commit = p.start("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, p.sendAll(sid, data)))
			resume := waitPaused(t, paused, commit)
			if entries, _ := os.ReadDir(filepath.Join(ws, "uploads")); len(entries) != 1 {
				t.Errorf("a repeat of intact bytes wrote a temporary file: uploads/ holds %d entries", len(entries))
			}
			os.WriteFile(path, []byte("edited meanwhile"), 0o600)
			close(resume)
			again, err := p.await(commit)
			if err != nil || again["deduplicated"] != true {
				t.Fatalf("repeat = %v, %v", again, err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Errorf("after the repeat the file holds %q", got)
			}
		})
	}
}
