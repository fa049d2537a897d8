package session

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"slices"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// Delivery at the reader's pace (SPEC §24). Every attachment is a cursor: the seq
// of the last update its connection was sent. While it is behind the session's
// committed seq (what the replay log has stored: durable before visible), one
// goroutine of its own reads the next updates from the session's tail in memory, or
// from the store when they are older than the tail, and hands them to the
// connection one by one, waiting while the connection has no room. A cursor is
// detached as lagged only when what it needs next is no longer kept, or when its
// connection took nothing for the session's LagAfter.

// LagAfter is how long a cursor waits for its connection to take an update before
// it is detached as lagged (Options.LagAfter).
const LagAfter = 30 * time.Second

// deliverBatch bounds the entries a cursor takes from the tail at a time, and
// storePage those it reads from the store at a time.
const (
	deliverBatch = 64
	storePage    = 1024
)

// errPageFull stops a read of the store once a page is read.
var errPageFull = errors.New("session: page full")

// committedThrough is told by the replay log that the session's updates up to seq
// are stored: they may be delivered now.
func (s *Session) committedThrough(seq uint64) {
	s.mu.Lock()
	if seq > s.committed {
		s.committed = seq
	}
	s.kickLocked()
	s.mu.Unlock()
}

// limitLocked is the seq up to which cursors deliver: the committed one, and once
// the session ended, no later than its last update then.
func (s *Session) limitLocked() uint64 {
	if s.ended {
		return min(s.committed, s.finalSeq)
	}
	return s.committed
}

// kickLocked starts the delivery goroutine of each cursor that is behind; mu is held.
func (s *Session) kickLocked() {
	limit := s.limitLocked()
	for _, a := range s.subs {
		if !a.running && !a.gone && a.sent < limit {
			a.running = true
			go s.deliver(a)
		}
	}
}

// trimTailLocked drops from the tail what every cursor has passed; mu is held.
func (s *Session) trimTailLocked() {
	passed := s.committed
	for _, a := range s.subs {
		passed = min(passed, a.sent)
	}
	s.tail.trim(s.committed, passed)
}

// removeLocked detaches a; mu is held.
func (s *Session) removeLocked(a *attachment) {
	if i := slices.Index(s.subs, a); i >= 0 {
		s.subs = slices.Delete(s.subs, i, i+1)
	}
	a.gone, a.running = true, false
	a.wakeLocked()
}

// deliver is the goroutine of cursor a while it is behind.
func (s *Session) deliver(a *attachment) {
	var buf []tailEntry
	var payloads []jsontext.Value
	var frames [][]byte
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.mu.Lock()
		limit := s.limitLocked()
		if a.gone || a.sent >= limit {
			a.running = false
			if !a.gone && s.ended && a.sent >= s.finalSeq {
				s.removeLocked(a) // the session ended and a has all of it
			}
			s.trimTailLocked()
			s.mu.Unlock()
			return
		}
		from, gen := a.sent, a.gen
		var inTail bool
		buf, inTail = s.tail.after(from, limit, buf[:0], deliverBatch)
		s.mu.Unlock()
		if !inTail {
			var truncated bool
			var err error
			buf, truncated, err = s.readStored(from, limit, buf[:0])
			if err != nil || truncated {
				if err != nil {
					s.mgr.log.Error("reading the replay log for a connection; detached it as lagged", "session", s.ID, "err", err)
				}
				if s.lag(a, gen) {
					return
				}
				continue
			}
			if len(buf) == 0 { // nothing is stored between from and limit
				s.mu.Lock()
				if a.gen == gen && a.sent == from {
					a.sent = limit
					a.wakeLocked()
				}
				s.mu.Unlock()
				continue
			}
		}
		payloads, frames = payloads[:0], frames[:0]
		for _, e := range buf {
			payloads = append(payloads, e.payload)
			if e.frame != nil {
				frames = append(frames, e.frame)
			}
		}
		if len(frames) != len(payloads) { // read from the store: not framed
			frames = frames[:0]
		}
		for done := 0; done < len(buf); {
			var fr [][]byte
			if len(frames) > 0 {
				fr = frames[done:]
			}
			n, took, closed := s.push(a, payloads[done:], fr, &timer)
			if closed {
				s.mu.Lock()
				s.removeLocked(a)
				s.mu.Unlock()
				return
			}
			if !took {
				if s.lag(a, gen) {
					return
				}
				break
			}
			done += n
			s.mu.Lock()
			moved := a.gen != gen || a.gone
			if !moved {
				a.sent = buf[done-1].seq
				a.count += n
				a.wakeLocked()
			}
			s.mu.Unlock()
			if moved {
				break
			}
		}
		clear(payloads)
		clear(frames)
		clear(buf)
	}
}

