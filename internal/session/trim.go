package session

import (
	"errors"
	"slices"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// trim keeps the retained model context within the agent's max_context_messages
// (SPEC §9). Older messages leave it: the new snapshot starts at a user message, so
// no tool result loses its call. The snapshot and the checkpoint boundary it covers
// commit in one transaction, and only then is history_trimmed sent; when the write
// fails nothing is sent and the context stays whole until the next turn tries again.
// The transcript is never touched. When what is kept is all checkpoints, the store
// keeps those (TrimBefore) instead of a snapshot of them: a session at its limit
// then costs each turn what the turn added, not its whole context encoded again.
func (s *Session) trim(t *runningTurn) {
	s.mu.Lock()
	ctxMsgs, ids, boundary, limit := s.context, s.contextIDs, s.checkpoint, s.Agent.MaxContextMessages
	s.mu.Unlock()
	if len(ctxMsgs) <= limit {
		return
	}
	cut := -1
	for i := len(ctxMsgs) - limit; i < len(ctxMsgs); i++ {
		if ctxMsgs[i].Role == provider.RoleUser {
			cut = i
			break
		}
	}
	if cut < 0 { // one turn alone is longer than the limit: keep from its prompt
		for i := len(ctxMsgs) - 1; i >= 0; i-- {
			if ctxMsgs[i].Role == provider.RoleUser {
				cut = i
				break
			}
		}
	}
	if cut <= 0 {
		return
	}
	snapshot := append([]provider.Message(nil), ctxMsgs[cut:]...)
	keptIDs, err := s.trimStore(t, ids, cut, snapshot, boundary)
	if err != nil {
		s.mgr.log.Error("trimming the retained context failed; nothing trimmed", "session", s.ID, "err", err)
		return
	}
	s.mu.Lock()
	s.context, s.contextIDs = snapshot, keptIDs
	s.mu.Unlock()
	u := &Update{TurnID: t.id, Type: HistoryTrimmed}
	dropped, kept := cut, len(snapshot)
	u.Dropped, u.Kept = &dropped, &kept
	s.publish(u)
}

// trimStore stores the trim of the context (ids, one per message) at cut, which
// keeps snapshot, and returns the ids of what it keeps: TrimBefore when the kept
// messages are checkpoints (the ones without an id after the first being answers
// the store supplies again), else a snapshot covering boundary.
func (s *Session) trimStore(t *runningTurn, ids []int64, cut int, snapshot []provider.Message, boundary int64) ([]int64, error) {
	if len(ids) == len(snapshot)+cut && ids[cut] > 0 {
		var kept []int64
		for _, id := range ids[cut:] {
			if id > 0 {
				kept = append(kept, id)
			}
		}
		err := s.mgr.st.TrimBefore(t.storage, s.ID, kept)
		if err == nil {
			return slices.Clone(ids[cut:]), nil
		}
		if !errors.Is(err, store.ErrNotContiguous) {
			return nil, err
		}
		s.mgr.log.Warn("the kept context is not the newest checkpoints; storing a snapshot of it", "session", s.ID, "err", err)
	}
	if err := s.mgr.st.Trim(t.storage, s.ID, snapshot, boundary); err != nil {
		return nil, err
	}
	return make([]int64, len(snapshot)), nil
}
