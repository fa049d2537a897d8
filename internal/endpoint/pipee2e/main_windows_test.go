//go:build windows

package pipee2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json/v2"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
)

// binary is the Windows build of zeroclaw under test: $ZEROCLAW_TEST_BINARY (CI
// builds it on Linux, as Wine has no Go), else built here.
var binary string

// guard bounds every wait: a hang fails the test instead of stalling CI. It is
// never an assertion on speed.
const guard = 30 * time.Second

// roleEnv selects a helper role when the test binary is run as a child process.
const roleEnv = "ZEROCLAW_PIPEE2E_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
	case "block": // a shell tool that runs until its turn is cancelled
		toolRunning()
		// Asleep on a timer, not in an empty select: with no other goroutine the
		// runtime would call an empty select a deadlock and exit at once.
		for {
			time.Sleep(time.Hour)
		}
	case "console":
		os.Exit(consoleHelper())
	default:
		fmt.Fprintln(os.Stderr, "unknown role", os.Getenv(roleEnv))
		os.Exit(2)
	}
	binary = os.Getenv("ZEROCLAW_TEST_BINARY")
	cleanup := func() {}
	if binary == "" {
		dir, err := os.MkdirTemp("", "zcbin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		cleanup = func() { os.RemoveAll(dir) }
		binary = filepath.Join(dir, "zeroclaw.exe")
		build := exec.Command("go", "build", "-o", binary, "github.com/zeroclaw-labs/zeroclaw-go/cmd/zeroclaw")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building zeroclaw:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// tempDir is a fresh directory removed at cleanup. Not t.TempDir: Go's RemoveAll
// deletes with POSIX semantics (FileDispositionInformationEx), which Wine 8.0 lacks,
// and fails there; os.Remove of each entry, deepest first, works on both.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "zce2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var paths []string
		filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			paths = append(paths, p)
			return nil
		})
		for i := len(paths) - 1; i >= 0; i-- {
			if err := os.Remove(paths[i]); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	return dir
}

// configDir is a fresh config dir; its data dir is <dir>\data.
func configDir(t *testing.T, config string) string {
	t.Helper()
	dir := tempDir(t)
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// uniquePipe is a pipe name no other test uses, for ZEROCLAW_SOCKET.
func uniquePipe() string {
	b := make([]byte, 8)
	rand.Read(b)
	return `\\.\pipe\zeroclaw-e2e-` + hex.EncodeToString(b)
}

// command is zeroclaw with args, ZEROCLAW_CONFIG_DIR=dir, the ZEROCLAW_* variables
// of this process removed and env added.
func command(ctx context.Context, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = environ(dir, env)
	return cmd
}

func environ(dir string, env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(strings.ToUpper(kv), "ZEROCLAW_") {
			out = append(out, kv)
		}
	}
	return append(append(out, "ZEROCLAW_CONFIG_DIR="+dir), env...)
}

// run runs zeroclaw to completion with stdin, within guard.
func run(t *testing.T, dir string, env []string, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd := command(ctx, dir, env, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("zeroclaw %s hung for %s; stderr:\n%s", strings.Join(args, " "), guard, e.String())
	}
	return o.String(), e.String(), err
}

// logBuffer collects a process's stderr and wakes whoever waits for a line.
type logBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{})} }

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits until the log holds s, failing once exited closes without it or
// after guard.
func (l *logBuffer) waitFor(t *testing.T, s string, exited <-chan struct{}) {
	t.Helper()
	deadline := time.After(guard)
	for {
		l.mu.Lock()
		found, changed := strings.Contains(l.b.String(), s), l.changed
		l.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-exited:
			if !strings.Contains(l.String(), s) {
				t.Fatalf("exited without logging %q:\n%s", s, l.String())
			}
			return
		case <-deadline:
			t.Fatalf("no %q logged within %s:\n%s", s, guard, l.String())
		}
	}
}

