package rpc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json/v2"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/upload"
)

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func sumHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// begin starts an upload and returns its id.
func (p *peer) begin(sid string, size int, extra string) string {
	p.t.Helper()
	res := p.must("file/upload/begin", fmt.Sprintf(`{"session_id":%q,"size_bytes":%d%s}`, sid, size, extra))
	if res["chunk_bytes"] != float64(upload.ChunkBytes) || res["max_bytes"] != float64(10485760) {
		p.t.Fatalf("begin = %v", res)
	}
	return res["upload_id"].(string)
}

func (p *peer) chunk(id string, offset int, data []byte) (map[string]any, error) {
	return p.call("file/upload/chunk", fmt.Sprintf(`{"upload_id":%q,"offset":%d,"data_b64":%q}`, id, offset, b64(data)))
}

// upload sends data through begin, chunks of chunk_bytes and commit.
func (p *peer) upload(sid, filename string, data []byte) map[string]any {
	p.t.Helper()
	id := p.begin(sid, len(data), fmt.Sprintf(`,"filename":%q,"sha256":%q`, filename, sumHex(data)))
	for off := 0; off < len(data); off += upload.ChunkBytes {
		end := min(off+upload.ChunkBytes, len(data))
		res, err := p.chunk(id, off, data[off:end])
		if err != nil || res["received_bytes"] != float64(end) {
			p.t.Fatalf("chunk at %d: %v, %v", off, res, err)
		}
	}
	return p.must("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id))
}

func wantReason(t *testing.T, err error, reason string) *rpcError {
	t.Helper()
	e := wantCode(t, err, -32602)
	if e.Data["reason"] != reason {
		t.Fatalf("err = %v, want reason %s", e, reason)
	}
	return e
}

func workspaceOf(t *testing.T, p *peer, params string) (sid, ws string) {
	t.Helper()
	res := p.must("session/new", params)
	return res["sessionId"].(string), res["workspaceDir"].(string)
}

func TestA10MBUploadLandsByteIdenticalAndRepeatsDeduplicate(t *testing.T) {
	h := startServer(t, Config{})
	p := h.peer(t, "")
	sid, ws := workspaceOf(t, p, `{"agentAlias":"default"}`)
	data := randomBytes(10_000_000)
	f := p.upload(sid, "report.PDF", data)
	want := "uploads/" + sumHex(data) + ".pdf"
	if f["ref_id"] != "sha256:"+sumHex(data) || f["workspace_path"] != want || f["size_bytes"] != float64(len(data)) ||
		f["deduplicated"] != false || f["marker"] != "[Document: report.PDF] "+want {
		t.Fatalf("entry = %v", f)
	}
	got, err := os.ReadFile(filepath.Join(ws, want))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("file on disk: %d bytes, %v; want the 10 MB byte for byte", len(got), err)
	}
	if fi, _ := os.Stat(filepath.Join(ws, want)); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	again := p.upload(sid, "other-name.txt", data)
	if again["deduplicated"] != true || again["workspace_path"] != want {
		t.Errorf("repeat = %v, want deduplicated at %s", again, want)
	}
	// file/attach lands through the same step.
	res := p.must("file/attach", fmt.Sprintf(`{"session_id":%q,"files":[{"filename":"a.png","data_b64":%q},{"data_b64":%q}]}`,
		sid, b64([]byte("png!")), b64(data[:10])))
	files := res["files"].([]any)
	img, doc := files[0].(map[string]any), files[1].(map[string]any)
	if img["marker"] != "[IMAGE:uploads/"+sumHex([]byte("png!"))+".png]" || img["deduplicated"] != false {
		t.Errorf("image entry = %v", img)
	}
	if doc["marker"] != "[Document: upload] uploads/"+sumHex(data[:10]) {
		t.Errorf("unnamed entry = %v", doc)
	}
	entries, _ := os.ReadDir(filepath.Join(ws, "uploads"))
	if len(entries) != 3 {
		t.Errorf("uploads/ holds %d entries, want 3 (no temporary file left)", len(entries))
	}
}

