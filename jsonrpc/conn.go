package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/stack"
)

// MaxInFlight is the default bound on requests served at once on one connection.
const MaxInFlight = 64

// Defaults of the outbound notification queue (docs/protocol.md, "Delivery").
const (
	OutboundFrames = 2048
	OutboundBytes  = 4 << 20
)

// ErrClosed is returned by calls on a closed connection, and by pending calls whose
// connection closed before the peer answered.
var ErrClosed = errors.New("jsonrpc: connection closed")

// ErrQueueFull is returned by Notify when the notification does not fit in the
// connection's outbound queue: the peer reads more slowly than it is sent to. Nothing
// was queued; Room tells when there is room again.
var ErrQueueFull = errors.New("jsonrpc: outbound queue full")

// Handler answers the requests and notifications of one connection. Conn calls Handle
// on a goroutine of its own per message (or on the reader goroutine when
// Options.Schedule says Inline or InPlace), so Handle must be safe for concurrent use.
//
// A result is marshaled with encoding/json/v2 (a jsontext.Value goes out as is, an
// Appender appends itself). An *Error answers with its code; any other error answers
// -32603 and is logged. The answer to a notification is discarded.
//
// The ctx of a request served on its own goroutine is its own: it ends when Handle
// returns or the connection closes. An inline request, done before the next frame is
// read, gets the connection's context, which ends when the connection closes.
type Handler interface {
	Handle(ctx context.Context, req *Request) (result any, err error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }

// Options tune a Conn. The zero value is ready to use.
type Options struct {
	// MaxInFlight bounds the requests and notifications served at once; when reached,
	// the connection is not read until one finishes. Zero means MaxInFlight.
	MaxInFlight int
	// Schedule tells how each inbound request or notification is served (see
	// Schedule); nil serves every one as Spawn. The reader calls it once a frame,
	// maybe on a Request in the framer's buffer: it keeps nothing of req (a copy of
	// its ID or Params is fine) past its return.
	Schedule func(*Request) Schedule
	// OutboundFrames and OutboundBytes bound the notifications queued for the peer
	// and not yet written; Notify refuses one that does not fit (ErrQueueFull).
	// Zero means OutboundFrames and OutboundBytes. Responses are never refused.
	OutboundFrames, OutboundBytes int
	// Logger receives connection events; never frame contents. Nil means slog.Default().
	Logger *slog.Logger
}

// Conn is one JSON-RPC connection: either side may send requests. Inbound requests
// go to the Handler concurrently; outbound calls get ids "zc-out-<n>" counting from 0
// and wait in this connection's own pending map, so the peer's ids never collide with
// ours even when textually equal. Every frame goes out through one outbound queue and
// its writer goroutine (outbox.go).
type Conn struct {
	framer   Framer
	handler  Handler
	schedule func(*Request) Schedule
	log      *slog.Logger
	slots    chan struct{}
	urgent   chan struct{} // the slots of priority requests

	ctx    context.Context
	cancel context.CancelFunc

	peek    interface{ Buffered() bool } // the framer, when it can tell; else nil
	taker   frameTaker                   // the framer, when it can hand a frame over; else nil
	out     outbox
	arena   arena   // the reader's allocations (arena.go)
	scratch []byte  // the reader's encoding buffer for inline answers
	one     Request // the request served in place (servedInPlace)

	pendingMu sync.Mutex
	pending   map[string]chan *Response
	nextID    atomic.Uint64

	closeOnce sync.Once
	closed    atomic.Bool
	done      chan struct{}
	inputDone chan struct{} // closed when reading stops
	serving   sync.WaitGroup
}

// NewConn returns a connection over framer; Run starts it.
func NewConn(framer Framer, h Handler, opts Options) *Conn {
	n := opts.MaxInFlight
	if n <= 0 {
		n = MaxInFlight
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Conn{
		framer:    framer,
		handler:   h,
		schedule:  opts.Schedule,
		log:       log,
		slots:     make(chan struct{}, n),
		urgent:    make(chan struct{}, n),
		pending:   make(map[string]chan *Response),
		done:      make(chan struct{}),
		inputDone: make(chan struct{}),
	}
	c.peek, _ = framer.(interface{ Buffered() bool })
	c.taker, _ = framer.(frameTaker)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.out.init(c, opts.OutboundFrames, opts.OutboundBytes)
	return c
}

// Run reads and serves frames until the peer hangs up, a framing violation, or Close.
// Pending calls then fail. After a clean end of input the running handlers still
// answer, and the queued frames are written; then the connection closes. Run returns
// once every handler has returned, with why reading stopped (nil for a clean end).
func (c *Conn) Run() error {
	err := c.readLoop()
	close(c.inputDone) // no answer to our calls can arrive any more
	var fe *FrameError
	switch {
	case errors.Is(err, io.EOF):
		// The peer may have only half-closed: it still reads the answers to what it
		// asked. A peer that is gone entirely fails the next write, which closes us.
		c.serving.Wait()
		c.out.waitWritten()
	case errors.As(err, &fe):
		c.out.waitWritten() // the -32600 reply leaves before the connection closes
	}
	c.Close()
	c.serving.Wait()
	if errors.Is(err, io.EOF) || (err != nil && c.closedLocally(err)) {
		return nil
	}
	return err
}

func (c *Conn) closedLocally(err error) bool {
	var fe *FrameError
	return !errors.As(err, &fe) && c.closed.Load()
}

func (c *Conn) readLoop() error {
	for {
		// Answers of inline requests wait in the queue while more frames are already
		// buffered, so that a pipelining client gets them in one write; the writer is
		// started before the reader can block, so no answer waits for the client's
		// next request. A peer that sends without reading is not read further while
		// too many answers wait for it: that is its backpressure.
		burst := c.buffered()
		if !burst {
			c.out.startFromReader()
			c.arena.drop()
		}
		if !c.out.waitForRoom() {
			return ErrClosed
		}
		line, err := c.framer.ReadFrame()
		if err != nil {
			var fe *FrameError
			if errors.As(err, &fe) {
				c.writeError(NullID, fe.Reply())
				c.out.start()
			}
			return err
		}
		served, sched, scheduled := c.servedInPlace(line)
		if served {
			continue
		}
		// Other handlers outlive the framer's buffer. A frame of a burst is copied
		// into the arena, with its Request: a lone one is allocated on its own, and a
		// large one (an upload chunk) is taken from the framer, not copied.
		var frame, taken []byte
		var env Envelope
		switch {
		case c.taker != nil && c.taker.TakeFrame(line):
			frame, taken = line, line
			env = classify(frame, nil)
		case burst:
			frame = c.arena.clone(line)
			env = classify(frame, &c.arena)
		default:
			frame = bytes.Clone(line)
			env = classify(frame, nil)
		}
		switch {
		case env.Reject != nil:
			c.writeError(env.Reject.ID, env.Reject.Error)
		case env.Dropped != "":
			c.log.Warn("dropped malformed response", "reason", env.Dropped)
		case env.Response != nil:
			c.deliver(env.Response)
		case env.Request != nil:
			if !scheduled {
				sched = c.scheduleOf(env.Request)
			}
			if !c.dispatch(env.Request, taken, sched) {
				return ErrClosed
			}
		}
	}
}

// inPlaceMax bounds the frames the reader tries to serve in place: a larger one is
// no quick call's.
const inPlaceMax = 1 << 10

// servedInPlace serves line, when it is a request scheduled InPlace, straight
// from the framer's buffer, with the reader's own Request: its handler keeps
// nothing of it, and its answer is queued (copied) before the next frame is read,
// so nothing of it is copied or allocated. It reports whether it served line;
// when not, line is classified again from a copy, as any frame is, and scheduled
// tells whether sched is its schedule already (Options.Schedule is asked once a
// frame).
func (c *Conn) servedInPlace(line []byte) (served bool, sched Schedule, scheduled bool) {
	if c.schedule == nil || len(line) == 0 || len(line) > inPlaceMax || line[0] != '{' {
		return false, Spawn, false
	}
	c.arena.one = &c.one
	env := classify(line, &c.arena)
	c.arena.one = nil
	if req := env.Request; req == &c.one {
		sched, scheduled = c.schedule(req), true
		if served = sched.Mode() == InPlace; served {
			c.serveInline(req, nil, sched)
		}
	}
	c.one = Request{}
	return served, sched, scheduled
}

// dispatch serves req: inline, or on a goroutine of its own once it has a slot. The
// wait for a slot is the backpressure (docs/protocol.md, "Limits"); priority requests
// wait only for each other. It reports false when the connection closed while
// waiting. taken is req's frame when the reader took it from the framer (a large
// one), else nil; sched is req's Schedule.
func (c *Conn) dispatch(req *Request, taken []byte, sched Schedule) bool {
	switch sched.Mode() {
	case Ordered:
		done := make(chan []byte)
		var queued func()
		go func() {
			msg, q := c.answer(c.ctx, req, nil)
			queued = q
			done <- msg
		}()
		msg := <-done
		c.recycle(sched, taken)
		if msg != nil {
			c.out.push(msg, frameResponse, false, false)
		}
		runQueued(queued)
		return true
	case Inline, InPlace:
		c.serveInline(req, taken, sched)
		return true
	}
	slots := c.slots
	if sched.Mode() == Priority {
		slots = c.urgent
	}
	select {
	case slots <- struct{}{}:
	default:
		// The answers queued so far must not wait for a slot to free up.
		c.out.start()
		select {
		case slots <- struct{}{}:
		case <-c.done:
			return false
		}
	}
	c.serving.Add(1)
	go func() {
		stack.Reserve() // a request's handler may well reach the store
		defer func() {
			<-slots
			c.serving.Done()
		}()
		ctx, cancel := context.WithCancel(c.ctx)
		defer cancel()
		msg, queued := c.answer(ctx, req, nil)
		c.recycle(sched, taken)
		if msg != nil {
			c.out.push(msg, frameResponse, true, false)
		}
		runQueued(queued)
	}()
	return true
}

// Queued is a result that wants to know when its response is in the connection's
// outbound queue: every frame queued after that call leaves after the response.
// Conn calls Queued once, also when the response could not be queued (the
// connection closed) or the request was a notification.
type Queued interface {
	Queued()
}

func runQueued(f func()) {
	if f != nil {
		f()
	}
}

// serveInline serves req on the reader; taken and sched as for recycle.
func (c *Conn) serveInline(req *Request, taken []byte, sched Schedule) {
	// Encoded in the reader's scratch buffer, which the queue copies.
	msg, queued := c.answer(c.ctx, req, c.scratch[:0])
	c.recycle(sched, taken)
	if msg != nil {
		c.out.push(msg, frameResponse, false, true)
		if cap(msg) <= 4<<10 { // an idle connection keeps no large buffer
			c.scratch = msg[:0]
		}
	}
	runQueued(queued)
}

// recycle gives the framer back a frame the reader took, once req is answered
// (its answer encoded), when its schedule has Recycle: the handler kept nothing of it.
func (c *Conn) recycle(sched Schedule, taken []byte) {
	if taken != nil && sched&Recycle != 0 {
		c.taker.ReturnFrame(taken)
	}
}

// answer runs the handler and encodes its answer (nil for a notification) into dst,
// or into a buffer of its own when dst is nil. queued, when not nil, is to be called
// once the answer is queued (Queued).
func (c *Conn) answer(ctx context.Context, req *Request, dst []byte) (msg []byte, queued func()) {
	result, err := c.call(ctx, req)
	if q, ok := result.(Queued); ok {
		queued = q.Queued
	}
	if req.IsNotification() {
		if err != nil {
			c.log.Debug("notification failed", "method", req.Method, "err", err)
		}
		return nil, queued
	}
	if err == nil {
		if dst == nil {
			dst = c.buffer(256)
		}
		if msg, err = appendResultOf(dst, req.ID, result); err == nil {
			return msg, queued
		}
		err = fmt.Errorf("encoding the result of %s: %w", req.Method, err)
	}
	var e *Error
	if !errors.As(err, &e) {
		if !c.closed.Load() {
			c.log.Error("request failed", "method", req.Method, "err", err)
		}
		e = &Error{Code: CodeInternalError, Message: "internal error"}
	}
	if dst == nil {
		dst = c.buffer(len(e.Message) + len(e.Data))
	}
	return AppendError(dst, req.ID, e), queued
}

// call runs the handler, turning a panic into an internal error so one bad request
// cannot take the daemon down.
func (c *Conn) call(ctx context.Context, req *Request) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panicked", "method", req.Method, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return c.handler.Handle(ctx, req)
}

// Close closes the connection: the contexts end, pending calls fail with ErrClosed,
// queued frames are discarded and the framer is closed. It is safe to call more than
// once and from any goroutine.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.pendingMu.Lock()
		c.closed.Store(true)
		c.pendingMu.Unlock()
		c.cancel()
		close(c.done)
		c.framer.Close()
		c.out.close()
	})
	return nil
}

