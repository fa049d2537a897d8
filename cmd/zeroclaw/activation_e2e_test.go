//go:build linux

package main

import (
	"crypto/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/harness"
)

// The socket activation tests run the daemon as the units in docs/systemd run it:
// the test plays systemd's part (it owns the listening socket, passes it on, and
// starts the service again once it has exited), and systemd-socket-activate (from
// Debian's systemd package) execs the daemon at the first connection, with
// LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES set as systemd sets them.

// unitValue returns the value of key in a unit file of docs/systemd.
func unitValue(t *testing.T, unit, key string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "systemd", unit))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+"="); ok {
			return v
		}
	}
	t.Fatalf("%s has no %s=", unit, key)
	return ""
}

// notifySocket is a datagram socket standing in for systemd's NOTIFY_SOCKET.
type notifySocket struct {
	t    *testing.T
	conn *net.UnixConn
	addr string
}

func newNotifySocket(t *testing.T, addr string) *notifySocket {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &notifySocket{t: t, conn: c, addr: addr}
}

// next returns the next message, waiting at most 30 s.
func (n *notifySocket) next() string {
	n.t.Helper()
	buf := make([]byte, 4096)
	n.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	k, err := n.conn.Read(buf)
	if err != nil {
		n.t.Fatalf("no sd_notify message: %v", err)
	}
	return string(buf[:k])
}

// socketUnit is the test's zeroclaw.socket: a listening socket at the unit's
// ListenStream (with %h the test's home) and its mode, kept across daemon runs.
func socketUnit(t *testing.T, h string) (path string, f *os.File) {
	t.Helper()
	path = strings.ReplaceAll(unitValue(t, "zeroclaw.socket", "ListenStream"), "%h", h)
	dirMode, _ := strconv.ParseUint(unitValue(t, "zeroclaw.socket", "DirectoryMode"), 8, 32)
	sockMode, _ := strconv.ParseUint(unitValue(t, "zeroclaw.socket", "SocketMode"), 8, 32)
	if err := os.MkdirAll(filepath.Dir(path), os.FileMode(dirMode)); err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(path, os.FileMode(sockMode)); err != nil {
		t.Fatal(err)
	}
	f, err = ln.File()
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	t.Cleanup(func() { f.Close() })
	return path, f
}

// activated is one start of zeroclaw.service under systemd-socket-activate.
type activated struct {
	proc   *harness.Proc
	stderr *syncBuffer
}

// activate starts systemd-socket-activate with ln passed on as fd 3 (as systemd
// passes a socket unit's socket), the unit's ExecStart and env as -E settings. It
// execs the daemon once a connection arrives.
func activate(t *testing.T, h string, ln *os.File, env ...string) *activated {
	t.Helper()
	exec1 := strings.Fields(unitValue(t, "zeroclaw.service", "ExecStart"))
	args := []string{"--fdname=" + unitValue(t, "zeroclaw.socket", "FileDescriptorName")}
	for _, kv := range env {
		args = append(args, "-E", kv)
	}
	args = append(append(args, binary), exec1[1:]...)
	// LISTEN_PID must name systemd-socket-activate itself: the shell execs it.
	cmd := exec.Command("sh", append([]string{"-c", `export LISTEN_PID=$$ LISTEN_FDS=1; exec systemd-socket-activate "$@"`, "sh"}, args...)...)
	cmd.Env = command(h).Env
	cmd.ExtraFiles = []*os.File{ln}
	a := &activated{stderr: &syncBuffer{}}
	a.proc = harness.Start(t, "systemd-socket-activate and daemon", cmd, &a.stderr.Log)
	return a
}

func (a *activated) wait(t *testing.T) error {
	t.Helper()
	return a.proc.Wait(30 * time.Second)
}

func TestSocketActivatedEphemeralDaemonExitsWhenIdleAndTheNextConnectStartsItAgain(t *testing.T) {
	if _, err := exec.LookPath("systemd-socket-activate"); err != nil {
		t.Fatal("systemd-socket-activate is needed (Debian package systemd; .ci/run installs it)")
	}
	h := home(t)
	sock, ln := socketUnit(t, h)
	notify := newNotifySocket(t, "@zc-notify-"+rand.Text())
	first := activate(t, h, ln, "NOTIFY_SOCKET="+notify.addr)

	c := dial(t, sock) // the connection that starts the service
	res := c.initialize()
	if got := notify.next(); got != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", got)
	}
	if st := c.call(`{"jsonrpc":"2.0","method":"status","id":2}`)["result"].(map[string]any); st["endpoint"] != sock {
		t.Fatalf("status endpoint %v, want the inherited %s", st["endpoint"], sock)
	}
	// It holds the endpoint's lock: a second daemon started by hand refuses.
	if _, errOut, err := run(t, command(h, "daemon")); exitCode(err) != 1 || !strings.Contains(errOut, "already serving at "+sock) {
		t.Fatalf("a second daemon: exit %v, %s", err, errOut)
	}
	c.conn.Close()
	if got := notify.next(); got != "STOPPING=1" {
		t.Fatalf("notification at exit %q, want STOPPING=1", got)
	}
	if err := first.wait(t); err != nil {
		t.Fatalf("the ephemeral daemon's exit: %v\n%s", err, first.stderr.String())
	}
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("the daemon removed the socket it did not create: %v", err)
	}

	// systemd starts the service again at the next connection; so does the test.
	second := activate(t, h, ln)
	c = dial(t, sock)
	again := c.initialize()
	if again["instanceId"] == res["instanceId"] || again["serverPid"] == res["serverPid"] {
		t.Fatalf("the second start answered like the first: %v, %v", res, again)
	}
	c.conn.Close()
	if err := second.wait(t); err != nil {
		t.Fatalf("the second run's exit: %v", err)
	}
}