func TestEveryUploadLimitAnswersItsReason(t *testing.T) {
	h := startServer(t, Config{})
	p := h.peer(t, "")
	sid := p.newSession("")
	call := func(method, params string) error {
		_, err := p.call(method, params)
		return err
	}

	wantReason(t, call("file/upload/begin", fmt.Sprintf(`{"session_id":%q,"size_bytes":10485761}`, sid)), "too_large")
	wantReason(t, call("file/upload/begin", fmt.Sprintf(`{"session_id":%q,"size_bytes":1,"filename":%q}`, sid, strings.Repeat("x", 256))), "filename_too_long")
	wantReason(t, call("file/attach", fmt.Sprintf(`{"session_id":%q,"files":[{"filename":%q,"data_b64":""}]}`, sid, strings.Repeat("x", 256))), "filename_too_long")
	p.begin(sid, 1, fmt.Sprintf(`,"filename":%q`, strings.Repeat("x", 255))) // 255 bytes is fine

	data := randomBytes(300)
	id := p.begin(sid, len(data), "")
	wantReason(t, call("file/upload/chunk", fmt.Sprintf(`{"upload_id":%q,"offset":0,"data_b64":"@@@"}`, id)), "bad_base64")
	_, err := p.chunk(id, 100, data[100:200])
	if e := wantReason(t, err, "bad_offset"); e.Data["received_bytes"] != float64(0) {
		t.Errorf("bad_offset data = %v", e.Data)
	}
	if res, err := p.chunk(id, 0, data[:100]); err != nil || res["received_bytes"] != float64(100) {
		t.Fatalf("first chunk: %v %v", res, err)
	}
	// An exact resend is acknowledged unchanged; a different one is refused.
	if res, err := p.chunk(id, 0, data[:100]); err != nil || res["received_bytes"] != float64(100) {
		t.Fatalf("resend: %v %v", res, err)
	}
	_, err = p.chunk(id, 0, data[1:101])
	wantReason(t, err, "bad_offset")
	_, err = p.chunk(id, 0, data[:50])
	wantReason(t, err, "bad_offset")
	_, err = p.chunk(id, 100, randomBytes(201))
	wantReason(t, err, "too_large")
	wantReason(t, call("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id)), "incomplete")
	if _, err := p.chunk(id, 100, data[100:]); err != nil {
		t.Fatal(err)
	}
	p.must("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id))
	wantReason(t, call("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id)), "unknown_upload")

	// A declared hash must match; the upload is gone afterwards.
	id = p.begin(sid, 3, `,"sha256":"`+sumHex([]byte("abd"))+`"`)
	p.chunk(id, 0, []byte("abc"))
	wantReason(t, call("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id)), "sha256_mismatch")
	wantReason(t, call("file/upload/chunk", fmt.Sprintf(`{"upload_id":%q,"offset":3,"data_b64":""}`, id)), "unknown_upload")

	// Another connection cannot name an upload.
	id = p.begin(sid, 3, "")
	other := h.peer(t, "")
	_, err = other.call("file/upload/chunk", fmt.Sprintf(`{"upload_id":%q,"offset":0,"data_b64":"YWJj"}`, id))
	wantReason(t, err, "unknown_upload")
	_, err = other.call("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id))
	wantReason(t, err, "unknown_upload")

	// Four per connection (the 255-byte name and this one stage already).
	p.begin(sid, 1, "")
	p.begin(sid, 1, "")
	wantReason(t, call("file/upload/begin", fmt.Sprintf(`{"session_id":%q,"size_bytes":1}`, sid)), "too_many_uploads")
	other.begin(sid, 1, "") // the limit is per connection

	// A session the caller cannot see answers like a missing one.
	_, err = p.call("file/upload/begin", `{"session_id":"nope","size_bytes":1}`)
	wantCode(t, err, -32000)
}

// The 256 MiB budget counts declared sizes: 25 uploads of 10 MiB fit, the 26th
// does not, and metadata is charged too.
func TestTheBudgetSpansConnectionsAndChargesMetadata(t *testing.T) {
	h := startServer(t, Config{})
	var peers []*peer
	sid := ""
	for i := 0; i < 7; i++ {
		p := h.peer(t, "")
		if sid == "" {
			sid = p.newSession("")
		}
		peers = append(peers, p)
	}
	for i := 0; i < 25; i++ {
		peers[i/4].begin(sid, upload.MaxBytes, "")
	}
	_, err := peers[6].call("file/upload/begin", fmt.Sprintf(`{"session_id":%q,"size_bytes":%d}`, sid, upload.MaxBytes))
	wantReason(t, err, "budget")
	n, charged := h.srv.uploads.Staged()
	if n != 25 || charged <= 25*upload.MaxBytes {
		t.Errorf("staged %d, charged %d: want 25 and more than their payload", n, charged)
	}
	// What is left is 6 MiB minus metadata: a payload of exactly the remainder does
	// not fit, because its own metadata is charged too.
	left := upload.Budget - charged
	_, err = peers[6].call("file/upload/begin", fmt.Sprintf(`{"session_id":%q,"size_bytes":%d}`, sid, left))
	wantReason(t, err, "budget")
	peers[6].begin(sid, int(left)-1024, "")
}

func TestIdleUploadsAreReclaimedWhenTheBudgetIsFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startBubbleServer(t, Config{}, config.Default(), session.Options{})
		op := h.peer(t, "")
		sid := op.newSession("")
		var ids []string
		var peers []*peer
		for i := 0; i < 25; i++ {
			if i%4 == 0 {
				peers = append(peers, h.peer(t, ""))
			}
			ids = append(ids, peers[i/4].begin(sid, upload.MaxBytes, ""))
		}
		_, err := op.call("file/upload/begin", fmt.Sprintf(`{"session_id":%q,"size_bytes":%d}`, sid, upload.MaxBytes))
		wantReason(t, err, "budget")
		// Lower the deadline; the silent uploads are past it one second on, their
		// connections still open.
		op.must("config/set", `{"prop":"rpc.upload_idle_secs","value":1}`)
		time.Sleep(time.Second) // fake time: the bubble's clock
		synctest.Wait()
		op.begin(sid, upload.MaxBytes, "")
		if n, _ := h.srv.uploads.Staged(); n != 1 {
			t.Errorf("%d uploads staged after the reclaim, want 1", n)
		}
		_, err = peers[0].chunk(ids[0], 0, []byte("x"))
		wantReason(t, err, "unknown_upload")
	})
}

func TestIdleUploadsAreDiscardedByTheirTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startBubbleServer(t, Config{}, config.Default(), session.Options{})
		p := h.peer(t, "")
		sid := p.newSession("")
		p.must("config/set", `{"prop":"rpc.upload_idle_secs","value":1}`)
		id := p.begin(sid, 10, "")
		time.Sleep(time.Second / 2)
		p.chunk(id, 0, []byte("12345")) // activity postpones the discard
		time.Sleep(time.Second - time.Nanosecond)
		synctest.Wait()
		if n, _ := h.srv.uploads.Staged(); n != 1 {
			t.Fatalf("%d uploads staged just before the idle second after the chunk, want 1", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n, charged := h.srv.uploads.Staged(); n != 0 || charged != 0 {
			t.Fatalf("%d uploads (%d bytes) staged an idle second after the chunk, want none", n, charged)
		}
		_, err := p.chunk(id, 5, []byte("67890"))
		wantReason(t, err, "unknown_upload")
	})
}

func TestClosingAConnectionDiscardsItsUploads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startBubbleServer(t, Config{}, config.Default(), session.Options{})
		keep := h.peer(t, "")
		sid := keep.newSession("")
		keep.begin(sid, 100, "")
		gone := h.peer(t, "")
		id := gone.begin(sid, 100, "")
		gone.chunk(id, 0, randomBytes(50))
		if n, _ := h.srv.uploads.Staged(); n != 2 {
			t.Fatalf("%d uploads staged, want 2", n)
		}
		gone.conn.Close()
		synctest.Wait() // the server has seen the close, and done with it
		if n, _ := h.srv.uploads.Staged(); n != 1 {
			t.Fatalf("%d uploads staged after one connection closed, want 1", n)
		}
	})
}

// files grants alice uploads into sessions of the "full" agent.
const files = `
[agents.full]
provider = "echo"
autonomy = "full"

[permission_profiles.uploader]
grants = ["sessions:execute", "files:create"]
agents = ["full"]

[users.alice]
uid = 4242
permission_profiles = ["uploader"]
`

func TestAGrantWithdrawnMidUploadFailsTheCommitBeforeAnyWrite(t *testing.T) {
	s := newConfServer(t, files)
	alice := s.as(4242).peer(t, "")
	sid, ws := workspaceOf(t, alice, `{"agentAlias":"full"}`)
	data := randomBytes(1000)
	id := alice.begin(sid, len(data), "")
	if _, err := alice.chunk(id, 0, data); err != nil {
		t.Fatal(err)
	}
	s.operator(t).must("config/set", `{"prop":"permission_profiles.uploader.grants","value":["sessions:execute"]}`)
	_, err := alice.call("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id))
	if e := wantCode(t, err, -32012); e.Data["grant"] != "files:create" {
		t.Errorf("commit after the grant went: %v", e)
	}
	assertNoUploads(t, ws)

	// The agent entitlement is checked again too.
	s.operator(t).must("config/set", `{"prop":"permission_profiles.uploader.grants","value":["sessions:execute","files:create"]}`)
	id = alice.begin(sid, len(data), "")
	alice.chunk(id, 0, data)
	s.operator(t).must("config/set", `{"prop":"permission_profiles.uploader.agents","value":["default"]}`)
	_, err = alice.call("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id))
	wantCode(t, err, -32012)
	assertNoUploads(t, ws)

	// And the credential: alice left the roster.
	s.operator(t).must("config/set", `{"prop":"permission_profiles.uploader.agents","value":["full"]}`)
	id = alice.begin(sid, len(data), "")
	alice.chunk(id, 0, data)
	s.operator(t).must("config/set", `{"prop":"users.alice.uid","value":4999}`)
	_, err = alice.call("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id))
	wantCode(t, err, -32010)
	assertNoUploads(t, ws)
}

func assertNoUploads(t *testing.T, ws string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(ws, "uploads"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("uploads/ holds %d entries, want none", len(entries))
	}
}

func TestASessionClosedOrRecreatedFailsTheCommitBeforeAnyWrite(t *testing.T) {
	h := startServer(t, Config{})
	p := h.peer(t, "")
	sid, ws := workspaceOf(t, p, `{"agentAlias":"default","sessionId":"same-id"}`)
	data := randomBytes(100)

	id := p.begin(sid, len(data), "")
	p.chunk(id, 0, data)
	p.must("session/close", `{"sessionId":"same-id"}`)
	_, err := p.call("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id))
	wantCode(t, err, -32000)
	assertNoUploads(t, ws)

	// Restored under the same id: a new live session, not the one the upload was for.
	p.must("session/new", `{"agentAlias":"default","sessionId":"same-id"}`)
	id = p.begin(sid, len(data), "")
	p.chunk(id, 0, data)
	p.must("session/close", `{"sessionId":"same-id"}`)
	p.must("session/new", `{"agentAlias":"default","sessionId":"same-id"}`)
	_, err = p.call("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id))
	wantCode(t, err, -32000)
	assertNoUploads(t, ws)

	// Commits racing a close: each either lands whole (ordered before the close) or
	// fails with nothing written.
	for i := 0; i < 20; i++ {
		p.must("session/new", `{"agentAlias":"default","sessionId":"same-id"}`)
		d := randomBytes(64 << 10)
		id := p.begin(sid, len(d), "")
		p.chunk(id, 0, d)
		commit := p.start("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id))
		p.must("session/close", `{"sessionId":"same-id"}`)
		res, err := p.await(commit)
		path := filepath.Join(ws, "uploads", sumHex(d))
		got, rerr := os.ReadFile(path)
		switch {
		case err == nil && (rerr != nil || !bytes.Equal(got, d) || res["workspace_path"] != "uploads/"+sumHex(d)):
			t.Fatalf("commit succeeded but the file is %d bytes, %v", len(got), rerr)
		case err != nil && rerr == nil:
			t.Fatalf("commit failed (%v) but the file was written", err)
		case err != nil:
			wantCode(t, err, -32000)
		}
	}
}

func TestARepeatRewritesATamperedFile(t *testing.T) {
	h := startServer(t, Config{})
	p := h.peer(t, "")
	sid, ws := workspaceOf(t, p, `{"agentAlias":"default"}`)
	data := randomBytes(5000)
	f := p.upload(sid, "notes.txt", data)
	path := filepath.Join(ws, f["workspace_path"].(string))
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("do not touch"), 0o600)

	for name, tamper := range map[string]func(){
		"edited": func() { os.WriteFile(path, []byte("edited"), 0o600) },
		"same size, other bytes": func() {
			os.WriteFile(path, randomBytes(len(data)), 0o600)
		},
		"deleted":           func() { os.Remove(path) },
		"replaced by link":  func() { os.Remove(path); os.Symlink(outside, path) },
		"replaced by a dir": func() { os.Remove(path); os.Mkdir(path, 0o700) },
	} {
		tamper()
		if name == "replaced by a dir" {
			// rename cannot replace a directory: the repeat fails, nothing else changes.
			id := p.begin(sid, len(data), `,"filename":"notes.txt"`)
			p.chunk(id, 0, data)
			_, err := p.call("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id))
			wantCode(t, err, -32603)
			os.Remove(path)
			continue
		}
		again := p.upload(sid, "notes.txt", data)
		if again["deduplicated"] != true {
			t.Errorf("%s: repeat = %v", name, again)
		}
		fi, err := os.Lstat(path)
		got, _ := os.ReadFile(path)
		if err != nil || !fi.Mode().IsRegular() || !bytes.Equal(got, data) {
			t.Errorf("%s: after the repeat the file is %v, %d bytes, %v", name, fi.Mode(), len(got), err)
		}
	}
	if got, _ := os.ReadFile(outside); string(got) != "do not touch" {
		t.Errorf("the link's target was written: %q", got)
	}
}

func TestSymlinkAttacksOnTheUploadsDirectoryAndTheTarget(t *testing.T) {
	h := startServer(t, Config{})
	p := h.peer(t, "")
	sid, ws := workspaceOf(t, p, `{"agentAlias":"default"}`)
	outsideDir := t.TempDir()
	if err := os.Symlink(outsideDir, filepath.Join(ws, "uploads")); err != nil {
		t.Fatal(err)
	}
	data := []byte("payload")
	_, err := p.call("file/attach", fmt.Sprintf(`{"session_id":%q,"files":[{"filename":"x.txt","data_b64":%q}]}`, sid, b64(data)))
	wantCode(t, err, -32603)
	if entries, _ := os.ReadDir(outsideDir); len(entries) != 0 {
		t.Fatalf("the link's target dir got %d entries", len(entries))
	}
	// A link to a directory inside the workspace is refused just the same.
	os.Remove(filepath.Join(ws, "uploads"))
	os.Mkdir(filepath.Join(ws, "elsewhere"), 0o700)
	os.Symlink("elsewhere", filepath.Join(ws, "uploads"))
	_, err = p.call("file/attach", fmt.Sprintf(`{"session_id":%q,"files":[{"filename":"x.txt","data_b64":%q}]}`, sid, b64(data)))
	wantCode(t, err, -32603)
	os.Remove(filepath.Join(ws, "uploads"))

	// A link planted at the target name is replaced, never followed.
	os.Mkdir(filepath.Join(ws, "uploads"), 0o700)
	victim := filepath.Join(outsideDir, "victim")
	os.WriteFile(victim, []byte("original"), 0o600)
	target := filepath.Join(ws, "uploads", sumHex(data)+".txt")
	os.Symlink(victim, target)
	f := p.upload(sid, "x.txt", data)
	if got, _ := os.ReadFile(victim); string(got) != "original" {
		t.Errorf("the planted link was followed: victim holds %q", got)
	}
	fi, err := os.Lstat(target)
	got, _ := os.ReadFile(target)
	if err != nil || !fi.Mode().IsRegular() || !bytes.Equal(got, data) || f["deduplicated"] != false {
		t.Errorf("target: %v, %q, %v; entry %v", fi.Mode(), got, err, f)
	}
}

func TestUploadMethodsAreLocalOnly(t *testing.T) {
	pairings, _ := auth.OpenPairings("")
	token, _ := pairings.Create("")
	h := startServer(t, Config{Pairings: pairings})
	sid := h.peer(t, "").newSession("")
	c := h.remote(t)
	// A remote peer is its token, never its uid (here the daemon's own).
	c.send(`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":"bare"}`)
	if e, _ := c.recv()["error"].(map[string]any); e["code"] != float64(-32010) {
		t.Fatalf("remote initialize without a token: %v, want -32010", e)
	}
	c.send(`{"jsonrpc":"2.0","method":"initialize","params":{"authToken":"` + token + `"},"id":"init"}`)
	if m := c.recv(); m["result"] == nil {
		t.Fatalf("remote initialize with a token: %v", m)
	}
	for i, tt := range []struct{ method, params string }{
		{"file/upload/begin", fmt.Sprintf(`{"session_id":%q,"size_bytes":1}`, sid)},
		{"file/upload/chunk", `{"upload_id":"x","offset":0,"data_b64":""}`},
		{"file/upload/commit", `{"upload_id":"x"}`},
	} {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s,"id":%d}`, tt.method, tt.params, i))
		m := c.recv()
		if e, _ := m["error"].(map[string]any); e["code"] != float64(-32012) {
			t.Errorf("%s over a remote connection: %v, want -32012", tt.method, m)
		}
	}
	// file/attach carries its file in one frame and is served remotely too.
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"file/attach","params":{"session_id":%q,"files":[{"data_b64":"YQ=="}]},"id":9}`, sid))
	if m := c.recv(); m["result"] == nil {
		t.Errorf("file/attach over a remote connection: %v", m)
	}
}

// remote serves one in-memory connection marked Remote, as the WSS transport does.
func (h *harness) remote(t *testing.T) *client {
	t.Helper()
	cli, srv := net.Pipe()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.srv.ServeStream(srv, Peer{Label: "wss:test", UID: os.Getuid(), PID: -1, Remote: true})
	}()
	t.Cleanup(func() { cli.Close(); wg.Wait() })
	return &client{t: t, conn: cli, r: bufio.NewReader(cli)}
}

func TestPromptAttachmentsAppendTheirMarkers(t *testing.T) {
	h := startServer(t, Config{})
	p := h.peer(t, "")
	sid := p.newSession("")
	img := p.upload(sid, "cat.jpg", []byte("jpeg bytes"))
	doc := p.must("file/attach", fmt.Sprintf(`{"session_id":%q,"files":[{"filename":"plan.md","data_b64":%q}]}`, sid, b64([]byte("# plan"))))["files"].([]any)[0].(map[string]any)
	delete(doc, "_n")
	entry, _ := json.Marshal(doc)
	res := p.must("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":"look","attachments":[{"ref_id":%q},%s]}`, sid, img["ref_id"], entry))
	text := res["text"].(string)
	for _, want := range []string{"look", img["marker"].(string), doc["marker"].(string)} {
		if !strings.Contains(text, want) {
			t.Errorf("reply %q lacks %q", text, want)
		}
	}
	_, err := p.call("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":"x","attachments":[{"ref_id":"sha256:%s"}]}`, sid, strings.Repeat("0", 64)))
	wantReason(t, err, "unknown_upload")
	// Another session does not see this one's uploads.
	other := p.newSession(`{"agentAlias":"default","keep_siblings":true}`)
	_, err = p.call("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":"x","attachments":[{"ref_id":%q}]}`, other, img["ref_id"]))
	wantReason(t, err, "unknown_upload")
}

// benchServer is startServerWith for benchmarks: a real Server on a real socket.
func benchServer(b *testing.B) (*Server, string) {
	dir := b.TempDir()
	addr := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", addr)
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	catalog, err := session.BuildCatalog(config.Default(), dir, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	sessions := session.NewManager(catalog, session.Options{Logger: log, Store: st})
	srv := NewServer(Config{DaemonUID: os.Getuid(), Sessions: sessions, Store: st, Logger: log})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { srv.ServeStream(nc, Peer{Label: "bench", UID: os.Getuid(), PID: -1}) })
		}
	})
	b.Cleanup(func() {
		ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sessions.Shutdown(ctx)
		srv.Shutdown(ctx)
		wg.Wait()
		st.Close()
	})
	return srv, addr
}

// lineClient is a sequential NDJSON client for benchmarks.
type lineClient struct {
	b    *testing.B
	conn net.Conn
	r    *bufio.Reader
	next int
}

func dialLines(b *testing.B, addr string) *lineClient {
	conn, err := net.Dial("unix", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	c := &lineClient{b: b, conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
	c.call("initialize", `{"protocolVersion":1}`)
	return c
}

func (c *lineClient) call(method, params string) map[string]any {
	c.next++
	line := make([]byte, 0, len(params)+96)
	line = fmt.Appendf(line, `{"jsonrpc":"2.0","method":%q,"id":%d,"params":`, method, c.next)
	line = append(append(line, params...), "}\n"...)
	if _, err := c.conn.Write(line); err != nil {
		c.b.Fatal(err)
	}
	for {
		resp, err := c.r.ReadBytes('\n')
		if err != nil {
			c.b.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(resp, &m); err != nil {
			c.b.Fatal(err)
		}
		if m["id"] == float64(c.next) {
			if m["error"] != nil {
				c.b.Fatalf("%s: %v", method, m["error"])
			}
			return m["result"].(map[string]any)
		}
	}
}

func (c *lineClient) upload(sid string, data []byte) {
	id := c.call("file/upload/begin", fmt.Sprintf(`{"session_id":%q,"size_bytes":%d,"sha256":%q}`, sid, len(data), sumHex(data)))["upload_id"].(string)
	enc := make([]byte, base64.StdEncoding.EncodedLen(upload.ChunkBytes))
	for off := 0; off < len(data); off += upload.ChunkBytes {
		chunk := data[off:min(off+upload.ChunkBytes, len(data))]
		n := base64.StdEncoding.EncodedLen(len(chunk))
		base64.StdEncoding.Encode(enc, chunk)
		c.call("file/upload/chunk", fmt.Sprintf(`{"upload_id":%q,"offset":%d,"data_b64":"%s"}`, id, off, enc[:n]))
	}
	c.call("file/upload/commit", fmt.Sprintf(`{"upload_id":%q}`, id))
}

// BenchmarkUpload10MB: one 10 MB file through begin, 1 MiB chunks and commit over
// a real socket, new bytes each iteration (nothing deduplicated), fsync included.
func BenchmarkUpload10MB(b *testing.B) {
	_, addr := benchServer(b)
	c := dialLines(b, addr)
	sid := c.call("session/new", `{"agentAlias":"default"}`)["sessionId"].(string)
	data := randomBytes(10_000_000)
	b.SetBytes(int64(len(data)))
	for i := 0; b.Loop(); i++ {
		data[0], data[1], data[2], data[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
		c.upload(sid, data)
	}
}

// BenchmarkStaged28: 28 uploads of 9 MiB fully sent and staged at once over 7
// connections (252 MiB of the 256 MiB budget); reports the process's RSS.
func BenchmarkStaged28(b *testing.B) {
	srv, addr := benchServer(b)
	var clients []*lineClient
	for range 7 {
		clients = append(clients, dialLines(b, addr))
	}
	sid := clients[0].call("session/new", `{"agentAlias":"default"}`)["sessionId"].(string)
	data := randomBytes(9 << 20)
	enc := base64.StdEncoding.EncodeToString(data[:upload.ChunkBytes])
	var peak, settled, heap int64
	for b.Loop() {
		for i := range 28 {
			c := clients[i/4]
			id := c.call("file/upload/begin", fmt.Sprintf(`{"session_id":%q,"size_bytes":%d}`, sid, len(data)))["upload_id"].(string)
			for off := 0; off < len(data); off += upload.ChunkBytes {
				c.call("file/upload/chunk", fmt.Sprintf(`{"upload_id":%q,"offset":%d,"data_b64":"%s"}`, id, off, enc))
			}
		}
		peak = max(peak, rssBytes())
		debug.FreeOSMemory() // a GC, and the freed pages back to the OS
		settled = max(settled, rssBytes())
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = max(heap, int64(ms.HeapInuse))
		if n, _ := srv.uploads.Staged(); n != 28 {
			b.Fatalf("%d staged", n)
		}
		srv.mu.Lock()
		for c := range srv.conns {
			srv.uploads.Discard(c)
		}
		srv.mu.Unlock()
	}
	// peak: RSS with the garbage of the chunk frames not yet collected (GOGC lets
	// the heap reach twice the live data); settled: after a GC returned it; heap:
	// the live heap (on unix the staged bytes are mapped memory, outside it).
	b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
	b.ReportMetric(float64(settled)/(1<<20), "settled-rss-MiB")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
}

// rssBytes is the resident set size of this process (Linux), else the Go heap in use.
func rssBytes() int64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.Lines(string(b)) {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				var kb int64
				fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
				return kb << 10
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

func TestShutdownSaysWhichStagedUploadsItDiscards(t *testing.T) {
	logs := &lockedBuffer{}
	h := startServer(t, Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	p := h.peer(t, "")
	sid := p.newSession("")
	p.begin(sid, 10, "")
	p.begin(sid, 20, "")
	h.stop(t)
	out := logs.String()
	if !strings.Contains(out, "shutting down with uploads staged") || !strings.Contains(out, "uploads=2") {
		t.Fatalf("the shutdown log does not name the 2 staged uploads:\n%s", out)
	}
}
