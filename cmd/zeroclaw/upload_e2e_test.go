//go:build unix

package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json/v2"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fullfs"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/wait"
)

func TestUploadCommandLandsA10MBFileByteIdentical(t *testing.T) {
	h := home(t)
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	res := c.must("session/new", `{"agentAlias":"default"}`)
	sid, ws := res["sessionId"].(string), res["workspaceDir"].(string)

	big := make([]byte, 10_000_000)
	rand.Read(big)
	dir := t.TempDir()
	bigPath, smallPath := filepath.Join(dir, "big.bin"), filepath.Join(dir, "photo.png")
	os.WriteFile(bigPath, big, 0o600)
	os.WriteFile(smallPath, []byte("not really a png"), 0o600)

	out, errOut, code := zeroclaw(t, h, "upload", "--session", sid, bigPath, smallPath)
	if code != 0 {
		t.Fatalf("upload: exit %d\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdout %q: want one JSON entry per file", out)
	}
	var entries []map[string]any
	for _, l := range lines {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		entries = append(entries, e)
	}
	sum := sha256.Sum256(big)
	want := "uploads/" + hex.EncodeToString(sum[:]) + ".bin"
	if entries[0]["workspace_path"] != want || entries[0]["size_bytes"] != float64(len(big)) || entries[0]["deduplicated"] != false {
		t.Errorf("entry = %v", entries[0])
	}
	got, err := os.ReadFile(filepath.Join(ws, want))
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("on disk: %d bytes, %v; want the 10 MB byte for byte", len(got), err)
	}
	if m, _ := entries[1]["marker"].(string); !strings.HasPrefix(m, "[IMAGE:uploads/") {
		t.Errorf("png entry = %v", entries[1])
	}
	// Not a terminal: the progress is plain lines on stderr, reaching 100%.
	if !strings.Contains(errOut, "big.bin: 10000000/10000000 bytes (100%)") || strings.Contains(errOut, "\x1b[") {
		t.Errorf("stderr = %q", errOut)
	}

	// The entry's ref_id attaches the file to a prompt.
	r := c.must("session/prompt", `{"sessionId":"`+sid+`","prompt":"see","attachments":[{"ref_id":"`+entries[0]["ref_id"].(string)+`"}]}`)
	if !strings.Contains(r["text"].(string), "[Document: big.bin] "+want) {
		t.Errorf("prompt reply %q lacks the marker", r["text"])
	}

	_, errOut, code = zeroclaw(t, h, "upload", "--session", "no-such-session", smallPath)
	if code == 0 || !strings.Contains(errOut, "session not found") {
		t.Errorf("unknown session: exit %d, %q", code, errOut)
	}
}

