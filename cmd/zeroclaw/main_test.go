package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/harness"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/wait"
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
	exited <-chan struct{} // closed once the process exited
	proc   *harness.Proc
}

// syncBuffer collects a process's output and lets a test wait for what it expects
// to be written (await): a harness.Log.
type syncBuffer struct{ harness.Log }

// await waits until cond holds for what was written, woken by each write, and
// reports whether it did; it gives up when stop is closed (the process exited) or
// after timeout. It returns the text cond last saw.
func (s *syncBuffer) await(cond func(string) bool, stop <-chan struct{}, timeout time.Duration) (string, bool) {
	return s.Await(cond, stop, timeout)
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
	d := startProcess(t, home, cmd)
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "ZEROCLAW_SOCKET="); ok {
			d.socket = v
		}
	}
	return d
}

// startProcess starts cmd, a daemon of HOME=home on its default socket, with its
// stderr collected; the test's cleanup kills it.
func startProcess(t *testing.T, home string, cmd *exec.Cmd) *daemon {
	t.Helper()
	d := &daemon{t: t, cmd: cmd, home: home, stderr: &syncBuffer{}}
	d.socket = filepath.Join(home, ".zeroclaw", "data", "daemon.sock")
	d.proc = harness.Start(t, "daemon", cmd, &d.stderr.Log)
	d.exited = d.proc.Exited
	return d
}

func (d *daemon) waitReady() {
	d.t.Helper()
	accepted := false
	wait.For(d.t, "the daemon accepting at "+d.socket, 30*time.Second, func() bool {
		c, err := net.Dial("unix", d.socket)
		if err == nil {
			c.Close()
			accepted = true
		}
		return accepted || !d.running()
	})
	if !accepted {
		d.t.Fatalf("daemon exited before serving: %v\n%s", d.proc.Err(), d.stderr.String())
	}
}

// wait waits for the daemon to exit, at most within.
func (d *daemon) wait(within time.Duration) error {
	d.t.Helper()
	return d.proc.Wait(within)
}

func (d *daemon) running() bool { return d.proc.Running() }

// rpcConn is a line client on the daemon's socket (a harness.Conn); r buffers what
// was read from conn.
type rpcConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	h    *harness.Conn
}

func dial(t *testing.T, socket string) *rpcConn {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	h := harness.NewConn(t, c, 20*time.Second)
	return &rpcConn{t: t, conn: c, r: h.R, h: h}
}

// call sends line and returns the next frame.
func (c *rpcConn) call(line string) map[string]any {
	c.t.Helper()
	return c.h.Call(line)
}

func (c *rpcConn) send(line string) {
	c.t.Helper()
	c.h.Send(line)
}

func (c *rpcConn) recv() map[string]any {
	c.t.Helper()
	return c.h.Recv()
}

func (c *rpcConn) initialize() map[string]any {
	c.t.Helper()
	return c.h.Initialize(1)
}

// closed reports whether the daemon closed the connection within the given time.
func (c *rpcConn) closed(within time.Duration) bool { return c.h.Closed(within) }

func run(t *testing.T, cmd *exec.Cmd) (stdout, stderr string, err error) {
	t.Helper()
	return harness.Run(t, cmd, 60*time.Second)
}

func exitCode(err error) int { return harness.ExitCode(err) }