// push hands a's connection as many of payloads (and their frames, when framed)
// as it takes, at least one,
// waiting while it takes none. took is false when it took nothing for LagAfter;
// closed when the connection is gone.
func (s *Session) push(a *attachment, payloads []jsontext.Value, frames [][]byte, timer **time.Timer) (n int, took, closed bool) {
	for {
		n, err := a.sub.Deliver(payloads, frames)
		if err != nil {
			return 0, false, true
		}
		if n > 0 {
			return n, true, false
		}
		room := a.sub.Room()
		if *timer == nil {
			*timer = time.NewTimer(s.mgr.opts.LagAfter)
		} else {
			(*timer).Reset(s.mgr.opts.LagAfter)
		}
		select {
		case <-room:
			if !(*timer).Stop() {
				select {
				case <-(*timer).C:
				default:
				}
			}
		case <-(*timer).C:
			return 0, false, false
		}
	}
}

// lag detaches a, which fell behind, and tells its connection; false (and nothing
// done) when an attach moved the cursor meanwhile, which then goes on from there.
func (s *Session) lag(a *attachment, gen uint64) bool {
	s.mu.Lock()
	if a.gen != gen && !a.gone {
		s.mu.Unlock()
		return false
	}
	wasGone, afterSeq := a.gone, a.sent
	s.removeLocked(a)
	s.trimTailLocked()
	s.mu.Unlock()
	if !wasGone {
		s.mgr.log.Warn("a connection fell behind the session's updates; detached it", "session", s.ID, "afterSeq", afterSeq)
		a.sub.Lagged(s.ID, afterSeq)
	}
	return true
}

// readStored reads from the store a page of the updates with after < seq <= upTo,
// and reports truncated when the one right after after is no longer kept. It runs
// on the cursor's goroutine, under no lock.
func (s *Session) readStored(after, upTo uint64, dst []tailEntry) ([]tailEntry, bool, error) {
	oldest, err := s.mgr.st.Updates(s.mgr.life, s.ID, after, func(u store.Update) error {
		if u.Seq > upTo || len(dst) >= storePage {
			return errPageFull
		}
		dst = append(dst, tailEntry{seq: u.Seq, payload: u.Payload})
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return dst[:0], false, err
	}
	if oldest == 0 || after+1 < oldest {
		return dst[:0], true, nil
	}
	return dst, false, nil
}

// WaitDelivered returns once sub's connection has been handed every update of the
// session up to seq, or sub is not (or no longer) attached, or ctx ends. A prompt's
// answer waits for it, so that on the prompting connection the answer follows the
// turn's updates.
func (s *Session) WaitDelivered(ctx context.Context, sub Subscriber, seq uint64) {
	s.mu.Lock()
	a := s.attachmentLocked(sub)
	s.mu.Unlock()
	if a != nil {
		s.waitSent(ctx, a, seq)
	}
}

// waitSent returns once a was sent seq, is gone, or ctx ends.
func (s *Session) waitSent(ctx context.Context, a *attachment, seq uint64) {
	for {
		s.mu.Lock()
		if a.gone || a.sent >= seq {
			s.mu.Unlock()
			return
		}
		if a.moved == nil {
			a.moved = make(chan struct{})
		}
		ch := a.moved
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// attachmentLocked returns sub's attachment, nil when it has none; mu is held.
func (s *Session) attachmentLocked(sub Subscriber) *attachment {
	for _, a := range s.subs {
		if a.sub == sub {
			return a
		}
	}
	return nil
}
