package feed

import (
	"slices"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// Retention that follows the readers (docs/protocol.md, "No reader is lost";
// docs/ARCHITECTURE.md, "Delivery"). The store trims a session's replay log to
// its newest rpc.replay_events updates, except what a hold spares: the writer
// asks each feed of a batch, before storing it, after which seq its readers still
// need every update (retainAfter), and the trimming stops there. A reader holds
// from its cursor while it is attached; a lagged one's notice holds from its
// afterSeq for RecoverFor, so that it can re-attach from there and get
// everything. What a reader's backlog may come to is bounded by rpc.replay_bytes:
// past it, the reader is lagged (checkBacklogLocked), and what it held is
// released RecoverFor later unless it re-attached.
type retention struct {
	bytes uint64     // payload bytes published since the feed was made
	marks []byteMark // every markEvery-th seq with the bytes published before it
	holds []hold     // lagged connections' and attaching ones' seqs
}

// byteMark is a seq and the payload bytes the feed published before it.
type byteMark struct {
	seq, before uint64
}

// hold keeps every update after after: until the time until, or, when pinned,
// until it is removed (an attach that is checking the store).
type hold struct {
	after  uint64
	until  time.Time
	pinned bool
}

// markEvery is how often the feed notes its byte count: a backlog is known to
// within markEvery updates.
const markEvery = 256

// published counts an update of n bytes published as seq; the feed's mu is held.
func (r *retention) published(seq uint64, n int) {
	if len(r.marks) == 0 || seq%markEvery == 0 {
		r.marks = append(r.marks, byteMark{seq: seq, before: r.bytes})
	}
	r.bytes += uint64(n)
}

// backlog returns the payload bytes published after sent, to within markEvery
// updates (more, never fewer, for what was published since the feed was made).
func (r *retention) backlog(sent uint64) uint64 {
	i, found := slices.BinarySearchFunc(r.marks, sent+1, func(m byteMark, seq uint64) int {
		switch {
		case m.seq < seq:
			return -1
		case m.seq > seq:
			return 1
		}
		return 0
	})
	if !found {
		i-- // the last mark before sent+1
	}
	if i < 0 {
		if len(r.marks) == 0 {
			return 0
		}
		i = 0 // older than the feed's first mark: what was published since
	}
	return r.bytes - r.marks[i].before
}

// prune drops the marks before the last one at or below floor+1: no reader is
// older than floor.
func (r *retention) prune(floor uint64) {
	k := 0
	for k+1 < len(r.marks) && r.marks[k+1].seq <= floor+1 {
		k++
	}
	if k > 0 {
		r.marks = slices.Delete(r.marks, 0, k)
	}
}

// holdLocked keeps every update after after for RecoverFor: a lagged connection's
// notice. A hold of that seq that exists keeps its expiry, so a connection that
// re-attaches and lags again at the same seq, having read nothing, does not hold
// the log forever. mu is held.
func (f *Feed) holdLocked(after uint64) {
	for _, h := range f.ret.holds {
		if h.after == after && !h.pinned {
			return
		}
	}
	f.ret.holds = append(f.ret.holds, hold{after: after, until: time.Now().Add(f.hub.recoverFor)})
}

// pin keeps every update after after until unpin: an attach holds the log while it
// checks what the store keeps, so that no trim comes between the check and its
// cursor.
func (f *Feed) pin(after uint64) {
	f.mu.Lock()
	f.ret.holds = append(f.ret.holds, hold{after: after, pinned: true})
	f.mu.Unlock()
}

// unpin removes a hold pin made.
func (f *Feed) unpin(after uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, h := range f.ret.holds {
		if h.pinned && h.after == after {
			f.ret.holds = slices.Delete(f.ret.holds, i, i+1)
			return
		}
	}
}

// retainAfter returns the seq after which the store must keep every update of the
// feed for its readers, and false when no reader holds anything: the oldest cursor
// of an attached connection, and the holds not yet expired. The replay log's
// writer asks before it stores a batch.
func (f *Feed) retainAfter() (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.retainAfterLocked(time.Now())
}

func (f *Feed) retainAfterLocked(now time.Time) (uint64, bool) {
	after, held := uint64(0), false
	take := func(seq uint64) {
		if !held || seq < after {
			after, held = seq, true
		}
	}
	for _, a := range f.subs {
		if !a.gone {
			take(a.sent)
		}
	}
	kept := f.ret.holds[:0]
	for _, h := range f.ret.holds {
		if h.pinned || now.Before(h.until) {
			kept = append(kept, h)
			take(h.after)
		}
	}
	clear(f.ret.holds[len(kept):])
	f.ret.holds = kept
	if len(kept) == 0 {
		f.ret.holds = nil
	}
	if held {
		f.ret.prune(after)
	} else if n := len(f.ret.marks); n > 1 {
		f.ret.marks = append(f.ret.marks[:0], f.ret.marks[n-1])
	}
	return after, held
}

// checkBacklogLocked lags every attached connection whose backlog (what was
// published after the last update it was sent) is over rpc.replay_bytes; mu is
// held.
func (f *Feed) checkBacklogLocked() {
	budget := uint64(f.hub.budget.Load())
	for i := 0; i < len(f.subs); {
		a := f.subs[i]
		if !a.gone && f.ret.backlog(a.sent) > budget {
			f.hub.log.Warn("a connection's backlog passed rpc.replay_bytes", "session", f.id,
				"afterSeq", a.sent, "bytes", f.ret.backlog(a.sent), "replayBytes", budget)
			f.lagLocked(a) // removes a: the next one is at i
			continue
		}
		i++
	}
}

// holdsOf appends to dst the holds of the feeds of a batch (owners), each once.
func holdsOf(dst []store.Hold, owners []*Feed) []store.Hold {
	var last *Feed
next:
	for _, f := range owners {
		if f == nil || f == last {
			continue
		}
		last = f
		for _, h := range dst {
			if h.SessionID == f.id {
				continue next
			}
		}
		if after, ok := f.retainAfter(); ok {
			dst = append(dst, store.Hold{SessionID: f.id, After: after})
		}
	}
	return dst
}
