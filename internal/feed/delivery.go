package feed

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// Delivery at the reader's pace (docs/protocol.md, "A daemon that runs for months").
// Every attachment is a cursor: the seq of the last update its connection was sent.
// It has no goroutine of its own. While it is behind the session's committed seq
// (what the replay log has stored: durable before visible), it is registered with its
// connection (Subscriber.Want), whose writer, whenever it has room, calls the
// cursor's Pull: that reads the next updates from the session's tail in memory, or
// from the store when they are older than the tail, and hands the connection as many
// as it takes. A connection that does not read costs its writer, blocked in its
// write, and the cursor's fields; nothing else. A cursor is detached as lagged only
// when what it needs next is no longer kept, or when its connection took nothing for
// the session's LagAfter.

// LagAfter is how long a cursor waits for its connection to take an update before
// it is detached as lagged (Options.LagAfter).
const LagAfter = 30 * time.Second

// deliverBatch bounds the entries a cursor hands its connection at a time, and
// storePage those it reads from the store at a time.
const (
	deliverBatch = 64
	storePage    = 1024
)

// errPageFull stops a read of the store once a page is read.
var errPageFull = errors.New("session: page full")

// committedThrough is told by the replay log that the session's updates up to seq
// are stored: they may be delivered now.
func (f *Feed) committedThrough(seq uint64) {
	f.mu.Lock()
	f.committedLocked(seq)
	f.mu.Unlock()
}

// committedLocked is committedThrough with mu held.
func (f *Feed) committedLocked(seq uint64) {
	if seq > f.committed {
		f.committed = seq
	}
	f.kickLocked()
}

// limitLocked is the seq up to which cursors deliver: the committed one, and once
// the session ended, no later than its last update then.
func (f *Feed) limitLocked() uint64 {
	if f.ended {
		return min(f.committed, f.finalSeq)
	}
	return f.committed
}

// kickLocked registers with its connection each cursor that is behind and not
// registered yet; mu is held.
func (f *Feed) kickLocked() {
	limit := f.limitLocked()
	for i := 0; i < len(f.subs); {
		a := f.subs[i]
		if !a.wanting && !a.gone && a.sent < limit && !f.wantLocked(a) {
			continue // its connection closed: removed, the next one is at i
		}
		i++
	}
}

// wantLocked registers a, which has updates to hand its connection, to be pulled
// once the connection has room, and watches it for lagging from now on (unless it
// waits already); false (and a removed) when the connection is gone; mu is held.
func (f *Feed) wantLocked(a *attachment) bool {
	a.wanting = true
	if err := a.sub.Want(a); err != nil {
		f.removeLocked(a)
		return false
	}
	if a.blocked.IsZero() {
		a.blocked = time.Now()
	}
	f.watchLagLocked(a)
	return true
}

// trimTailLocked drops from the tail what every cursor has passed; mu is held.
func (f *Feed) trimTailLocked() {
	passed := f.committed
	for _, a := range f.subs {
		passed = min(passed, a.sent)
	}
	f.tail.trim(f.committed, passed, f.busy)
	if !f.busy && f.tail.block == nil && len(f.tail.retired) > 0 && f.tail.oldest() == 0 {
		f.spareLocked()
	}
}

// removeLocked detaches a; mu is held.
func (f *Feed) removeLocked(a *attachment) {
	if i := slices.Index(f.subs, a); i >= 0 {
		f.subs = slices.Delete(f.subs, i, i+1)
	}
	a.gone, a.page = true, nil
	f.detachedLocked(a)
	if a.timer != nil {
		a.timer.Stop()
	}
	a.wakeLocked()
}

// batch is what a Pull hands its connection at a time: the entries, their
// payloads and frames. Batches are shared by every cursor (batches), each held
// only during one Pull.
type batch struct {
	entries  []tailEntry
	framed   bool // entries are the tail's (frames), not a page of the store's (params)
	payloads []jsontext.Value
	frames   [][]byte
}

var batches = sync.Pool{New: func() any {
	return &batch{
		entries:  make([]tailEntry, 0, deliverBatch),
		payloads: make([]jsontext.Value, 0, deliverBatch),
		frames:   make([][]byte, 0, deliverBatch),
	}
}}

// Pull is called by a's connection, on its writer, once it has room: a hands it
// the next updates (Subscriber.Want).
func (a *attachment) Pull() { a.f.pull(a) }

// pull hands a's connection, from the tail or the store, the updates after a.sent
// up to the limit, as many as it takes; when it took fewer, a waits for the next
// Pull, and is lagged if none comes within LagAfter.
func (f *Feed) pull(a *attachment) {
	f.mu.Lock()
	b := batches.Get().(*batch) // taken under mu: about one per session streaming
	a.wanting = false
	for !a.gone {
		limit := f.limitLocked()
		if a.sent >= limit {
			a.blocked = time.Time{}
			if f.ended && a.sent >= f.finalSeq {
				f.removeLocked(a) // the session ended and a has all of it
			}
			f.trimTailLocked()
			break
		}
		b.entries = b.entries[:0]
		b.framed = len(a.page) == 0
		if len(a.page) > 0 {
			b.entries = append(b.entries, a.page[:min(len(a.page), deliverBatch)]...)
		} else {
			var inTail bool
			if b.entries, inTail = f.tail.after(a.sent, limit, b.entries, deliverBatch); !inTail {
				if !f.readPageLocked(a, limit) {
					break
				}
				continue
			}
		}
		n, err := f.handLocked(a, b)
		if err != nil {
			f.removeLocked(a)
			break
		}
		if n == 0 { // no room: the next Pull comes once there is
			if !a.wanting {
				f.wantLocked(a)
			}
			break
		}
		if len(a.page) > 0 {
			a.page = a.page[n:]
			if len(a.page) == 0 {
				a.page = nil
			}
		}
		a.sent = b.entries[n-1].seq
		a.count += n
		a.blocked = time.Time{}
		a.wakeLocked()
	}
	clear(b.entries[:cap(b.entries)])
	batches.Put(b)
	f.mu.Unlock()
}

