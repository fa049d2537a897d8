package daemon

import (
	"sync"
	"time"
)

// ephemeral implements --ephemeral (seed, "Ephemeral mode"): once at least one client
// has connected, the daemon exits grace after the count of connected clients drops to
// zero; a client connecting within the grace cancels the exit.
type ephemeral struct {
	grace time.Duration
	exit  func()

	mu      sync.Mutex
	clients int
	timer   *time.Timer
	gen     uint64 // bumped on every connect, so a timer armed before it does nothing
}

func newEphemeral(grace time.Duration, exit func()) *ephemeral {
	return &ephemeral{grace: grace, exit: exit}
}

func (e *ephemeral) Connected() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clients++
	e.gen++
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
}

func (e *ephemeral) Disconnected() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clients--
	if e.clients > 0 {
		return
	}
	gen := e.gen
	e.timer = time.AfterFunc(e.grace, func() {
		e.mu.Lock()
		fire := e.clients == 0 && e.gen == gen
		e.mu.Unlock()
		if fire {
			e.exit()
		}
	})
}
