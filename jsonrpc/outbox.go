package jsonrpc

import (
	"bytes"
	"encoding/json/jsontext"
	"runtime"
	"sync"
	"sync/atomic"
)

// frameKind tells the outbound queue how to account for a frame.
type frameKind uint8

const (
	// frameResponse is a response, an error reply or a request of ours: never refused.
	frameResponse frameKind = iota
	// frameNotification is a notification of ours: refused when the queue is full.
	frameNotification
	// framePaced is a notification sent at the peer's pace (NotifyPaced): refused
	// while a window of them waits (paced.go).
	framePaced
)

// outbox is a connection's one outbound queue and its writer. Every frame the
// connection sends is appended to the queue, in the order the senders reach it; one
// writer goroutine takes all of it at once and writes it in one write
// (BatchWriter), and again while more gathered meanwhile. The writer exists only
// while there is output, so an idle connection costs no goroutine for writing; at
// most one runs at a time, and it alone writes to the framer, so frames never
// interleave. A write that stalls for the framer's write timeout fails and closes
// the connection.
//
// Notifications are bounded: at most maxFrames of them and maxBytes of their bytes
// may be queued or being written, and one that does not fit is refused (a lone
// notification larger than maxBytes is taken when none is queued, so that no
// notification is undeliverable). Responses are never refused; the reader stops
// reading while maxBytes of them wait, so a peer that sends without reading only
// stalls itself.
type outbox struct {
	c                   *Conn
	maxFrames, maxBytes int

	mu   sync.Mutex
	cond sync.Cond // broadcast after each write and at close
	// queue holds the frames not yet taken by the writer; spare is the slice of a
	// finished batch, kept for the next one. Over a StreamFramer the frames are
	// appended to stream instead, framed, in buffers of about streamChunk from a
	// shared pool that the writer hands back once written: no copy per frame, none
	// held when idle, and a long burst fills more buffers instead of growing one by
	// doubling (each doubling a copy and an allocation of the whole backlog).
	queue, spare        [][]byte
	framer              StreamFramer // nil when the framer is not one
	stream, spareStream []segment
	queued              int // frames not yet taken by the writer
	// Totals of what is queued or being written, and the part of them still queued.
	notes, noteBytes, answerBytes    int
	qNotes, qNoteBytes, qAnswerBytes int
	paced, qPaced                    int  // bytes of paced notifications (paced.go)
	writing                          bool // a writer goroutine runs
	// heavy mirrors answerBytes >= maxBytes, so the reader checks it without the lock.
	heavy atomic.Bool
	// pacedIn and pacedOut count the bytes of paced notifications ever queued, and
	// of those ever written or discarded (Conn.PacedBytes).
	pacedIn, pacedOut atomic.Uint64
	dropped           int // paced bytes close dropped while a writer ran
	closed            bool
	room              chan struct{} // see Conn.Room; nil until asked for
	// wants are the Pullers that wait for room in the paced window (Conn.Want).
	wants []Puller
	// pieces is the writer's scratch list of the segments one writeStream call
	// writes together; only the writer touches it.
	pieces [][]byte
}

func (o *outbox) init(c *Conn, maxFrames, maxBytes int) {
	if maxFrames <= 0 {
		maxFrames = OutboundFrames
	}
	if maxBytes <= 0 {
		maxBytes = OutboundBytes
	}
	o.c, o.maxFrames, o.maxBytes = c, maxFrames, maxBytes
	o.framer, _ = c.framer.(StreamFramer)
	o.cond.L = &o.mu
}

// push queues msg, which it may keep (borrowed: only until it returns). With kick it
// starts the writer when none runs; without, the frame waits for the next start (the
// reader's held answers). It fails with ErrClosed once the connection closed, and a
// notification with ErrQueueFull when it does not fit.
//
// A notification that leaves the queue more than half full yields the processor
// once: a sender that never blocks (a turn streaming from a fast model) would
// otherwise fill the queue before the writer it started is even scheduled, and
// detach a client that reads as fast as the socket allows. Yielding is not waiting
// for the peer: the writer runs until its write blocks, and the sender goes on.
func (o *outbox) push(msg []byte, kind frameKind, kick, borrowed bool) error {
	o.mu.Lock()
	if err := o.admitLocked(len(msg), kind); err != nil {
		o.mu.Unlock()
		return err
	}
	switch {
	case o.framer != nil:
		o.appendStream(msg)
	case borrowed:
		o.queue = append(o.queue, bytes.Clone(msg))
	default:
		o.queue = append(o.queue, msg)
	}
	o.queuedLocked(kind, kick)
	return nil
}

