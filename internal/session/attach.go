package session

import (
	"context"
	"errors"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// Attach makes sub receive every later update of the session.
func (s *Session) Attach(sub Subscriber) {
	s.pub.Lock()
	defer s.pub.Unlock()
	s.attachLocked(sub)
}

// attachLocked attaches sub as of the current seq; pub is held.
func (s *Session) attachLocked(sub Subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.attachmentLocked(sub) == nil {
		s.subs = append(s.subs, &attachment{s: s, sub: sub, sent: s.seq})
	}
}

// Detach stops delivering to sub.
func (s *Session) Detach(sub Subscriber) {
	s.mu.Lock()
	if a := s.attachmentLocked(sub); a != nil {
		s.removeLocked(a)
		s.trimTailLocked()
	}
	s.mu.Unlock()
}

// AttachAfter attaches sub. With afterSeq, sub is first sent every stored update
// with a later seq, as ordinary notifications, then the live ones, with no gap and
// no duplicate: its cursor starts at afterSeq and reads the store, then the tail,
// at the connection's pace, while the turn streams on. It returns once the updates
// up to the seq at the call are handed to the connection, with the last seq sent and
// how many were. When updates after afterSeq are no longer kept, nothing is sent
// and the error says which is the oldest kept.
func (s *Session) AttachAfter(ctx context.Context, sub Subscriber, afterSeq *uint64) (uint64, int, error) {
	s.pub.Lock()
	last := s.seq
	if afterSeq == nil || *afterSeq >= last {
		s.attachLocked(sub)
		s.pub.Unlock()
		return last, 0, nil
	}
	s.pub.Unlock()

	s.mgr.updates.flush()
	oldest, err := s.mgr.st.Updates(ctx, s.ID, *afterSeq, func(store.Update) error { return errPageFull })
	if err != nil && !errors.Is(err, errPageFull) {
		s.mgr.log.Error("reading the replay log", "session", s.ID, "err", err)
		return 0, 0, errStorage(err)
	}
	if oldest == 0 || *afterSeq+1 < oldest {
		if oldest == 0 {
			oldest = last + 1
		}
		return 0, 0, &Error{Kind: Invalid, Msg: "the updates after that seq are no longer kept",
			Details: map[string]any{"reason": "replay_truncated", "oldestSeq": oldest}}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, 0, errNotFound(s.ID)
	}
	a := s.attachmentLocked(sub)
	if a == nil {
		a = &attachment{s: s, sub: sub}
		s.subs = append(s.subs, a)
	}
	a.sent, a.count, a.page = *afterSeq, 0, nil
	a.gen++
	a.wakeLocked()
	s.kickLocked()
	s.mu.Unlock()
	s.waitSent(ctx, a, last)
	s.mu.Lock()
	defer s.mu.Unlock()
	return a.sent, a.count, ctx.Err()
}
