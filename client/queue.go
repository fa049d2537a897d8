package client

import (
	"context"
	"sync"
)

// updateQueue keeps session/update notifications in arrival order between the
// connection's reader (which must never wait for a callback, or the answers the
// callback waits for could not be read) and the one goroutine that runs callbacks.
// It is unbounded: the daemon produces updates only as fast as its turns run, and a
// slow callback must not make it drop any.
type updateQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	items   []Update
	in, out uint64 // updates pushed, updates delivered
	closed  bool
	stopped bool // run has returned, or is about to
	exited  chan struct{}
}

func newUpdateQueue() *updateQueue {
	q := &updateQueue{exited: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *updateQueue) push(u Update) {
	q.mu.Lock()
	q.items = append(q.items, u)
	q.in++
	q.mu.Unlock()
	q.cond.Broadcast()
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
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.mu.Unlock()
		q.cond.Broadcast()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.out < n && !q.stopped && ctx.Err() == nil {
		q.cond.Wait()
	}
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
