package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json/v2"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The end-to-end tests drive the real binary like a user: start it, connect over its
// socket, signal it, kill it, and look at the files it leaves.

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zcbin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// zeroclaw and, beside it as `go install ./cmd/...` puts it, zeroclaw-tui (the
	// full-screen client zeroclaw runs).
	binary = filepath.Join(dir, "zeroclaw")
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".", "../zeroclaw-tui")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building zeroclaw and zeroclaw-tui:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// home is a fresh $HOME with short paths, so sockets stay under sun_path.
func home(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "zch")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// daemon is one running zeroclaw daemon process.
type daemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	home   string
	socket string
	stderr *syncBuffer
	exited chan struct{}
	err    error // the exit status, once exited is closed
}

// syncBuffer collects a process's output, written by exec's copying goroutine, and
// lets a test wait for what it expects to be written (await).
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed by the next write; nil until someone awaits
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return s.b.Write(p)
}

// await waits until cond holds for what was written, woken by each write, and
// reports whether it did; it gives up when stop is closed (the process exited) or
// after timeout. It returns the text cond last saw.
func (s *syncBuffer) await(cond func(string) bool, stop <-chan struct{}, timeout time.Duration) (string, bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		text := s.b.String()
		if cond(text) {
			s.mu.Unlock()
			return text, true
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-stop:
			text := s.String() // what the process wrote before it exited
			return text, cond(text)
		case <-timer.C:
			return text, false
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// command returns an unstarted zeroclaw command with HOME set to home and the
// ZEROCLAW_* variables of the test's own environment removed.
func command(home string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZEROCLAW_") && !strings.HasPrefix(kv, "HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+home)
	return cmd
}

// startDaemon starts `zeroclaw daemon args...` with HOME=home plus env, and waits
// until its socket accepts connections.
func startDaemon(t *testing.T, home string, env []string, args ...string) *daemon {
	t.Helper()
	d := launch(t, home, env, args...)
	d.waitReady()
	return d
}

func launch(t *testing.T, home string, env []string, args ...string) *daemon {
	t.Helper()
	cmd := command(home, append([]string{"daemon"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	d := &daemon{t: t, cmd: cmd, home: home, stderr: &syncBuffer{}, exited: make(chan struct{})}
	d.socket = filepath.Join(home, ".zeroclaw", "data", "daemon.sock")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "ZEROCLAW_SOCKET="); ok {
			d.socket = v
		}
	}
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.err = cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.exited
		if t.Failed() {
			t.Logf("daemon stderr:\n%s", d.stderr.String())
		}
	})
	return d
}

func (d *daemon) waitReady() {
	d.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("unix", d.socket)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-d.exited:
			d.t.Fatalf("daemon exited before serving: %v\n%s", d.err, d.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("daemon not accepting at %s: %v\n%s", d.socket, err, d.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wait waits for the daemon to exit, at most within.
func (d *daemon) wait(within time.Duration) error {
	d.t.Helper()
	select {
	case <-d.exited:
		return d.err
	case <-time.After(within):
		d.t.Fatalf("daemon still running after %s", within)
		return nil
	}
}

func (d *daemon) running() bool {
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// rpcConn is a line client on the daemon's socket.
type rpcConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dial(t *testing.T, socket string) *rpcConn {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rpcConn{t: t, conn: c, r: bufio.NewReader(c)}
}

func (c *rpcConn) call(line string) map[string]any {
	c.t.Helper()
	c.send(line)
	return c.recv()
}

func (c *rpcConn) send(line string) {
	c.t.Helper()
	if _, err := c.conn.Write([]byte(line + "\n")); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rpcConn) recv() map[string]any {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("reading: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		c.t.Fatalf("%v in %q", err, line)
	}
	return m
}

func (c *rpcConn) initialize() map[string]any {
	c.t.Helper()
	m := c.call(`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}`)
	res, ok := m["result"].(map[string]any)
	if !ok {
		c.t.Fatalf("initialize: %v", m)
	}
	return res
}

// closed reports whether the daemon closed the connection within the given time.
func (c *rpcConn) closed(within time.Duration) bool {
	c.conn.SetReadDeadline(time.Now().Add(within))
	_, err := c.r.ReadBytes('\n')
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func run(t *testing.T, cmd *exec.Cmd) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		cmd.Process.Kill()
		t.Fatalf("%v did not finish", cmd.Args)
	}
	return o.String(), e.String(), err
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