// inherit runs `zeroclaw daemon` with f as fd 3 and LISTEN_PID (this daemon's pid
// when pid is "", else pid) and LISTEN_FDS=1.
func inherit(t *testing.T, h string, f *os.File, pid string, env ...string) *daemon {
	t.Helper()
	if pid == "" {
		pid = "$$"
	}
	cmd := exec.Command("sh", "-c", `export LISTEN_PID=`+pid+` LISTEN_FDS=1 LISTEN_FDNAMES=zeroclaw; exec "$@"`, "sh", binary, "daemon")
	cmd.Env = append(command(h).Env, env...)
	cmd.ExtraFiles = []*os.File{f}
	return startProcess(t, h, cmd)
}

func TestAnInheritedFdThatIsNotAListeningUnixStreamSocketIsAnError(t *testing.T) {
	dir := t.TempDir()
	gram, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "g"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer gram.Close()
	tcp, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	connected := os.NewFile(uintptr(pair[0]), "pair")
	defer connected.Close()
	defer syscall.Close(pair[1])
	file, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	gramFile, _ := gram.File()
	tcpFile, _ := tcp.File()
	for _, tc := range []struct {
		name string
		f    *os.File
		says string
	}{
		{"a file", file, "is not a socket"},
		{"a datagram socket", gramFile, "is a Unix datagram socket, not a stream socket"},
		{"a TCP socket", tcpFile, "is not a Unix socket"},
		{"a connected socket", connected, "is a Unix stream socket that is not listening"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := home(t)
			d := inherit(t, h, tc.f, "")
			err := d.wait(30 * time.Second)
			msg := d.stderr.String()
			if exitCode(err) != 1 || !strings.Contains(msg, `socket activation: inherited fd 3 ("zeroclaw") `+tc.says) {
				t.Fatalf("exit %v, stderr:\n%s", err, msg)
			}
			if _, err := os.Lstat(d.socket); err == nil {
				t.Fatal("the daemon bound its own socket instead")
			}
		})
	}
}

func TestListenPIDOfAnotherProcessIsIgnoredAndTheDaemonBindsAsUsual(t *testing.T) {
	h := home(t)
	writeConfig(t, h, "[agents.default]\nautonomy = \"full\"\n")
	elsewhere := filepath.Join(t.TempDir(), "other.sock")
	other, err := net.ListenUnix("unix", &net.UnixAddr{Name: elsewhere, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	f, _ := other.File()
	defer f.Close()
	notify := newNotifySocket(t, filepath.Join(t.TempDir(), "notify"))
	d := inherit(t, h, f, "1", "NOTIFY_SOCKET="+notify.addr)
	if got := notify.next(); got != "READY=1" {
		t.Fatalf("notification %q", got)
	}
	// READY=1 came once serving: the daemon's own socket answers at once.
	c := dial(t, d.socket)
	c.initialize()
	// Its children inherit none of LISTEN_* and NOTIFY_SOCKET.
	c.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default","sessionId":"env"},"id":2}`)
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"env","prompt":"/tool shell {\"command\":\"env\"}"},"id":3}`)
	out := waitUpdate(c, "tool_result")["rawOutput"].(string)
	if !strings.Contains(out, "HOME=") || strings.Contains(out, "LISTEN_") || strings.Contains(out, "NOTIFY_SOCKET") {
		t.Fatalf("the shell tool's environment:\n%s", out)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if got := notify.next(); got != "STOPPING=1" {
		t.Fatalf("notification at shutdown %q", got)
	}
	if err := d.wait(20 * time.Second); err != nil {
		t.Fatalf("exit: %v", err)
	}
	// The socket it created is removed; the one it ignored is left alone.
	if _, err := os.Lstat(d.socket); err == nil {
		t.Fatal("the daemon left its own socket behind")
	}
	if _, err := os.Lstat(elsewhere); err != nil {
		t.Fatalf("the ignored socket: %v", err)
	}
}

// TestTheSystemdUnitsVerify runs `systemd-analyze verify` on the unit pair of
// docs/systemd (ExecStart pointed at the test's binary, which must exist): an
// unknown key or a bad value is a warning there, and a failure here.
func TestTheSystemdUnitsVerify(t *testing.T) {
	dir := t.TempDir()
	for _, unit := range []string{"zeroclaw.socket", "zeroclaw.service"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", "systemd", unit))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "ExecStart=%h/.local/bin/zeroclaw ", "ExecStart="+binary+" ")
		if err := os.WriteFile(filepath.Join(dir, unit), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("systemd-analyze", "verify", filepath.Join(dir, "zeroclaw.socket"), filepath.Join(dir, "zeroclaw.service"))
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) != 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
