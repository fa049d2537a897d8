package client

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// Bounds of the update queue, the same as the daemon's per-connection queue
// (docs/protocol.md, "Delivery"): whichever fills first.
const (
	DefaultQueueFrames = 2048
	DefaultQueueBytes  = 4 << 20
)

// UpdateLagged is the Type of the Update a callback receives when the client had to
// discard updates of a session (see LaggedError). The daemon sends the same type,
// with the same meaning, when its own queue for this connection overflowed.
const UpdateLagged = protocol.Lagged

// updateQueue keeps session/update notifications in arrival order between the
// connection's reader (which must never wait for a callback, or the answers the
// callback waits for could not be read) and the one goroutine that runs callbacks.
//
// It is bounded like the daemon's queue (frames and bytes). The reader cannot wait
// for room, so an update that does not fit is not queued, and from then on the
// client discards every update of that session on this connection: a partial stream
// would be worse than none. Nothing is lost silently: right behind the session's
// last queued update the callback gets one Update{Type: "lagged", AfterSeq}, and the
// Prompt or Attach in flight on that session returns a *LaggedError. The caller
// recovers everything after AfterSeq with Attach on a new connection, where the
// daemon guarantees no gap and no duplicate (this one stays attached to the session,
// so the daemon would send the live updates twice).
type updateQueue struct {
	maxFrames, maxBytes int
	log                 *slog.Logger // told at once when a session starts lagging

	mu      sync.Mutex
	cond    *sync.Cond
	items   []Update
	bytes   int               // of the queued updates' Raw
	in, out uint64            // updates pushed, updates delivered
	last    map[string]uint64 // per session: the seq of the last update queued
	lagged  map[string]uint64 // per session whose updates are discarded: its AfterSeq
	closed  bool
	stopped bool // run has returned, or is about to
	exited  chan struct{}
}

func newUpdateQueue(maxFrames, maxBytes int, log *slog.Logger) *updateQueue {
	if maxFrames <= 0 {
		maxFrames = DefaultQueueFrames
	}
	if maxBytes <= 0 {
		maxBytes = DefaultQueueBytes
	}
	q := &updateQueue{
		maxFrames: maxFrames, maxBytes: maxBytes, log: log,
		last: make(map[string]uint64), lagged: make(map[string]uint64),
		exited: make(chan struct{}),
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// push queues u, or discards it when its session lags or it does not fit. It never
// waits.
func (q *updateQueue) push(u Update) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, lagging := q.lagged[u.SessionID]; lagging {
		return
	}
	if len(q.items) >= q.maxFrames || (len(q.items) > 0 && q.bytes+len(u.Raw) > q.maxBytes) {
		after := q.last[u.SessionID]
		q.lagged[u.SessionID] = after
		// The callback learns of it only behind what is queued; the log, now.
		q.log.Warn("the update queue is full; discarding the session's updates on this connection",
			"session", u.SessionID, "afterSeq", after, "queued", len(q.items), "queuedBytes", q.bytes)
		// The notice goes behind what is queued, beyond the bound: one per session.
		q.items = append(q.items, Update{SessionID: u.SessionID, Type: UpdateLagged, AfterSeq: after})
		q.in++
		q.cond.Broadcast()
		return
	}
	q.items = append(q.items, u)
	q.bytes += len(u.Raw)
	q.in++
	if u.Seq > q.last[u.SessionID] {
		q.last[u.SessionID] = u.Seq
	}
	q.cond.Broadcast()
}

// laggedAt reports whether the session's updates are being discarded, and its
// AfterSeq.
func (q *updateQueue) laggedAt(sessionID string) (uint64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	after, ok := q.lagged[sessionID]
	return after, ok
}

func (q *updateQueue) pushed() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.in
}

// run delivers updates until the queue is closed and empty.
func (q *updateQueue) run(deliver func(Update)) {
	defer close(q.exited)
	for {
		q.mu.Lock()
		for len(q.items) == 0 && !q.closed {
			q.cond.Wait()
		}
		if len(q.items) == 0 {
			q.stopped = true
			q.mu.Unlock()
			q.cond.Broadcast()
			return
		}
		u := q.items[0]
		q.items[0] = Update{}
		q.items = q.items[1:]
		q.bytes -= len(u.Raw) // a lagged notice has none
		q.mu.Unlock()
		deliver(u)
		q.mu.Lock()
		q.out++
		q.mu.Unlock()
		q.cond.Broadcast()
	}
}

// waitDelivered waits until n updates have been delivered, the queue has stopped, or
// ctx ends.
func (q *updateQueue) waitDelivered(ctx context.Context, n uint64) {
	q.waitUntil(ctx, func() bool { return q.out >= n })
}

// waitUntil waits, woken by every push and delivery, until cond (called holding mu)
// holds, the queue has stopped, or ctx ends; it reports whether cond held.
func (q *updateQueue) waitUntil(ctx context.Context, cond func() bool) bool {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.mu.Unlock()
		q.cond.Broadcast()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for !cond() && !q.stopped && ctx.Err() == nil {
		q.cond.Wait()
	}
	return cond()
}

// close lets run finish once the queued updates are delivered.
func (q *updateQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// wait waits for run to return.
func (q *updateQueue) wait() { <-q.exited }

// LaggedError is returned by Prompt and Attach (Prompt with its result) when the
// client discarded updates of the session because its update queue was full: the
// callback was slower than the daemon's stream for 2,048 updates or 4 MiB
// (WithUpdateQueue). The callback has received every update up to AfterSeq, then an
// Update of type "lagged". This connection delivers no more updates of the session;
// Attach(SessionID, AfterSeq) on a new connection delivers every later one.
type LaggedError struct {
	SessionID string
	AfterSeq  uint64
}

func (e *LaggedError) Error() string {
	return fmt.Sprintf("updates of session %s after seq %d were discarded: the update callback fell behind; "+
		"attach again with afterSeq %d on a new connection", e.SessionID, e.AfterSeq, e.AfterSeq)
}
