package feed

import (
	"context"
	"log/slog"
	"runtime"
	"sync"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// updateLog writes published updates to the store, in batches (group commit), so
// that a turn streaming thousands of chunks a second is not held to one transaction
// per chunk: the writer takes everything added since its last write and stores it
// in one transaction. Once a batch has committed, the writer tells each session of
// it the last seq it stored (Feed.committedThrough): only then are those updates
// delivered to clients (docs/protocol.md, "A daemon that runs for months", durable
// before visible), so a crash takes back no update any client saw. What is waiting is
// bounded: when the store falls behind, publishing waits (backpressure), it never
// drops. What a crash loses is the tail of the replay log, never a seq: seqs are
// reserved durably before they are used.
//
// Adding is a mutex and an append, with a wake-up of the writer only when it has
// nothing to do: a channel send per chunk cost a tenth of a streamed update.
type updateLog struct {
	ctx context.Context
	st  *store.Store
	log *slog.Logger

	mu      sync.Mutex
	changed sync.Cond      // on mu: written moved, or the log stopped
	pending []store.Update // added, not yet taken by the writer
	owners  []*Feed        // the session of each of pending
	arena   arena          // the payloads of pending, copied (add)
	free    [][]byte       // chunks of written batches, for arena to reuse
	added   uint64         // updates added so far
	written uint64         // updates stored (or failed to) so far
	closing bool           // close was called: the writer drains and stops
	done    bool           // the writer has stopped
	wake    chan struct{}  // one slot: pending became non-empty, or closing
	stopped chan struct{}
}

// updateQueue bounds what waits for the writer. The writer stores at once what
// waits when it wakes, and while it stores, what is added meanwhile gathers for its
// next write: a lone update (a tool call, a question, a turn's first) is stored, and
// so visible (docs/protocol.md, "A daemon that runs for months"), within one commit,
// and a turn streaming thousands of chunks a second is stored in a few large
// transactions (each has a fixed cost of about as much as a hundred chunks). No timer
// holds a batch back: the window between an update and its write is the write before
// it.
const (
	updateQueue = 8192
	// Payloads are copied into chunks of arenaChunk bytes, which are reused once
	// their batch is written, at most maxFree of them kept; a payload larger than
	// arenaOwn gets an allocation of its own. A doubling arena per batch was a
	// streaming turn's largest garbage.
	arenaChunk = 64 << 10
	arenaOwn   = arenaChunk / 4
	maxFree    = 64
)

// arena holds copies of payloads in chunks, which never move: a copy stays where
// it was made until the arena is emptied (release).
type arena struct {
	chunks [][]byte
}

// copy returns a copy of p in a, in its last chunk or in a new one from free.
func (a *arena) copy(p []byte, free *[][]byte) []byte {
	if len(p) > arenaOwn {
		return append([]byte(nil), p...)
	}
	k := len(a.chunks)
	if k == 0 || cap(a.chunks[k-1])-len(a.chunks[k-1]) < len(p) {
		var c []byte
		if n := len(*free); n > 0 {
			c = (*free)[n-1]
			(*free)[n-1] = nil
			*free = (*free)[:n-1]
		} else {
			c = make([]byte, 0, arenaChunk)
		}
		a.chunks = append(a.chunks, c)
		k++
	}
	c := a.chunks[k-1]
	start := len(c)
	c = append(c, p...)
	a.chunks[k-1] = c
	return c[start:len(c):len(c)]
}

// release empties a, handing its chunks to free (up to maxFree of them).
func (a *arena) release(free *[][]byte) {
	for i, c := range a.chunks {
		if len(*free) < maxFree {
			*free = append(*free, c[:0])
		}
		a.chunks[i] = nil
	}
	a.chunks = a.chunks[:0]
}

func newUpdateLog(ctx context.Context, st *store.Store, log *slog.Logger) *updateLog {
	w := &updateLog{
		ctx: ctx, st: st, log: log,
		wake:    make(chan struct{}, 1),
		stopped: make(chan struct{}),
	}
	w.changed.L = &w.mu
	go w.run()
	return w
}

// add queues one update, with a copy of its payload, so that the caller may reuse
// it, unless stable: the payload is not written again before it is stored (the
// session's tail's, recycle.go). It waits while the queue is full.
func (w *updateLog) add(s *Feed, u store.Update, stable bool) {
	w.mu.Lock()
	for len(w.pending) >= updateQueue && !w.done {
		w.changed.Wait()
	}
	if w.done {
		w.mu.Unlock()
		return
	}
	if w.pending == nil {
		// Grown from nothing, the queue cost a tenth of publishing; once made, it
		// and its arena are kept (a few hundred KiB), swapped with the writer's.
		w.pending = make([]store.Update, 0, updateQueue)
		w.owners = make([]*Feed, 0, updateQueue)
	}
	if !stable {
		u.Payload = w.arena.copy(u.Payload, &w.free)
	}
	w.pending = append(w.pending, u)
	w.owners = append(w.owners, s)
	w.added++
	n := len(w.pending)
	w.mu.Unlock()
	if n == 1 {
		w.signal()
	}
}

func (w *updateLog) signal() {
	select {
	case w.wake <- struct{}{}:
	default: // already signalled
	}
}

// flush returns once every update added before the call is stored (or failed).
func (w *updateLog) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	target := w.added
	if w.written < target {
		w.signal()
	}
	for w.written < target && !w.done {
		w.changed.Wait()
	}
}

