package daemon

import (
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEphemeralCountsClients(t *testing.T) {
	var exits atomic.Int32
	const grace = 50 * time.Millisecond
	e := newEphemeral(grace, func() { exits.Add(1) })

	e.Connected()
	e.Connected()
	e.Disconnected()
	time.Sleep(4 * grace)
	if exits.Load() != 0 {
		t.Fatal("exited with a client still connected")
	}

	e.Disconnected()
	e.Connected() // within the grace: the armed timer must do nothing
	time.Sleep(4 * grace)
	if exits.Load() != 0 {
		t.Fatal("a reconnect within the grace did not cancel the exit")
	}

	e.Disconnected()
	deadline := time.Now().Add(5 * time.Second)
	for exits.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if exits.Load() != 1 {
		t.Fatalf("exit called %d times, want 1", exits.Load())
	}
}
