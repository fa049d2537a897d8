//go:build unix

package client

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The tests run the real daemon: TestMain builds the zeroclaw binary and starts one
// daemon (echo provider, default config), whose socket is ZEROCLAW_SOCKET for the
// examples; tests that need a daemon of their own start it with startDaemon.

var (
	binary       string
	sharedSocket string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "zcc")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "zeroclaw")
	build := exec.Command("go", "build", "-o", binary, "../cmd/zeroclaw")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building zeroclaw:", err)
		return 1
	}
	home := filepath.Join(dir, "h")
	os.Mkdir(home, 0o700)
	stop, sock, err := runDaemon(home, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sharedSocket = sock
	os.Setenv("ZEROCLAW_SOCKET", sock)
	code := m.Run()
	stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	return code
}

// runDaemon starts `zeroclaw daemon` with HOME=home and waits until it serves.
func runDaemon(home, configTOML string) (stop func(), socket string, err error) {
	if configTOML != "" {
		os.MkdirAll(filepath.Join(home, ".zeroclaw"), 0o700)
		if err := os.WriteFile(filepath.Join(home, ".zeroclaw", "config.toml"), []byte(configTOML), 0o600); err != nil {
			return nil, "", err
		}
	}
	socket = filepath.Join(home, ".zeroclaw", "data", "daemon.sock")
	cmd := exec.Command(binary, "daemon", "--log-level", "warn")
	cmd.Env = append(cleanEnv(), "HOME="+home)
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop = func() { cmd.Process.Kill(); <-exited }
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("unix", socket); err == nil {
			c.Close()
			return stop, socket, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, "", fmt.Errorf("daemon did not serve at %s: %s", socket, logs.String())
		}
	}
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZEROCLAW_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return env
}

// startDaemon is runDaemon for one test, in a fresh HOME.
func startDaemon(t *testing.T, configTOML string) string {
	t.Helper()
	home, err := os.MkdirTemp("", "zcc")
	if err != nil {
		t.Fatal(err)
	}
	stop, sock, err := runDaemon(home, configTOML)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); os.RemoveAll(home) })
	return sock
}