// admitLocked counts a frame of n bytes against the bounds, or refuses it (push).
func (o *outbox) admitLocked(n int, kind frameKind) error {
	if o.closed {
		return ErrClosed
	}
	if kind == framePaced {
		return o.admitPacedLocked(n)
	}
	if kind == frameNotification {
		if o.notes > 0 && (o.notes+1 > o.maxFrames || o.noteBytes+n > o.maxBytes) {
			return ErrQueueFull
		}
		o.notes++
		o.noteBytes += n
		o.qNotes++
		o.qNoteBytes += n
	} else {
		o.answerBytes += n
		o.qAnswerBytes += n
		o.heavy.Store(o.answerBytes >= o.maxBytes)
	}
	return nil
}

// queuedLocked ends a push: the frame is queued; it unlocks mu.
func (o *outbox) queuedLocked(kind frameKind, kick bool) {
	o.queued++
	if kick {
		o.startLocked()
	}
	yield := kind == frameNotification && !o.roomy()
	o.mu.Unlock()
	if yield {
		runtime.Gosched()
	}
}

// pushNotification is push of the notification {method, params} over the NDJSON
// framer, whose framing is a newline: the frame is written straight into the
// stream, with no message assembled first and copied. method must need no
// escaping (plainMethod).
func (o *outbox) pushNotification(method string, params []byte, kind frameKind) error {
	n := notificationSize(method, params)
	o.mu.Lock()
	if err := o.admitLocked(n, kind); err != nil {
		o.mu.Unlock()
		return err
	}
	o.appendNotificationLocked(method, params, n)
	o.queuedLocked(kind, true)
	return nil
}

// notificationSize is the size of the frame pushNotification writes.
func notificationSize(method string, params []byte) int {
	n := len(notificationHead) + len(method) + 2 + 1
	if len(params) > 0 {
		n += len(paramsKey) + len(params)
	}
	return n
}

// appendNotificationLocked writes the frame of {method, params}, n bytes, into the
// stream; mu is held and the frame admitted.
func (o *outbox) appendNotificationLocked(method string, params []byte, n int) {
	b := o.streamBuffer(n)
	buf := append(*b, notificationHead...)
	buf = append(append(append(buf, '"'), method...), '"')
	if len(params) > 0 {
		buf = append(append(buf, paramsKey...), params...)
	}
	*b = append(buf, '}', '\n')
}

const (
	notificationHead = `{"jsonrpc":"2.0","method":`
	paramsKey        = `,"params":`
)

