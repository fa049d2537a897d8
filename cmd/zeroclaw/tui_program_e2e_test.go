package main

import (
	"encoding/json/v2"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// zeroclaw's full-screen client is the zeroclaw-tui program beside it: these tests
// run zeroclaw as a user does and look at which program ends up doing what.

func TestTheTUIStartsTheDaemonFromZeroclawBesideIt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	h := home(t)
	p := startTmux(t, h, 100, 30, "tui") // no daemon: the client starts one
	p.waitStatus("● connected")
	out, _, err := run(t, command(h, "status", "--json"))
	var st map[string]any
	if err != nil || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status: %v %s", err, out)
	}
	pid := int(st["pid"].(float64))
	exe, err := os.Readlink(filepath.Join("/proc", itoa(pid), "exe"))
	if err != nil {
		t.Fatal(err)
	}
	if exe != binary {
		t.Fatalf("the daemon the UI started runs %s, not zeroclaw (%s)", exe, binary)
	}
	p.typeText("/quit")
	p.keys("Enter")
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := os.ReadFile(p.exit)
		if err == nil && strings.TrimSpace(string(b)) == "0" {
			break
		}
		if err == nil || time.Now().After(deadline) {
			t.Fatalf("the UI's exit status: %q %v", b, err)
		}
		time.Sleep(20 * time.Millisecond) // polling for the exit file, with a deadline
	}
	// The ephemeral daemon leaves with its last client.
	for _, err := os.Stat(filepath.Join("/proc", itoa(pid))); err == nil; _, err = os.Stat(filepath.Join("/proc", itoa(pid))) {
		if time.Now().After(deadline) {
			t.Fatalf("the ephemeral daemon %d is still running after its client left", pid)
		}
		time.Sleep(20 * time.Millisecond) // polling for the process to end, with a deadline
	}
}

func TestZeroclawWithoutZeroclawTUISaysHowToInstallIt(t *testing.T) {
	h := home(t)
	alone := filepath.Join(h, "bin")
	if err := os.Mkdir(alone, 0o755); err != nil {
		t.Fatal(err)
	}
	lone := filepath.Join(alone, filepath.Base(binary))
	if err := os.Link(binary, lone); err != nil {
		copyFile(t, binary, lone)
	}
	cmd := command(h, "tui")
	cmd.Path = lone
	for i, kv := range cmd.Env {
		if strings.HasPrefix(kv, "PATH=") {
			cmd.Env[i] = "PATH=" + alone
		}
	}
	_, stderr, err := run(t, cmd)
	if exitCode(err) != 1 || !strings.Contains(stderr, "zeroclaw-tui") || !strings.Contains(stderr, "go install ./cmd/zeroclaw-tui") {
		t.Fatalf("zeroclaw tui without zeroclaw-tui: %v\n%s", err, stderr)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
