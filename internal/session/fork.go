package session

import (
	"context"
	"errors"
	"slices"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// ForkResult is what session/fork answers: the new session's id.
type ForkResult struct {
	SessionID string `json:"sessionId"`
}

// Fork makes a new durable session of the same owner, agent and workspace as id,
// with a copy of its visible transcript, its retained context and its controls
// (title replaced when given) (docs/protocol.md, "session/fork"). It waits for the
// source's turn slot, so the copy is of a session between turns. The fork is not
// live: session/new with its id, session/attach or a prompt opens it.
func (m *Manager) Fork(ctx context.Context, id string, c Caller, title *string) (ForkResult, error) {
	if title != nil {
		if err := checkTitle(*title); err != nil {
			return ForkResult{}, err
		}
	}
	s, err := m.Obtain(ctx, id, c)
	if err != nil {
		return ForkResult{}, err
	}
	if err := s.enqueue(ctx); err != nil {
		return ForkResult{}, err
	}
	defer func() { <-s.slot }()
	if err := s.repair(ctx); err != nil {
		return ForkResult{}, err
	}
	s.mu.Lock()
	history, ctl := slices.Clone(s.context), s.ctl
	s.mu.Unlock()
	if title != nil {
		ctl.Title = *title
	}
	for {
		dst := store.Session{ID: newUUID(), Owner: s.Owner, Agent: s.Agent.Alias, Workspace: s.Workspace}
		err := m.st.Fork(ctx, s.ID, dst, ctl, history)
		switch {
		case err == nil:
			m.log.Info("session forked", "session", s.ID, "fork", dst.ID, "contextMessages", len(history))
			return ForkResult{SessionID: dst.ID}, nil
		case errors.Is(err, store.ErrExists): // a random id taken: draw again
			continue
		case errors.Is(err, store.ErrNotFound) && s.deleted(err):
			return ForkResult{}, errNotFound(id)
		default:
			m.log.Error("forking a session failed", "session", s.ID, "err", err)
			return ForkResult{}, errStorage(err)
		}
	}
}