// close stores what is queued and stops the writer.
func (w *updateLog) close() {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.signal()
	<-w.stopped
}

func (w *updateLog) run() {
	defer close(w.stopped)
	batch := make([]store.Update, 0, updateQueue)
	owners := make([]*Feed, 0, updateQueue)
	var arena arena
	var marks []commitMark
	var holds []store.Hold
	for range w.wake {
		for {
			w.mu.Lock()
			batch, w.pending = w.pending, batch[:0]
			owners, w.owners = w.owners, owners[:0]
			arena, w.arena = w.arena, arena
			closing := w.closing
			w.mu.Unlock()
			if len(batch) == 0 {
				if !closing {
					break
				}
				w.mu.Lock()
				w.done = true
				w.changed.Broadcast()
				w.mu.Unlock()
				return
			}
			holds = holdsOf(holds[:0], owners) // what the readers still need: not trimmed
			if err := w.st.AppendUpdatesHeld(w.ctx, batch, holds); err != nil {
				// Delivered all the same: the turn fails visibly (docs/protocol.md,
				// "Storage failures"), and the store marks the loss, so a replay
				// across it is replay_truncated.
				w.log.Error("storing updates for replay failed", "updates", len(batch), "err", err)
			}
			marks = commitMarks(marks[:0], batch, owners)
			for _, m := range marks {
				m.s.committedThrough(m.seq)
			}
			clear(marks)
			clear(holds)
			// The cursors just told are pulled by their connections' writers: let
			// them run now, before the next batch is stored. Made runnable on this
			// goroutine's processor, they would otherwise wait for it to block,
			// while the turn's goroutine keeps the other one busy publishing: the
			// first update of a turn reached its client 0.5 ms later.
			runtime.Gosched()
			n := len(batch)
			clear(batch) // the store keeps nothing of it: arena is free again
			clear(owners)
			w.mu.Lock()
			arena.release(&w.free)
			w.written += uint64(n)
			w.changed.Broadcast()
			w.mu.Unlock()
		}
	}
}

// commitMark is the last seq of one session in a stored batch.
type commitMark struct {
	s   *Feed
	seq uint64
}

// commitMarks appends to dst the last seq of each session of batch (owners[i] is
// the session of batch[i]); a batch is mostly one session's.
func commitMarks(dst []commitMark, batch []store.Update, owners []*Feed) []commitMark {
next:
	for i, s := range owners {
		if s == nil { // a test's update of no session
			continue
		}
		seq := batch[i].Seq
		for j := len(dst) - 1; j >= 0; j-- {
			if dst[j].s == s {
				dst[j].seq = max(dst[j].seq, seq)
				continue next
			}
		}
		dst = append(dst, commitMark{s: s, seq: seq})
	}
	return dst
}
