package main

import (
	"strings"
	"testing"
	"time"
)

// The seed's "Ephemeral mode", as only the binary shows it: --ephemeral wires the
// client count to the daemon's exit, and a daemon without it has no count at all.
// The timing rules (never before the first client, exactly one grace after the last
// leaves, a reconnect within the grace cancels) are internal/daemon's unit tests on
// a synctest clock; here every wait is for an event the daemon reports in its log,
// never for time to pass.

// launchEphemeral starts `zeroclaw daemon --ephemeral` and waits for its "serving"
// log line; a readiness probe would be a client, and start the grace.
func launchEphemeral(t *testing.T, home string, env ...string) *daemon {
	t.Helper()
	d := launch(t, home, env, "--ephemeral")
	d.waitLog(`msg=serving `, 1)
	return d
}

// waitLog waits until the daemon's log holds n lines containing s.
func (d *daemon) waitLog(s string, n int) {
	d.t.Helper()
	log, ok := d.stderr.await(func(log string) bool { return strings.Count(log, s) >= n }, d.exited, 30*time.Second)
	if !ok && !d.running() {
		d.t.Fatalf("daemon exited waiting for %d× %q in its log:\n%s", n, s, log)
	}
	if !ok {
		d.t.Fatalf("no %d× %q in the daemon's log:\n%s", n, s, log)
	}
}

func TestEphemeralServesItsFirstClientThenExitsWhenItLeaves(t *testing.T) {
	d := launchEphemeral(t, home(t))
	c := dial(t, d.socket)
	c.initialize()
	c.call(`{"jsonrpc":"2.0","method":"status","id":2}`)
	c.conn.Close()
	d.waitLog(`msg="ephemeral: a client left" clients=0 exitAfter=1s`, 1)
	if err := d.wait(15 * time.Second); err != nil {
		t.Fatalf("exit status %v, want 0", err)
	}
	if !strings.Contains(d.stderr.String(), "last client left; ephemeral daemon exiting") {
		t.Errorf("the exit is not logged:\n%s", d.stderr.String())
	}
}

func TestEphemeralCountsEveryClientAndExitsAfterTheLast(t *testing.T) {
	d := launchEphemeral(t, home(t))
	a, b := dial(t, d.socket), dial(t, d.socket)
	a.initialize()
	b.initialize()
	a.conn.Close()
	d.waitLog(`msg="ephemeral: a client left" clients=1`, 1) // one remains: no grace starts
	if r := b.call(`{"jsonrpc":"2.0","method":"status","id":2}`); r["result"] == nil {
		t.Fatalf("status on the remaining client: %v", r)
	}
	b.conn.Close()
	d.waitLog(`msg="ephemeral: a client left" clients=0 exitAfter=1s`, 1)
	if err := d.wait(15 * time.Second); err != nil {
		t.Fatalf("exit status %v, want 0", err)
	}
}

func TestWithoutEphemeralTheDaemonKeepsNoClientCount(t *testing.T) {
	d := startDaemon(t, home(t), nil)
	c := dial(t, d.socket)
	c.initialize()
	c.conn.Close()
	d.waitLog(`msg="connection closed"`, 2) // the readiness probe's and this one's
	again := dial(t, d.socket)
	again.initialize() // served after the only client left
	if strings.Contains(d.stderr.String(), "ephemeral: ") {
		t.Errorf("a daemon without --ephemeral counts its clients:\n%s", d.stderr.String())
	}
}
