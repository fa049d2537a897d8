package web

import "sync"

// Bounds of a tab's outbox: the daemon's frames read for a tab and not yet written
// to its WebSocket. A burst waits here while the browser catches up, so the
// daemon's writer of the tab's connection is not held by each WebSocket write; what
// a tab is further behind than that, the daemon keeps for it (rpc.replay_bytes,
// docs/protocol.md, "No reader is lost"). A tab that stays behind fills it, and the
// bridge then stops reading its daemon connection, which the daemon lags like any
// slow client.
const (
	outboxBytes  = 1 << 20
	outboxFrames = 1 << 12
)

// outbox is a bounded FIFO of frames between one reader and one writer.
type outbox struct {
	mu     sync.Mutex
	cond   *sync.Cond
	q      [][]byte
	bytes  int
	closed bool
	// waiting, when set (tests), is told each time a push starts waiting for room.
	waiting chan<- struct{}
}

func newOutbox() *outbox {
	o := &outbox{}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// push appends a copy of f, waiting while the outbox is full (one frame always
// fits an empty outbox). It reports false once the outbox is closed.
func (o *outbox) push(f []byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for !o.closed && len(o.q) > 0 && (o.bytes+len(f) > outboxBytes || len(o.q) >= outboxFrames) {
		if o.waiting != nil {
			o.waiting <- struct{}{}
		}
		o.cond.Wait()
	}
	if o.closed {
		return false
	}
	o.q = append(o.q, append([]byte(nil), f...))
	o.bytes += len(f)
	o.cond.Broadcast()
	return true
}

// pop takes the oldest frame, waiting while there is none; after close it still
// hands out what was pushed before, then reports false.
func (o *outbox) pop() ([]byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.q) == 0 && !o.closed {
		o.cond.Wait()
	}
	if len(o.q) == 0 {
		return nil, false
	}
	f := o.q[0]
	o.q[0] = nil
	o.q = o.q[1:]
	if len(o.q) == 0 {
		o.q = nil // give a burst's backing array back
	}
	o.bytes -= len(f)
	o.cond.Broadcast()
	return f, true
}

// close wakes both sides: push fails from now on, pop drains what is left.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.cond.Broadcast()
	o.mu.Unlock()
}

// discard drops what is left (the tab is gone).
func (o *outbox) discard() {
	o.mu.Lock()
	o.closed = true
	o.q, o.bytes = nil, 0
	o.cond.Broadcast()
	o.mu.Unlock()
}