// Shutdown stops reading: requests already read are served and answered, then the
// connection closes. A framer that cannot stop reading on its own is closed at once.
func (c *Conn) Shutdown() {
	if cr, ok := c.framer.(interface{ CloseRead() error }); ok && cr.CloseRead() == nil {
		return
	}
	c.Close()
}

// Done is closed when the connection closes.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Context ends when the connection closes.
func (c *Conn) Context() context.Context { return c.ctx }

func (c *Conn) writeError(id ID, e *Error) {
	c.out.push(AppendError(c.buffer(len(e.Message)+len(e.Data)), id, e), frameResponse, false, false)
}

// buffered reports whether the framer holds another complete frame, so that the next
// read cannot block.
func (c *Conn) buffered() bool { return c.peek != nil && c.peek.Buffered() }

// frameTaker is a Framer that can hand the buffer of the frame it just returned
// over, instead of the Conn copying a large frame, and take such a buffer back
// for later frames once nothing refers to it (NDJSON.TakeFrame, ReturnFrame).
type frameTaker interface {
	TakeFrame(line []byte) bool
	ReturnFrame(line []byte)
}

// BatchWriter is a Framer that can write several messages at once. Conn's writer uses
// it for everything that gathered while its previous write ran.
type BatchWriter interface {
	// WriteFrames writes msgs in order, as WriteFrame would one by one. It may
	// append to each msg within its capacity.
	WriteFrames(msgs [][]byte) error
}

// buffer returns an empty slice with room for a message of about n payload bytes plus
// the envelope and the framer's newline.
func (c *Conn) buffer(n int) []byte { return make([]byte, 0, n+96) }

func shortID(id ID) string {
	if len(id) > 64 {
		return string(id[:64]) + "…"
	}
	return string(id)
}
