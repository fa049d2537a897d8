package main

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/wait"
)

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func TestVersion(t *testing.T) {
	out, _, err := run(t, command(home(t), "version"))
	if err != nil || out != "0.8.6\n" {
		t.Fatalf("zeroclaw version = %q, %v", out, err)
	}
}

func TestDaemonCreatesPrivateDirectoriesAndSocket(t *testing.T) {
	h := home(t)
	d := startDaemon(t, h, nil)
	for path, want := range map[string]fs.FileMode{
		filepath.Join(h, ".zeroclaw"):         fs.ModeDir | 0o700,
		filepath.Join(h, ".zeroclaw", "data"): fs.ModeDir | 0o700,
		d.socket:                              fs.ModeSocket | 0o600,
		d.socket + ".lock":                    0o600,
	} {
		if got := mode(t, path); got != want {
			t.Errorf("%s: mode %s, want %s", path, got, want)
		}
	}
}

func TestConfigAndDataDirOverrides(t *testing.T) {
	h := home(t)
	cfg, data := filepath.Join(h, "cfg"), filepath.Join(h, "data2")
	// --config-dir wins over ZEROCLAW_CONFIG_DIR; ZEROCLAW_DATA_DIR wins over <config>/data.
	d := launch(t, h, []string{"ZEROCLAW_CONFIG_DIR=" + filepath.Join(h, "ignored"), "ZEROCLAW_DATA_DIR=" + data},
		"--config-dir", cfg)
	d.socket = filepath.Join(data, "daemon.sock")
	d.waitReady()
	if got := mode(t, cfg); got != fs.ModeDir|0o700 {
		t.Errorf("config dir mode %s", got)
	}
	if _, err := os.Stat(filepath.Join(h, "ignored")); err == nil {
		t.Error("ZEROCLAW_CONFIG_DIR was used although --config-dir was given")
	}
	c := dial(t, d.socket)
	c.initialize()
	st := c.call(`{"jsonrpc":"2.0","method":"status","id":2}`)["result"].(map[string]any)
	if st["dataDir"] != data || st["endpoint"] != d.socket {
		t.Errorf("status dataDir=%v endpoint=%v, want %s and %s", st["dataDir"], st["endpoint"], data, d.socket)
	}
}

func TestZeroclawSocketOverride(t *testing.T) {
	h := home(t)
	sock := filepath.Join(h, "my-zeroclaw.sock")
	d := startDaemon(t, h, []string{"ZEROCLAW_SOCKET=" + sock})
	dial(t, sock).initialize()
	if _, err := os.Stat(filepath.Join(h, ".zeroclaw", "data", "daemon.sock")); err == nil {
		t.Error("default socket created although ZEROCLAW_SOCKET was set")
	}
	if got := mode(t, sock); got != fs.ModeSocket|0o600 {
		t.Errorf("socket mode %s", got)
	}
	_ = d
}

func TestSecondDaemonIsRefusedWhileTheFirstServes(t *testing.T) {
	h := home(t)
	first := startDaemon(t, h, nil)
	_, stderr, err := run(t, command(h, "daemon"))
	if exitCode(err) == 0 {
		t.Fatal("second daemon exited 0")
	}
	want := "already serving at " + first.socket
	if !strings.Contains(stderr, want) {
		t.Fatalf("second daemon said %q, want %q", stderr, want)
	}
	c := dial(t, first.socket) // the first one is unharmed, socket and all
	c.initialize()
	if !first.running() {
		t.Fatal("first daemon died")
	}
}

func TestStaleSocketAfterKill9IsReplaced(t *testing.T) {
	h := home(t)
	d := startDaemon(t, h, nil)
	d.cmd.Process.Signal(syscall.SIGKILL)
	d.wait(10 * time.Second)
	if got := mode(t, d.socket); got.Type() != fs.ModeSocket {
		t.Fatalf("after kill -9 the socket should be left behind, found %s", got)
	}
	if _, err := net.Dial("unix", d.socket); err == nil {
		t.Fatal("stale socket still accepts")
	}
	again := startDaemon(t, h, nil)
	dial(t, again.socket).initialize()
}

func TestRegularFileAtTheSocketPathIsRefusedAndKept(t *testing.T) {
	h := home(t)
	sock := filepath.Join(h, "not-a-socket")
	os.WriteFile(sock, []byte("precious"), 0o600)
	_, stderr, err := run(t, func() *exec.Cmd {
		c := command(h, "daemon")
		c.Env = append(c.Env, "ZEROCLAW_SOCKET="+sock)
		return c
	}())
	if exitCode(err) == 0 || !strings.Contains(stderr, "not a socket") {
		t.Fatalf("exit %d, stderr %q", exitCode(err), stderr)
	}
	if b, _ := os.ReadFile(sock); string(b) != "precious" {
		t.Fatal("the file at the socket path was touched")
	}
}