// plainMethod reports whether method is quoted by adding quotes alone: printable
// ASCII without quote or backslash, as every method name of the protocol is.
func plainMethod(method string) bool {
	for i := 0; i < len(method); i++ {
		if c := method[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// start starts the writer when frames wait and none runs.
func (o *outbox) start() {
	o.mu.Lock()
	o.startLocked()
	o.mu.Unlock()
}

func (o *outbox) startLocked() {
	if !o.writing && !o.closed && (o.queued > 0 || o.pullableLocked()) {
		o.writing = true
		go o.run(false)
	}
}

// inlineWrite bounds what the reader writes itself (startFromReader).
const inlineWrite = 4 << 10

// startFromReader is start for the reader that is about to block in read. When no
// writer runs and all that waits is a few answers, the reader writes them itself: a
// lone request then costs no hand-off to another goroutine, which was most of its
// round trip. Anything more, or anything queued while it writes, goes to the writer
// goroutine as start would. A write this small blocks only when the peer has left
// hundreds of KiB unread; the reader then waits, which is that peer's backpressure,
// and a write stalled past the framer's timeout closes the connection as always.
func (o *outbox) startFromReader() {
	o.mu.Lock()
	if o.writing || o.closed || (o.queued == 0 && !o.pullableLocked()) {
		o.mu.Unlock()
		return
	}
	if o.qNotes > 0 || o.qPaced > 0 || o.qAnswerBytes > inlineWrite || len(o.wants) > 0 {
		o.startLocked()
		o.mu.Unlock()
		return
	}
	o.writing = true
	o.mu.Unlock()
	o.run(true)
}

// run is the writer: it writes the queue until it is empty, each time all of it in
// one write (over a StreamFramer, one per buffer of about streamChunk bytes), and
// whenever the paced window has room and a Puller waits, it first pulls from it
// (Conn.Want). With once (the reader writing, startFromReader), it writes one
// batch and hands what queued meanwhile, and any pull, to a writer goroutine.
func (o *outbox) run(once bool) {
	o.mu.Lock()
	// pulled: a Puller was called since the last write. Another is called before
	// the next write only when nothing is queued, so that a Puller whose next
	// frame does not fit beside what is queued gets room by the write.
	pulled := false
	for first := true; !o.closed; first = false {
		pull := o.pullableLocked() && (!pulled || o.queued == 0)
		if o.queued == 0 && !pull {
			break
		}
		if once && (!first || pull) {
			go o.run(false) // still writing: the goroutine takes over
			o.mu.Unlock()
			return
		}
		if pull {
			o.pullLocked()
			pulled = true
			continue
		}
		pulled = false
		batch, stream := o.queue, o.stream
		o.queue, o.spare, o.stream, o.spareStream, o.queued = o.spare, nil, o.spareStream, nil, 0
		notes, noteBytes, answerBytes := o.qNotes, o.qNoteBytes, o.qAnswerBytes
		o.qNotes, o.qNoteBytes, o.qAnswerBytes = 0, 0, 0
		paced := o.qPaced
		o.qPaced = 0
		o.mu.Unlock()

		var err error
		if len(stream) > 0 {
			err = o.writeStream(stream)
		} else {
			err = o.c.writeFrames(batch)
			clear(batch)
		}

		o.mu.Lock()
		o.notes -= notes
		o.noteBytes -= noteBytes
		o.paced -= paced
		o.pacedOut.Add(uint64(paced))
		o.answerBytes -= answerBytes
		o.heavy.Store(o.answerBytes >= o.maxBytes)
		if cap(batch) <= 1024 {
			o.spare = batch[:0]
		}
		if cap(stream) <= 64 && o.spareStream == nil {
			o.spareStream = stream[:0]
		}
		o.signalRoom()
		o.cond.Broadcast()
		if err != nil {
			o.mu.Unlock()
			o.c.log.Info("write failed; closing connection", "err", err)
			o.c.Close() // takes o.mu
			o.mu.Lock()
		}
	}
	o.writing = false
	o.pacedOut.Add(uint64(o.dropped)) // what close dropped meanwhile (close)
	o.dropped = 0
	if cap(o.spare) > 64 { // the burst is done: an idle connection keeps a small slice
		o.spare = nil
	}
	if len(o.stream) == 0 { // nothing queued: an idle connection keeps no slice
		o.stream, o.spareStream = nil, nil
	}
	o.cond.Broadcast()
	o.mu.Unlock()
}

// waitWritten returns once everything queued has been written, or the connection
// closed.
func (o *outbox) waitWritten() {
	o.mu.Lock()
	for (o.writing || o.queued > 0) && !o.closed {
		o.startLocked()
		o.cond.Wait()
	}
	o.mu.Unlock()
}

// waitForRoom holds the reader while maxBytes of answers wait to be written, and
// reports false when the connection closed meanwhile.
func (o *outbox) waitForRoom() bool {
	if !o.heavy.Load() {
		return !o.c.closed.Load()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.answerBytes >= o.maxBytes && !o.closed {
		o.startLocked()
		o.cond.Wait()
	}
	return !o.closed
}

// roomy reports whether the notifications fill at most half of both bounds.
func (o *outbox) roomy() bool {
	return o.notes <= o.maxFrames/2 && o.noteBytes <= o.maxBytes/2
}

func (o *outbox) signalRoom() {
	if o.room != nil && o.roomy() {
		close(o.room)
		o.room = nil
	}
}

// close discards the queue and wakes everyone who waits on it.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	// The queued paced bytes are dropped. While a writer runs, they count as
	// released only once it is done: its write may still read frames queued
	// before them, and released passes a queued count in order.
	if o.writing {
		o.dropped += o.qPaced
	} else {
		o.pacedOut.Add(uint64(o.qPaced))
	}
	o.qPaced = 0
	clear(o.queue)
	o.queue, o.stream, o.spareStream, o.queued = nil, nil, nil, 0
	if o.room != nil {
		close(o.room)
		o.room = nil
	}
	clear(o.wants)
	o.wants = nil
	o.cond.Broadcast()
	o.mu.Unlock()
}

var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// Notify queues a notification to the peer and returns at once: it never waits for
// the peer. It fails with ErrQueueFull when the outbound queue holds
// Options.OutboundFrames notifications or Options.OutboundBytes of them (nothing is
// queued then), and with ErrClosed once the connection closed. Notifications leave in
// the order Notify queued them, and after every response queued before them.
func (c *Conn) Notify(method string, params any) error {
	return c.notify(method, params, frameNotification)
}

// NotifyUnbounded queues a notification as a response is queued: never refused for
// a full queue, nor counted against its bounds. It is for the one notice that tells
// the peer a notification did not fit (docs/protocol.md, "Delivery": lagged), which
// must leave right behind the last notification the peer was sent, before any later
// response.
func (c *Conn) NotifyUnbounded(method string, params any) error {
	return c.notify(method, params, frameResponse)
}

// NotifyValue is Notify with params already encoded, which it sends as they are:
// nothing is boxed or encoded on the way, for the notifications a streaming turn
// sends by the thousand.
func (c *Conn) NotifyValue(method string, params jsontext.Value) error {
	return c.notifyEncoded(method, params, frameNotification)
}

func (c *Conn) notify(method string, params any, kind frameKind) error {
	p, err := encodeParams(params)
	if err != nil {
		return err
	}
	return c.notifyEncoded(method, p, kind)
}

func (c *Conn) notifyEncoded(method string, p jsontext.Value, kind frameKind) error {
	if _, ndjson := c.out.framer.(*NDJSON); ndjson && plainMethod(method) {
		return c.out.pushNotification(method, p, kind)
	}
	if c.out.framer != nil {
		// The queue copies the frame into its stream: encode it in a scratch buffer.
		bp := scratchBuffers.Get().(*[]byte)
		msg, err := AppendRequest((*bp)[:0], nil, method, p)
		if err == nil {
			err = c.out.push(msg, kind, true, true)
		}
		if cap(msg) <= 64<<10 {
			*bp = msg[:0]
			scratchBuffers.Put(bp)
		}
		return err
	}
	msg, err := AppendRequest(c.buffer(len(p)+len(method)), nil, method, p)
	if err != nil {
		return err
	}
	return c.out.push(msg, kind, true, false)
}

// scratchBuffers hold the buffers notifications are encoded in before the queue
// copies them.
var scratchBuffers = sync.Pool{New: func() any { return new([]byte) }}

// Room returns a channel that is closed once the queued notifications fill at most
// half of the outbound bounds (at once when they already do), or the connection
// closes. A sender that got ErrQueueFull waits on it before sending again; all
// callers waiting at one time share one channel.
func (c *Conn) Room() <-chan struct{} {
	o := &c.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.roomy() {
		return closedChan
	}
	if o.room == nil {
		o.room = make(chan struct{})
	}
	return o.room
}

func (c *Conn) writeFrames(msgs [][]byte) error {
	if bw, ok := c.framer.(BatchWriter); ok && len(msgs) > 1 {
		return bw.WriteFrames(msgs)
	}
	for _, m := range msgs {
		if err := c.framer.WriteFrame(m); err != nil {
			return err
		}
	}
	return nil
}