// handLocked hands a's connection the entries of b, framed when they all are, and
// returns how many it took; mu is held (Deliver never waits).
func (f *Feed) handLocked(a *attachment, b *batch) (int, error) {
	b.payloads, b.frames = b.payloads[:0], b.frames[:0]
	var frames [][]byte
	if b.framed {
		for _, e := range b.entries {
			b.payloads = append(b.payloads, framedPayload(e.b))
			b.frames = append(b.frames, e.b)
		}
		frames = b.frames
	} else { // read from the store: not framed
		for _, e := range b.entries {
			b.payloads = append(b.payloads, e.b)
		}
	}
	n, err := a.sub.Deliver(b.payloads, frames)
	clear(b.payloads)
	clear(b.frames)
	return n, err
}

// readPageLocked reads into a.page the next page of a's updates from the store,
// with mu released meanwhile (on the connection's writer, which has nothing else
// to write for a), and reports whether a goes on: false once it was lagged, gone or
// moved (an attach moved it: it is registered again from there); mu is held.
func (f *Feed) readPageLocked(a *attachment, limit uint64) bool {
	from, gen := a.sent, a.gen
	f.mu.Unlock()
	page, truncated, err := f.readStored(from, limit, nil)
	if err != nil {
		f.hub.log.Error("reading the replay log for a connection; detached it as lagged", "session", f.id, "err", err)
	}
	if err != nil || truncated {
		f.lag(a, gen)
		f.mu.Lock()
		return false
	}
	f.mu.Lock()
	if a.gone || a.gen != gen { // moved: the attach registered it from there
		return false
	}
	if len(page) == 0 { // nothing is stored between from and limit
		a.sent = limit
		a.wakeLocked()
		return true
	}
	a.page = page
	return true
}

// watchLagLocked makes sure a is lagged if its connection takes nothing of what it
// has for LagAfter from a.blocked; mu is held.
func (f *Feed) watchLagLocked(a *attachment) {
	if a.timing {
		return
	}
	a.timing = true
	wait := f.hub.lagAfter - time.Since(a.blocked)
	if a.timer == nil {
		a.timer = time.AfterFunc(wait, func() { f.checkLag(a) })
	} else {
		a.timer.Reset(wait)
	}
}

// checkLag runs LagAfter after a was blocked: a is lagged if its connection still
// took nothing since, else watched again from when it was blocked last.
func (f *Feed) checkLag(a *attachment) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a.timing = false
	switch {
	case a.gone || a.blocked.IsZero():
	case time.Since(a.blocked) < f.hub.lagAfter:
		f.watchLagLocked(a)
	default:
		f.lagLocked(a)
	}
}

// lag detaches a, which fell behind, and tells its connection; nothing is done
// when an attach moved the cursor meanwhile (gen), which then goes on from there.
func (f *Feed) lag(a *attachment, gen uint64) {
	f.mu.Lock()
	if a.gen == gen && !a.gone {
		f.lagLocked(a)
	}
	f.mu.Unlock()
}

// lagLocked detaches a and tells its connection, before anyone waiting on a
// (WaitDelivered: the prompt's answer) may go on, so that lagged comes right behind
// the last update it was sent; mu is held (Lagged never waits).
func (f *Feed) lagLocked(a *attachment) {
	f.holdLocked(a.sent) // replayable from its afterSeq for RecoverFor (retain.go)
	f.removeLocked(a)
	f.trimTailLocked()
	f.hub.log.Warn("a connection fell behind the session's updates; detached it", "session", f.id, "afterSeq", a.sent)
	f.hub.onLagged()
	a.sub.Lagged(f.id, a.sent)
}

// readStored reads from the store a page of the updates with after < seq <= upTo,
// and reports truncated when the one right after after is no longer kept. It runs
// on the cursor's connection's writer (pull), under no lock.
func (f *Feed) readStored(after, upTo uint64, dst []tailEntry) ([]tailEntry, bool, error) {
	oldest, err := f.hub.st.Updates(f.hub.life, f.id, after, func(u store.Update) error {
		if u.Seq > upTo || len(dst) >= storePage {
			return errPageFull
		}
		dst = append(dst, tailEntry{seq: u.Seq, b: u.Payload})
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
func (f *Feed) WaitDelivered(ctx context.Context, sub Subscriber, seq uint64) {
	f.mu.Lock()
	a := f.attachmentLocked(sub)
	f.mu.Unlock()
	if a != nil {
		f.waitSent(ctx, a, seq)
	}
}

// waitSent returns once a was sent seq, is gone, or ctx ends.
func (f *Feed) waitSent(ctx context.Context, a *attachment, seq uint64) {
	for {
		f.mu.Lock()
		if a.gone || a.sent >= seq {
			f.mu.Unlock()
			return
		}
		if a.moved == nil {
			a.moved = make(chan struct{})
		}
		ch := a.moved
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// attachmentLocked returns sub's attachment, nil when it has none; mu is held.
func (f *Feed) attachmentLocked(sub Subscriber) *attachment {
	for _, a := range f.subs {
		if a.sub == sub {
			return a
		}
	}
	return nil
}
