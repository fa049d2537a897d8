package session

import (
	"errors"
	"slices"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// trim keeps the retained model context within the agent's max_context_messages
// (docs/protocol.md, "Durable sessions"). Once it exceeds the limit, older messages
// leave it down to the low water mark (lowWater), so that a session at its limit
// trims once every few turns, not on every one (a trim is a store write and a
// history_trimmed update its turn's answer waits for: the flat turn cost of
// docs/protocol.md, "A daemon that runs for months"). The new snapshot starts
// at a user message, so no tool result loses its call. The snapshot and the
// checkpoint boundary it covers commit in one transaction, and only then is
// history_trimmed sent; when the write fails nothing is sent and the context stays
// whole until the next turn tries again.
// The transcript is never touched. When what is kept is all checkpoints, the store
// keeps those (TrimBefore) instead of a snapshot of them: a session at its limit
// then costs a trim what the turns since the last one added, not its whole
// context encoded again.
func (s *Session) trim(t *runningTurn) {
	s.mu.Lock()
	ctxMsgs, ids, boundary, limit := s.context, s.contextIDs, s.checkpoint, s.Agent.MaxContextMessages
	s.mu.Unlock()
	if len(ctxMsgs) <= limit {
		return
	}
	cut := firstPrompt(ctxMsgs, len(ctxMsgs)-lowWater(limit))
	if cut < 0 { // no prompt in the newest lowWater: keep the most within the limit
		cut = firstPrompt(ctxMsgs, len(ctxMsgs)-limit)
	}
	if cut < 0 { // one turn alone is longer than the limit: keep from its prompt
		for i := len(ctxMsgs) - 1; i >= 0; i-- {
			if ctxMsgs[i].Role == llm.RoleUser {
				cut = i
				break
			}
		}
	}
	if cut <= 0 {
		return
	}
	snapshot := append([]llm.Message(nil), ctxMsgs[cut:]...)
	keptIDs, err := s.trimStore(t, ids, cut, snapshot, boundary)
	if err != nil {
		s.mgr.log.Error("trimming the retained context failed; nothing trimmed", "session", s.ID, "err", err)
		return
	}
	s.mu.Lock()
	s.context, s.contextIDs = snapshot, keptIDs
	s.mu.Unlock()
	u := &Update{TurnID: t.id, Type: HistoryTrimmed}
	u.Dropped, u.Kept = cut, len(snapshot)
	s.publish(u)
}

// trimStore stores the trim of the context (ids, one per message) at cut, which
// keeps snapshot, and returns the ids of what it keeps: TrimBefore when the kept
// messages are checkpoints (the ones without an id after the first being answers
// the store supplies again), else a snapshot covering boundary.
func (s *Session) trimStore(t *runningTurn, ids []int64, cut int, snapshot []llm.Message, boundary int64) ([]int64, error) {
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

// lowWater is how many messages a trim keeps at most: max_context_messages less an
// eighth of it (200: 175), so that an echo session at its limit, two messages a
// turn, trims once in 13 turns. A limit under 8 keeps its whole limit (no slack).
func lowWater(limit int) int { return limit - limit/8 }

// firstPrompt is the index of the first user message of msgs at from or after it
// (from below 0 counts as 0), or -1.
func firstPrompt(msgs []llm.Message, from int) int {
	for i := max(from, 0); i < len(msgs); i++ {
		if msgs[i].Role == llm.RoleUser {
			return i
		}
	}
	return -1
}
