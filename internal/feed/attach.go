package feed

import (
	"context"
	"errors"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// Attach makes sub receive every later update of the session.
func (f *Feed) Attach(sub Subscriber) {
	f.pub.Lock()
	defer f.pub.Unlock()
	f.attachLocked(sub)
}

// attachLocked attaches sub as of the current seq; pub is held.
func (f *Feed) attachLocked(sub Subscriber) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	if f.attachmentLocked(sub) == nil {
		f.subs = append(f.subs, &attachment{f: f, sub: sub, sent: f.seq})
	}
}

// Detach stops delivering to sub.
func (f *Feed) Detach(sub Subscriber) {
	f.mu.Lock()
	if a := f.attachmentLocked(sub); a != nil {
		f.removeLocked(a)
		f.trimTailLocked()
	}
	f.mu.Unlock()
}

// ErrClosed is AttachAfter's answer once the feed is closed (its session ended).
var ErrClosed = errors.New("feed: closed")

// TruncatedError is AttachAfter's answer when the updates after the seq asked for
// are no longer kept: Oldest is the oldest one kept.
type TruncatedError struct{ Oldest uint64 }

func (e *TruncatedError) Error() string { return "the updates after that seq are no longer kept" }

// StorageError is AttachAfter's answer when the replay log could not be read.
type StorageError struct{ Err error }

func (e *StorageError) Error() string { return "reading the replay log: " + e.Err.Error() }
func (e *StorageError) Unwrap() error { return e.Err }

// AttachAfter attaches sub. With afterSeq, sub is first sent every stored update
// with a later seq, as ordinary notifications, then the live ones, with no gap and
// no duplicate: its cursor starts at afterSeq and reads the store, then the tail,
// at the connection's pace, while the turn streams on. It returns once the updates
// up to the seq at the call are handed to the connection, with the last seq sent and
// how many were. When updates after afterSeq are no longer kept, nothing is sent
// and the error is a *TruncatedError.
func (f *Feed) AttachAfter(ctx context.Context, sub Subscriber, afterSeq *uint64) (uint64, int, error) {
	f.pub.Lock()
	last := f.seq
	if afterSeq == nil || *afterSeq >= last {
		f.attachLocked(sub)
		f.pub.Unlock()
		return last, 0, nil
	}
	f.pub.Unlock()

	// Held from here, the log keeps what the check below finds until the cursor
	// holds it itself: no trim comes between the two.
	f.pin(*afterSeq)
	defer f.unpin(*afterSeq)
	f.hub.w.flush()
	oldest, err := f.hub.st.Updates(ctx, f.id, *afterSeq, func(store.Update) error { return errPageFull })
	if err != nil && !errors.Is(err, errPageFull) {
		f.hub.log.Error("reading the replay log", "session", f.id, "err", err)
		return 0, 0, &StorageError{Err: err}
	}
	if oldest == 0 || *afterSeq+1 < oldest {
		if oldest == 0 {
			oldest = last + 1
		}
		return 0, 0, &TruncatedError{Oldest: oldest}
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return 0, 0, ErrClosed
	}
	a := f.attachmentLocked(sub)
	if a == nil {
		a = &attachment{f: f, sub: sub}
		f.subs = append(f.subs, a)
	}
	a.sent, a.count, a.page = *afterSeq, 0, nil
	a.gen++
	a.wakeLocked()
	f.kickLocked()
	f.mu.Unlock()
	f.waitSent(ctx, a, last)
	f.mu.Lock()
	defer f.mu.Unlock()
	return a.sent, a.count, ctx.Err()
}
