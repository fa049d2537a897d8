//go:build linux

package main

import (
	"encoding/json/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// This test reads from /proc which program the daemon the UI started runs.
func TestTheTUIStartsTheDaemonFromZeroclawBesideIt(t *testing.T) {
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
	if status, ok := p.waitExit(60 * time.Second); status != "0" {
		t.Fatalf("the UI's exit status: %q (exited: %v)", status, ok)
	}
	// The ephemeral daemon leaves with its last client.
	if !waitGone(t, pid, 60*time.Second) {
		t.Fatalf("the ephemeral daemon %d is still running after its client left", pid)
	}
}
