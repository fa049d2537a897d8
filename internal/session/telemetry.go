package session

import (
	"context"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/agent"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// Live is the number of live sessions, read without the manager's lock: the
// metrics read it at scrape time (docs/protocol.md, "Metrics and traces").
func (m *Manager) Live() int { return int(m.live.Load()) }

// countLocked records len(m.sessions) for Live; m.mu is held.
func (m *Manager) countLocked() { m.live.Store(int64(len(m.sessions))) }

// observeTurn begins the Telemetry's watch of a turn of s; without Telemetry, a
// watch that does nothing.
func (s *Session) observeTurn(ctx context.Context) (context.Context, agent.TurnObserver) {
	if s.mgr.opts.Telemetry == nil {
		return ctx, nil
	}
	return s.mgr.opts.Telemetry.StartTurn(ctx, s.Agent.Alias, s.Agent.ProviderName, s.Agent.Model)
}

// turnEnded ends the watch of observeTurn.
func turnEnded(obs agent.TurnObserver, stopReason string, u llm.Usage) {
	if obs != nil {
		obs.End(stopReason, u)
	}
}
