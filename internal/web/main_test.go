//go:build unix

package web_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/harness"
)

// The tests run the real programs: TestMain builds zeroclaw once; each test starts a
// daemon (startDaemon) and `zeroclaw web --listen 127.0.0.1:0` (startWeb) on it,
// and drives the web client over HTTP and WebSockets, or in Chromium.

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zcweb")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "zeroclaw")
	build := exec.Command("go", "build", "-o", binary, "../../cmd/zeroclaw")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building zeroclaw:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func cleanEnv(home string) []string {
	env := []string{"HOME=" + home}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZEROCLAW_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return env
}

// stack is one daemon and one zeroclaw web on it, in a HOME of their own.
type stack struct {
	t      testing.TB
	home   string
	sock   string
	daemon *harness.Proc
	web    *harness.Proc
	base   string // http://127.0.0.1:PORT
	token  string
}

// stop sends SIGTERM and waits (at most 10 s, then SIGKILL).
func stop(p *harness.Proc) {
	p.Cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case <-p.Exited:
	case <-timer.C:
		p.Cmd.Process.Kill()
		<-p.Exited
	}
}

func start(t testing.TB, home string, args ...string) *harness.Proc {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = cleanEnv(home)
	p := harness.Start(t, "zeroclaw "+args[0], cmd, nil)
	t.Cleanup(func() { stop(p) })
	return p
}

// newStack starts a daemon with config (config.toml; "" for the defaults) and a
// zeroclaw web on it.
func newStack(t testing.TB, config string) *stack {
	t.Helper()
	home, err := os.MkdirTemp("", "zcw")
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, home: home, sock: filepath.Join(home, ".zeroclaw", "data", "daemon.sock")}
	t.Cleanup(func() { os.RemoveAll(home) })
	writeConfig(t, home, config)
	s.startDaemon()
	s.startWeb()
	return s
}

func writeConfig(t testing.TB, home, config string) {
	t.Helper()
	if config == "" {
		return
	}
	os.MkdirAll(filepath.Join(home, ".zeroclaw"), 0o700)
	if err := os.WriteFile(filepath.Join(home, ".zeroclaw", "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startDaemon starts `zeroclaw daemon` and waits until it serves.
func (s *stack) startDaemon() {
	t := s.t
	t.Helper()
	p := start(t, s.home, "daemon", "--log-level", "warn")
	s.daemon = p
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := net.Dial("unix", s.sock); err == nil {
			c.Close()
			return
		}
		select {
		case <-p.Exited:
			t.Fatalf("the daemon exited: %s", p.Stderr)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not serve at %s: %s", s.sock, p.Stderr)
		}
	}
}

// startWeb starts `zeroclaw web --listen 127.0.0.1:0` and reads the URL it prints.
func (s *stack) startWeb(extra ...string) {
	t := s.t
	t.Helper()
	cmd := exec.Command(binary, append([]string{"web", "--listen", "127.0.0.1:0"}, extra...)...)
	cmd.Env = cleanEnv(s.home)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := harness.Start(t, "zeroclaw web", cmd, nil)
	t.Cleanup(func() { stop(p) })
	s.web = p
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
		// Keep draining, so the program never blocks on its stdout.
		var b [512]byte
		for {
			if _, err := out.Read(b[:]); err != nil {
				return
			}
		}
	}()
	select {
	case line := <-lines:
		i := strings.Index(line, "http://")
		if i < 0 {
			t.Fatalf("zeroclaw web printed %q; stderr: %s", line, p.Stderr)
		}
		u, err := url.Parse(strings.TrimSpace(line[i:]))
		if err != nil {
			t.Fatal(err)
		}
		s.base = "http://" + u.Host
		s.token = strings.TrimPrefix(u.Fragment, "token=")
	case <-time.After(30 * time.Second):
		t.Fatalf("zeroclaw web printed no URL within 30 s: %s", p.Stderr)
	}
}

// loginURL is the link zeroclaw web printed.
func (s *stack) loginURL() string { return s.base + "/#token=" + s.token }

// httpClient returns a client that has logged in (its jar holds the cookie).
func (s *stack) httpClient() *http.Client {
	s.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	req, _ := http.NewRequest("POST", s.base+"/login", strings.NewReader(`{"token":"`+s.token+`"}`))
	req.Header.Set("Origin", s.base)
	res, err := c.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		s.t.Fatalf("login: %s", res.Status)
	}
	return c
}