// docs/protocol.md, "Storage failures": the temporary files of commits a crash
// interrupted are removed at the next start, in the agent's workspace and in any
// workspace a stored session has; nothing else in uploads/ is touched.
func TestTemporaryFilesOfInterruptedUploadsAreRemovedAtStart(t *testing.T) {
	h := home(t)
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	agentWS := c.must("session/new", `{"agentAlias":"default"}`)["workspaceDir"].(string)
	cwd := t.TempDir()
	if got := c.must("session/new", `{"agentAlias":"default","cwd":"`+cwd+`","keep_siblings":true}`)["workspaceDir"]; got != cwd {
		t.Fatalf("workspaceDir = %v, want %s", got, cwd)
	}
	d.cmd.Process.Signal(syscall.SIGKILL)
	d.wait(10 * time.Second)

	leftover := ".zeroclaw-upload-00112233445566778899aabbccddeeff.tmp"
	kept := "0011223344556677889900112233445566778899001122334455667788990011.txt"
	for _, ws := range []string{agentWS, cwd} {
		os.MkdirAll(filepath.Join(ws, "uploads"), 0o700)
		for _, name := range []string{leftover, kept} {
			if err := os.WriteFile(filepath.Join(ws, "uploads", name), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The sweep runs before the daemon serves: once a call is answered, it is done.
	dial(t, startDaemon(t, h, nil).socket).initialize()
	for _, ws := range []string{agentWS, cwd} {
		if _, err := os.Stat(filepath.Join(ws, "uploads", leftover)); !os.IsNotExist(err) {
			t.Errorf("%s: the temporary file is still there (%v)", ws, err)
		}
		if _, err := os.Stat(filepath.Join(ws, "uploads", kept)); err != nil {
			t.Errorf("%s: a stored upload was removed: %v", ws, err)
		}
	}
}

// docs/protocol.md, "Storage failures", on a real full disk (a 2 MiB tmpfs, as root):
// an upload that cannot be stored answers -32603 naming no path and leaves no
// temporary file; what was uploaded before stays; once space returns the same upload
// lands, in the same daemon.
func TestAnUploadOnAFullDiskAnswersAnInternalErrorAndRecovers(t *testing.T) {
	fs := fullfs.Mount(t, 2<<20)
	dir := filepath.Join(fs.Dir, "zc")
	os.MkdirAll(dir, 0o700)
	d := startDaemon(t, home(t), []string{"ZEROCLAW_CONFIG_DIR=" + dir, "ZEROCLAW_SOCKET=" + filepath.Join(dir, "data", "daemon.sock")})
	c := dial(t, d.socket)
	c.initialize()
	res := c.must("session/new", `{"agentAlias":"default"}`)
	sid, ws := res["sessionId"].(string), res["workspaceDir"].(string)
	if !strings.HasPrefix(ws, fs.Dir) {
		t.Fatalf("workspace %s is not on the small file system", ws)
	}
	attach := func(data []byte) (map[string]any, map[string]any) {
		return c.rpc("file/attach", `{"session_id":"`+sid+`","files":[{"filename":"a.bin","data_b64":"`+base64.StdEncoding.EncodeToString(data)+`"}]}`)
	}
	before := make([]byte, 1000)
	rand.Read(before)
	if _, e := attach(before); e != nil {
		t.Fatal(e)
	}

	fs.Fill()
	data := make([]byte, 64<<10)
	rand.Read(data)
	_, e := attach(data)
	wantError(t, e, -32603, "", "")
	if strings.Contains(fmt.Sprint(e), fs.Dir) {
		t.Errorf("the error names a path: %v", e)
	}
	if !fs.Full() {
		t.Fatal("the disk is not full: the test proves nothing")
	}
	entries, _ := os.ReadDir(filepath.Join(ws, "uploads"))
	if len(entries) != 1 {
		t.Errorf("uploads/ holds %d entries on a full disk, want the earlier file alone (no temporary file)", len(entries))
	}
	// A repeat of stored bytes needs no space: it answers.
	if r, e := attach(before); e != nil || r["files"].([]any)[0].(map[string]any)["deduplicated"] != true {
		t.Errorf("repeat on a full disk: %v, %v", r, e)
	}

	fs.Free()
	r, e := attach(data)
	if e != nil {
		t.Fatalf("after space returned: %v", e)
	}
	f := r["files"].([]any)[0].(map[string]any)
	got, err := os.ReadFile(filepath.Join(ws, f["workspace_path"].(string)))
	if err != nil || !bytes.Equal(got, data) || f["deduplicated"] != false {
		t.Fatalf("after space returned: %v, %d bytes on disk, %v", f, len(got), err)
	}
}

// docs/protocol.md, "Storage failures", for a real interrupted upload: the chunks of
// an upload of more than one chunk are written to a temporary file in the workspace
// as they arrive; a daemon killed mid-upload leaves that file, and the next start
// removes it.
func TestAnUploadInterruptedByACrashLeavesNoTemporaryFileOnceRestarted(t *testing.T) {
	h := home(t)
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	res := c.must("session/new", `{"agentAlias":"default"}`)
	sid, ws := res["sessionId"].(string), res["workspaceDir"].(string)
	id := c.must("file/upload/begin", fmt.Sprintf(`{"session_id":%q,"size_bytes":%d}`, sid, 3<<20))["upload_id"].(string)
	chunk := make([]byte, 1<<20)
	rand.Read(chunk)
	c.must("file/upload/chunk", fmt.Sprintf(`{"upload_id":%q,"offset":0,"data_b64":%q}`, id, base64.StdEncoding.EncodeToString(chunk)))

	// The daemon writes the chunk in the background: wait for it (another process).
	temps := func() []int64 {
		entries, _ := os.ReadDir(filepath.Join(ws, "uploads"))
		var sizes []int64
		for _, e := range entries {
			if fi, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".tmp") {
				sizes = append(sizes, fi.Size())
			}
		}
		return sizes
	}
	wait.For(t, "the first chunk written to a temporary file", 10*time.Second, func() bool { // a file of the daemon process
		got := temps()
		return len(got) == 1 && got[0] == int64(len(chunk))
	})
	d.cmd.Process.Signal(syscall.SIGKILL)
	d.wait(10 * time.Second)
	if got := temps(); len(got) != 1 {
		t.Fatalf("after the crash uploads/ holds temporary files %v, want the interrupted one", got)
	}
	// The sweep runs before the daemon serves: once a call is answered, it is done.
	dial(t, startDaemon(t, h, nil).socket).initialize()
	if got := temps(); len(got) != 0 {
		t.Errorf("after the restart uploads/ holds temporary files %v", got)
	}
}
