package session

import (
	"context"
	"log/slog"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// updateLog writes published updates to the store behind the live stream, in batches
// (group commit), so that a turn streaming thousands of chunks a second is not held
// to one transaction per chunk. Its queue is bounded: when the store falls behind,
// publishing waits (backpressure), it never drops. What a crash loses is the tail of
// the replay log, never a seq: seqs are reserved durably before they are used.
type updateLog struct {
	ctx     context.Context
	st      *store.Store
	log     *slog.Logger
	queue   chan store.Update
	flushes chan chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

const (
	updateQueue = 4096
	updateBatch = 512
)

func newUpdateLog(ctx context.Context, st *store.Store, log *slog.Logger) *updateLog {
	w := &updateLog{
		ctx: ctx, st: st, log: log,
		queue:   make(chan store.Update, updateQueue),
		flushes: make(chan chan struct{}),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go w.run()
	return w
}

// add queues one update; the payload must not change afterwards.
func (w *updateLog) add(u store.Update) {
	select {
	case w.queue <- u:
	case <-w.stopped:
	}
}

// flush returns once every update added before the call is stored (or failed).
func (w *updateLog) flush() {
	done := make(chan struct{})
	select {
	case w.flushes <- done:
		<-done
	case <-w.stopped:
	}
}

// close stores what is queued and stops the writer.
func (w *updateLog) close() {
	close(w.stop)
	<-w.stopped
}

func (w *updateLog) run() {
	defer close(w.stopped)
	batch := make([]store.Update, 0, updateBatch)
	for {
		select {
		case u := <-w.queue:
			batch = w.write(append(batch, u))
		case done := <-w.flushes:
			batch = w.drain(batch)
			close(done)
		case <-w.stop:
			w.drain(batch)
			return
		}
	}
}

// drain writes until nothing is queued. Only run receives from the queue, so its
// length can only grow meanwhile.
func (w *updateLog) drain(batch []store.Update) []store.Update {
	batch = w.write(batch)
	for len(w.queue) > 0 {
		batch = w.write(batch)
	}
	return batch
}

// write takes whatever else is queued, up to a batch, and stores it all in one
// transaction; it returns the emptied batch for reuse.
func (w *updateLog) write(batch []store.Update) []store.Update {
	for len(batch) < updateBatch {
		select {
		case u := <-w.queue:
			batch = append(batch, u)
			continue
		default:
		}
		break
	}
	if len(batch) == 0 {
		return batch
	}
	if err := w.st.AppendUpdates(w.ctx, batch); err != nil {
		w.log.Error("storing updates for replay failed", "updates", len(batch), "err", err)
	}
	clear(batch)
	return batch[:0]
}
