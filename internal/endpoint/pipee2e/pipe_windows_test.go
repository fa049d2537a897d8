//go:build windows

package pipee2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
)

// defaultPipe is the pipe of docs/protocol.md, "The daemon process", for a data dir,
// computed here from the doc, not by the code under test: \\.\pipe\zeroclaw-<first 16
// hex of sha256(data dir)>.
func defaultPipe(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	return `\\.\pipe\zeroclaw-` + hex.EncodeToString(sum[:])[:16]
}

// pipeExists reports whether anything serves the pipe name.
func pipeExists(t *testing.T, pipe string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	c, err := endpoint.Dial(ctx, pipe)
	if err == nil {
		c.Close()
		return true
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("dial %s: %v", pipe, err)
	}
	return false
}

func TestDefaultPipeIsTheHashOfTheDataDir(t *testing.T) {
	dir := configDir(t, "")
	d := startDaemon(t, dir, nil) // waits for "serving endpoint=<the hash name>"
	want := defaultPipe(filepath.Join(dir, "data"))
	c := dialRaw(t, want)
	c.initialize()
	st := c.call(`{"jsonrpc":"2.0","method":"status","id":2}`, float64(2))["result"].(map[string]any)
	if st["endpoint"] != want || st["dataDir"] != filepath.Join(dir, "data") {
		t.Fatalf("status = %v, want endpoint %s", st, want)
	}
	out, stderr, err := run(t, dir, nil, "", "status")
	if err != nil || !strings.Contains(out, "endpoint:     "+want+"\n") {
		t.Fatalf("zeroclaw status: %v\n%s%s", err, out, stderr)
	}
	if !strings.Contains(d.stderr.String(), `msg="connection opened" peer=pipe:local`) {
		t.Errorf("no connection line with the peer label pipe:local:\n%s", d.stderr.String())
	}
}

