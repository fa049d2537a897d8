package daemon

import (
	"log/slog"
	"sync"
	"time"
)

// ephemeral implements --ephemeral (seed, "Ephemeral mode"): once at least one client
// has connected, the daemon exits grace after the count of connected clients drops to
// zero; a client connecting within the grace cancels the exit. It logs every client
// that leaves with the count that remains, and every exit it cancels, so that the
// daemon's log tells what it decided and when (the end-to-end tests wait for these
// lines instead of waiting out the grace).
type ephemeral struct {
	grace time.Duration
	log   *slog.Logger
	exit  func()

	mu      sync.Mutex
	clients int
	timer   *time.Timer
	gen     uint64 // bumped on every connect, so a timer armed before it does nothing
}

func newEphemeral(grace time.Duration, log *slog.Logger, exit func()) *ephemeral {
	return &ephemeral{grace: grace, log: log, exit: exit}
}

func (e *ephemeral) Connected() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clients++
	e.gen++
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
		e.log.Info("ephemeral: a client connected within the grace; not exiting")
	}
}

func (e *ephemeral) Disconnected() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clients--
	if e.clients > 0 {
		e.log.Info("ephemeral: a client left", "clients", e.clients)
		return
	}
	e.log.Info("ephemeral: a client left", "clients", 0, "exitAfter", e.grace)
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