// proc is a started process whose stderr is collected.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *logBuffer
	exited chan struct{}
	err    error // the exit status, once exited is closed
}

func start(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{t: t, cmd: cmd, stderr: newLogBuffer(), exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("%s stderr:\n%s", filepath.Base(cmd.Path), p.stderr.String())
		}
	})
	return p
}

// wait waits for the process to exit, at most guard.
func (p *proc) wait() error {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(guard):
		p.t.Fatalf("still running after %s:\n%s", guard, p.stderr.String())
		return nil
	}
}

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// daemon is a running `zeroclaw daemon`.
type daemon struct {
	*proc
	dir  string // config dir
	pipe string // where it serves
}

// startDaemon starts `zeroclaw daemon args...` and waits for its "serving" log line.
// It does not connect: the first client of a test is the test's own.
func startDaemon(t *testing.T, dir string, env []string, args ...string) *daemon {
	t.Helper()
	d := launchDaemon(t, dir, env, args...)
	d.waitServing()
	return d
}

func launchDaemon(t *testing.T, dir string, env []string, args ...string) *daemon {
	t.Helper()
	p := start(t, command(context.Background(), dir, env, append([]string{"daemon"}, args...)...))
	return &daemon{proc: p, dir: dir, pipe: pipeFor(dir, env)}
}

func (d *daemon) waitServing() {
	d.t.Helper()
	d.stderr.waitFor(d.t, "msg=serving endpoint="+d.pipe+" ", d.exited)
	if !d.running() {
		d.t.Fatalf("the daemon exited: %v\n%s", d.err, d.stderr.String())
	}
}

// pipeFor is the pipe a daemon with config dir dir and env serves.
func pipeFor(dir string, env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "ZEROCLAW_SOCKET="); ok {
			return v
		}
	}
	return defaultPipe(filepath.Join(dir, "data"))
}

// rawConn is a byte-level client of the pipe: no client package, no framing help.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dialRaw(t *testing.T, pipe string) *rawConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	c, err := endpoint.Dial(ctx, pipe)
	if err != nil {
		t.Fatalf("dial %s: %v", pipe, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, conn: c, r: bufio.NewReader(c)}
}

func (c *rawConn) write(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, s); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// recv reads one frame, within guard.
func (c *rawConn) recv() map[string]any {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(guard))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("read a frame: %v (got %q)", err, line)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		c.t.Fatalf("frame %q: %v", line, err)
	}
	return m
}

// recvID reads frames until the response with id, skipping notifications.
func (c *rawConn) recvID(id any) map[string]any {
	c.t.Helper()
	for {
		m := c.recv()
		if _, isRequest := m["method"]; !isRequest && m["id"] == id {
			return m
		}
		if _, isRequest := m["method"]; !isRequest {
			c.t.Fatalf("response %v while waiting for id %v", m, id)
		}
	}
}

// recvAll reads until the daemon closes the connection and returns the responses
// by id.
func (c *rawConn) recvAll() map[any]map[string]any {
	c.t.Helper()
	out := map[any]map[string]any{}
	c.conn.SetReadDeadline(time.Now().Add(guard))
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return out
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			c.t.Fatalf("frame %q: %v", line, err)
		}
		if _, isRequest := m["method"]; !isRequest {
			out[m["id"]] = m
		}
	}
}

func (c *rawConn) call(line string, id any) map[string]any {
	c.t.Helper()
	c.write(line + "\n")
	return c.recvID(id)
}

func (c *rawConn) initialize() map[string]any {
	c.t.Helper()
	m := c.call(`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":"init"}`, "init")
	if m["result"] == nil {
		c.t.Fatalf("initialize: %v", m)
	}
	return m["result"].(map[string]any)
}

// errorCode is the code of a response's error, or 0.
func errorCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return int(code)
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(*exec.ExitError); ok {
		return e.ExitCode()
	}
	return -1
}