// ZEROCLAW_SOCKET names the pipe; the default name is then not served. The
// Windows client reaches the daemon there: status, rpc and a piped chat.
func TestSocketVariableNamesThePipe(t *testing.T) {
	dir := configDir(t, "")
	pipe := uniquePipe()
	env := []string{"ZEROCLAW_SOCKET=" + pipe}
	startDaemon(t, dir, env)
	if pipeExists(t, defaultPipe(filepath.Join(dir, "data"))) {
		t.Fatal("the default pipe is served too")
	}
	out, stderr, err := run(t, dir, env, "", "status")
	if err != nil || !strings.Contains(out, "endpoint:     "+pipe+"\n") {
		t.Fatalf("zeroclaw status: %v\n%s%s", err, out, stderr)
	}
	out, stderr, err = run(t, dir, env, "", "rpc", "status")
	if err != nil || !strings.Contains(out, `"endpoint": "`+strings.ReplaceAll(pipe, `\`, `\\`)+`"`) {
		t.Fatalf("zeroclaw rpc status: %v\n%s%s", err, out, stderr)
	}
	out, stderr, err = run(t, dir, env, "", "rpc", "no/such/method")
	if exitCode(err) != 1 || !strings.Contains(stderr, "-32601") {
		t.Fatalf("zeroclaw rpc of an unknown method: exit %d\n%s%s", exitCode(err), out, stderr)
	}
	out, stderr, err = run(t, dir, env, "hello over the pipe\n", "chat")
	if err != nil || out != "echo: hello over the pipe\n" {
		t.Fatalf("piped zeroclaw chat: %v, stdout %q\n%s", err, out, stderr)
	}
}

// The first client of a new daemon is answered: before the listener's fix it
// landed on a pipe instance nobody read, and waited out its deadline.
func TestFirstClientOfANewDaemonIsAnswered(t *testing.T) {
	t.Run("zeroclaw status", func(t *testing.T) {
		dir := configDir(t, "")
		startDaemon(t, dir, nil)
		began := time.Now()
		out, stderr, err := run(t, dir, nil, "", "status")
		if err != nil || !strings.Contains(out, "connections:  1\n") {
			t.Fatalf("the first zeroclaw status: %v\n%s%s", err, out, stderr)
		}
		t.Logf("first status answered in %s (the process start included)", time.Since(began).Round(time.Millisecond))
	})
	t.Run("raw", func(t *testing.T) {
		d := startDaemon(t, configDir(t, ""), nil)
		began := time.Now()
		c := dialRaw(t, d.pipe)
		if res := c.initialize(); res["serverVersion"] != "0.8.6" {
			t.Fatalf("initialize = %v", res)
		}
		t.Logf("first initialize answered in %s", time.Since(began).Round(time.Microsecond))
	})
}

// Byte-level framing and envelopes over the pipe (docs/protocol.md,
// "Transport and framing" and "Handshake").
func TestFramesAndEnvelopesOverThePipe(t *testing.T) {
	d := startDaemon(t, configDir(t, ""), nil)

	c := dialRaw(t, d.pipe)
	// Before initialize, a known method is refused with -32010.
	if m := c.call(`{"jsonrpc":"2.0","method":"status","id":1}`, float64(1)); errorCode(m) != -32010 {
		t.Fatalf("status before initialize = %v, want -32010", m)
	}
	// One frame split across many writes, one byte at a time at the start.
	init := `{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":2}` + "\n"
	for i := range 10 {
		c.write(init[i : i+1])
	}
	c.write(init[10:40])
	c.write(init[40:])
	if m := c.recvID(float64(2)); m["result"] == nil {
		t.Fatalf("split initialize = %v", m)
	}
	// Three frames coalesced in one write, an empty line among them.
	c.write(`{"jsonrpc":"2.0","method":"status","id":3}` + "\n\n" +
		`{"jsonrpc":"2.0","method":"status","id":4}` + "\n" + `{"jsonrpc":"2.0","method":"status","id":5}` + "\n")
	seen := map[any]bool{}
	for range 3 {
		m := c.recv()
		if m["result"] == nil {
			t.Fatalf("coalesced status = %v", m)
		}
		seen[m["id"]] = true
	}
	if !seen[float64(3)] || !seen[float64(4)] || !seen[float64(5)] {
		t.Fatalf("answered ids %v, want 3, 4 and 5", seen)
	}
	// Invalid JSON: -32700 with id null.
	if m := c.call(`{"jsonrpc":"2.0","method":`, nil); errorCode(m) != -32700 {
		t.Fatalf("invalid JSON = %v, want -32700", m)
	}
	// A malformed request keeps its id; a direction-ambiguous frame gets id null.
	if m := c.call(`{"jsonrpc":"2.0","method":"status","params":null,"id":6}`, float64(6)); errorCode(m) != -32600 {
		t.Fatalf("params null = %v, want -32600", m)
	}
	if m := c.call(`[{"jsonrpc":"2.0","method":"status","id":7}]`, nil); errorCode(m) != -32600 {
		t.Fatalf("a batch = %v, want -32600", m)
	}
	// A malformed response (result and error both) is dropped without an answer:
	// the next frame on the connection is the answer to the call after it.
	c.write(`{"jsonrpc":"2.0","id":"zc-out-0","result":1,"error":{"code":1,"message":"x"}}` + "\n")
	if m := c.call(`{"jsonrpc":"2.0","method":"status","id":8}`, float64(8)); m["result"] == nil {
		t.Fatalf("status after a malformed response = %v", m)
	}
	// A frame whose newline comes in a write of its own.
	c.write(`{"jsonrpc":"2.0","method":"status","id":9}`)
	c.write("\n")
	if m := c.recvID(float64(9)); m["result"] == nil {
		t.Fatalf("status in two writes = %v", m)
	}
	if strings.Contains(d.stderr.String(), "zc-out-0") || strings.Contains(d.stderr.String(), "protocolVersion") {
		t.Errorf("frame contents in the log:\n%s", d.stderr.String())
	}
}

func TestASecondDaemonIsRefused(t *testing.T) {
	dir := configDir(t, "")
	d := startDaemon(t, dir, nil)
	_, stderr, err := run(t, dir, nil, "", "daemon")
	if exitCode(err) != 1 || !strings.Contains(stderr, "already serving at "+d.pipe) {
		t.Fatalf("second daemon: exit %d, stderr %q", exitCode(err), stderr)
	}
	// Another data dir on the same ZEROCLAW_SOCKET is refused the same way.
	_, stderr, err = run(t, configDir(t, ""), []string{"ZEROCLAW_SOCKET=" + d.pipe}, "", "daemon")
	if exitCode(err) != 1 || !strings.Contains(stderr, "already serving at "+d.pipe) {
		t.Fatalf("second daemon on the pipe: exit %d, stderr %q", exitCode(err), stderr)
	}
	c := dialRaw(t, d.pipe)
	c.initialize()
	if !d.running() {
		t.Fatal("the first daemon stopped")
	}
}

// --ephemeral: the daemon stays while any client is connected and exits, with
// status 0, EphemeralGrace (1 s) after the last one leaves.
func TestEphemeralDaemonExitsAfterItsLastClient(t *testing.T) {
	d := startDaemon(t, configDir(t, ""), nil, "--ephemeral")
	a := dialRaw(t, d.pipe)
	a.initialize()
	b := dialRaw(t, d.pipe)
	b.initialize()
	a.conn.Close()
	// b is still connected: the daemon must still answer it after a has gone.
	if m := b.call(`{"jsonrpc":"2.0","method":"status","id":2}`, float64(2)); m["result"] == nil {
		t.Fatalf("status = %v", m)
	}
	d.stderr.waitFor(t, `msg="connection closed"`, d.exited)
	if !d.running() {
		t.Fatal("the ephemeral daemon exited with a client connected")
	}
	b.conn.Close()
	left := time.Now()
	if err := d.wait(); err != nil {
		t.Fatalf("ephemeral exit: %v", err)
	}
	waited := time.Since(left)
	t.Logf("exited %s after its last client left", waited.Round(time.Millisecond))
	if waited < time.Second {
		t.Fatalf("exited %s after the last client left, before the 1 s grace", waited)
	}
	if !strings.Contains(d.stderr.String(), "last client left; ephemeral daemon exiting") {
		t.Fatalf("log:\n%s", d.stderr.String())
	}
	if pipeExists(t, d.pipe) {
		t.Fatal("the pipe is still served")
	}
}

// chat with no daemon starts one (ephemeral, detached), is answered at once by it,
// and the daemon leaves after chat does.
func TestChatAutoStartsTheDaemon(t *testing.T) {
	dir := configDir(t, "")
	pipe := defaultPipe(filepath.Join(dir, "data"))
	if pipeExists(t, pipe) {
		t.Fatal("a daemon serves already")
	}
	began := time.Now()
	out, stderr, err := run(t, dir, nil, "hello\n", "chat")
	if err != nil || out != "echo: hello\n" {
		t.Fatalf("piped chat: %v, stdout %q\n%s", err, out, stderr)
	}
	t.Logf("chat with auto-start took %s", time.Since(began).Round(time.Millisecond))
	logPath := filepath.Join(dir, "data", "ephemeral-daemon.log")
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`msg=serving endpoint=(\S+) .* pid=(\d+) ephemeral=true`).FindStringSubmatch(string(log))
	if m == nil || m[1] != pipe {
		t.Fatalf("the auto-started daemon's log does not say it serves %s as an ephemeral daemon:\n%s", pipe, log)
	}
	pid, _ := strconv.Atoi(m[2])
	if code, ok := waitForExit(t, pid); ok && code != 0 {
		t.Fatalf("the auto-started daemon exited with %d", code)
	}
	log, _ = os.ReadFile(logPath)
	if !strings.Contains(string(log), "last client left; ephemeral daemon exiting") || !strings.Contains(string(log), "msg=stopped") {
		t.Fatalf("the auto-started daemon's log:\n%s", log)
	}
	if pipeExists(t, pipe) {
		t.Fatal("the pipe is still served after the daemon exited")
	}
}

// waitForExit waits, at most guard, for process pid to exit and returns its exit
// code; ok is false when the process was gone before it could be opened.
func waitForExit(t *testing.T, pid int) (code uint32, ok bool) {
	t.Helper()
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		if errors.Is(err, windows.ERROR_INVALID_PARAMETER) { // no such process: it exited
			return 0, false
		}
		t.Fatalf("open process %d: %v", pid, err)
	}
	defer windows.CloseHandle(h)
	if ev, err := windows.WaitForSingleObject(h, uint32(guard/time.Millisecond)); err != nil || ev != windows.WAIT_OBJECT_0 {
		t.Fatalf("process %d still running after %s: %v", pid, guard, err)
	}
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		t.Fatal(err)
	}
	return code, true
}