func TestSignalsShutDownGracefullyAndRemoveTheSocket(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			h := home(t)
			d := startDaemon(t, h, nil)
			c := dial(t, d.socket)
			c.initialize()
			d.cmd.Process.Signal(sig)
			if err := d.wait(15 * time.Second); err != nil {
				t.Fatalf("exit: %v", err)
			}
			if _, err := os.Lstat(d.socket); !os.IsNotExist(err) {
				t.Fatalf("socket still there after %s: %v", sig, err)
			}
			if !c.closed(5 * time.Second) {
				t.Fatal("client connection left open")
			}
			if !strings.Contains(d.stderr.String(), "shutting down") {
				t.Errorf("no shutdown log line:\n%s", d.stderr.String())
			}
		})
	}
}

func TestSocketPathTooLongIsRefusedClearly(t *testing.T) {
	h := home(t)
	long := filepath.Join(h, strings.Repeat("d", 120), "daemon.sock")
	c := command(h, "daemon")
	c.Env = append(c.Env, "ZEROCLAW_SOCKET="+long)
	_, stderr, err := run(t, c)
	if exitCode(err) == 0 || !strings.Contains(stderr, long) || !strings.Contains(stderr, fmt.Sprint(len(long))) {
		t.Fatalf("exit %d, stderr %q: want an error naming the path and its length %d", exitCode(err), stderr, len(long))
	}
}

func TestBadConfigNamesTheFileLineAndKey(t *testing.T) {
	h := home(t)
	dir := filepath.Join(h, ".zeroclaw")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "config.toml"), []byte("# limits\n[rpc]\nmax_local_connections = \"many\"\n"), 0o600)
	_, stderr, err := run(t, command(h, "daemon"))
	path := filepath.Join(dir, "config.toml")
	if exitCode(err) == 0 || !strings.Contains(stderr, path+":3") || !strings.Contains(stderr, "max_local_connections") {
		t.Fatalf("exit %d, stderr %q: want the file, line 3 and the key", exitCode(err), stderr)
	}
}

func TestEachConnectionIsLoggedWithItsPeer(t *testing.T) {
	d := startDaemon(t, home(t), nil)
	c := dial(t, d.socket)
	c.initialize()
	c.conn.Close()
	label := fmt.Sprintf("peer=\"unix:pid=%d,uid=%d\"", os.Getpid(), os.Getuid())
	if log, ok := d.stderr.await(func(log string) bool {
		return strings.Contains(log, `msg="connection opened" `+label) && strings.Contains(log, `msg="connection closed" `+label)
	}, d.exited, 10*time.Second); !ok {
		t.Fatalf("want open and close lines with %s in:\n%s", label, log)
	}
	if strings.Contains(d.stderr.String(), "protocolVersion") {
		t.Error("frame contents leaked into the log")
	}
}

func TestOversizeLineOverTheRealSocket(t *testing.T) {
	d := startDaemon(t, home(t), nil)
	c := dial(t, d.socket)
	c.initialize()
	go c.conn.Write([]byte(`{"jsonrpc":"2.0","method":"status","params":{"p":"` + strings.Repeat("a", 9<<20) + "\"},\"id\":2}\n"))
	m := c.recv()
	e, _ := m["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	if e["code"] != float64(-32600) || data["reason"] != "frame_too_large" || data["limit_bytes"] != float64(8388608) {
		t.Fatalf("got %v", m)
	}
	if !c.closed(10 * time.Second) {
		t.Fatal("connection left open after frame_too_large")
	}
	dial(t, d.socket).initialize() // the daemon itself is fine
}

func TestConnectionLimitFromConfig(t *testing.T) {
	h := home(t)
	os.MkdirAll(filepath.Join(h, ".zeroclaw"), 0o700)
	os.WriteFile(filepath.Join(h, ".zeroclaw", "config.toml"), []byte("[rpc]\nmax_local_connections = 2\n"), 0o600)
	d := startDaemon(t, h, nil)
	a := dial(t, d.socket)
	a.initialize()
	// startDaemon's readiness probe counts until the daemon has seen it close, and
	// on a busy machine the daemon may take it up only after a: wait for its close
	// (the only "connection closed" yet) and for a alone to count.
	if _, ok := d.stderr.await(func(log string) bool { return strings.Contains(log, "connection closed") }, d.exited, 10*time.Second); !ok {
		t.Fatal("the readiness probe's connection was never closed")
	}
	wait.For(t, "status counting one connection", 10*time.Second, func() bool {
		return a.call(`{"jsonrpc":"2.0","method":"status","id":7}`)["result"].(map[string]any)["connections"] == float64(1)
	})
	b := dial(t, d.socket)
	b.initialize()
	c := dial(t, d.socket)
	m := c.recv()
	e, _ := m["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	if e["code"] != float64(-32004) || data["reason"] != "connection_limit" || data["limit"] != float64(2) {
		t.Fatalf("third connection got %v", m)
	}
	if !c.closed(10 * time.Second) {
		t.Fatal("refused connection left open")
	}
}
