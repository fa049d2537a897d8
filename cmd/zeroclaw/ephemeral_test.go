package main

import (
	"os"
	"testing"
	"time"
)

// The seed's "Ephemeral mode": exit one second after the last client leaves, never
// before the first client, and a reconnect within the grace cancels the exit.
// These tests assert what happens, with generous bounds, not how fast.

func TestEphemeralWaitsForTheFirstClient(t *testing.T) {
	// Not startDaemon: its readiness probe is a client. Watch the filesystem instead.
	d := launch(t, home(t), nil, "--ephemeral")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(d.socket); err == nil {
			break
		}
		if time.Now().After(deadline) || !d.running() {
			t.Fatalf("no socket at %s:\n%s", d.socket, d.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(2500 * time.Millisecond) // well past the grace: no client yet, so no exit
	if !d.running() {
		t.Fatalf("ephemeral daemon exited before any client connected:\n%s", d.stderr.String())
	}
	c := dial(t, d.socket)
	c.initialize()
	c.conn.Close()
	if err := d.wait(15 * time.Second); err != nil {
		t.Fatalf("exit status %v, want 0", err)
	}
}

func TestEphemeralExitsAfterTheLastClientLeaves(t *testing.T) {
	d := startDaemon(t, home(t), nil, "--ephemeral")
	a, b := dial(t, d.socket), dial(t, d.socket)
	a.initialize()
	b.initialize()
	a.conn.Close()
	time.Sleep(2 * time.Second) // one client remains: no exit
	if !d.running() {
		t.Fatal("exited while a client was still connected")
	}
	b.conn.Close()
	if err := d.wait(15 * time.Second); err != nil {
		t.Fatalf("exit status %v, want 0", err)
	}
}

func TestEphemeralReconnectWithinTheGraceCancelsTheExit(t *testing.T) {
	d := startDaemon(t, home(t), nil, "--ephemeral")
	a := dial(t, d.socket)
	a.initialize()
	a.conn.Close()
	b := dial(t, d.socket) // well within the one-second grace
	b.initialize()
	time.Sleep(2500 * time.Millisecond)
	if !d.running() {
		t.Fatal("exited although a client reconnected within the grace")
	}
	b.call(`{"jsonrpc":"2.0","method":"status","id":2}`)
	b.conn.Close()
	if err := d.wait(15 * time.Second); err != nil {
		t.Fatalf("exit status %v, want 0", err)
	}
}

func TestWithoutEphemeralTheDaemonIgnoresClientCount(t *testing.T) {
	d := startDaemon(t, home(t), nil)
	c := dial(t, d.socket)
	c.initialize()
	c.conn.Close()
	time.Sleep(2500 * time.Millisecond)
	if !d.running() {
		t.Fatal("a daemon without --ephemeral exited when its client left")
	}
}
