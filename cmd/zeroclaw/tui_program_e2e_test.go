package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zeroclaw's full-screen client is the zeroclaw-tui program beside it: these tests
// run zeroclaw as a user does and look at which program ends up doing what.

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
