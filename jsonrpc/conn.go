package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
)

// MaxInFlight is the default bound on requests served at once on one connection.
const MaxInFlight = 64

// ErrClosed is returned by calls on a closed connection, and by pending calls whose
// connection closed before the peer answered.
var ErrClosed = errors.New("jsonrpc: connection closed")

// Handler answers the requests and notifications of one connection. Conn calls Handle
// on a goroutine of its own per message (or on the reader goroutine when
// Options.Inline says so), so Handle must be safe for concurrent use.
//
// A result is marshaled with encoding/json/v2 (a jsontext.Value goes out as is). An
// *Error answers with its code; any other error answers -32603 and is logged. The ctx
// ends when the connection closes. The answer to a notification is discarded.
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
	// Inline, when it reports true, makes the reader serve the request itself before
	// reading the next frame: the server uses it to serve the handshake in order, and
	// for methods too quick to be worth a goroutine. Answers to inline requests read
	// from one buffer leave together, in one write when the framer is a BatchWriter.
	Inline func(*Request) bool
	// Logger receives connection events; never frame contents. Nil means slog.Default().
	Logger *slog.Logger
}

// Conn is one JSON-RPC connection: either side may send requests. Inbound requests
// go to the Handler concurrently; outbound calls get ids "zc-out-<n>" counting from 0
// and wait in this connection's own pending map, so the peer's ids never collide with
// ours even when textually equal. Frames are written by one writer at a time.
type Conn struct {
	framer  Framer
	handler Handler
	inline  func(*Request) bool
	log     *slog.Logger
	slots   chan struct{}

	ctx    context.Context
	cancel context.CancelFunc

	writeMu sync.Mutex
	// out queues frames for the flusher goroutine, which writes whatever gathered
	// while its last write ran in one write. Notifications always go through it, so
	// a stream of them costs the sender no system call; while the flusher runs, every
	// other frame queues behind them too, so frames keep their order. outCond is
	// signalled when the queue is taken, the flusher ends, or the connection closes.
	outMu    sync.Mutex
	outCond  sync.Cond
	out      [][]byte
	spare    [][]byte
	outBytes int
	flushing bool
	// held are answers of inline requests that the reader has not written yet; only
	// the reader goroutine touches it (see readLoop).
	held [][]byte

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
		inline:    opts.Inline,
		log:       log,
		slots:     make(chan struct{}, n),
		pending:   make(map[string]chan *Response),
		done:      make(chan struct{}),
		inputDone: make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.outCond.L = &c.outMu
	return c
}

// Run reads and serves frames until the peer hangs up, a framing violation, or Close.
// Pending calls then fail. After a clean end of input the running handlers still
// answer; then the connection closes. Run returns once every handler has returned,
// with why reading stopped (nil for a clean end).
func (c *Conn) Run() error {
	err := c.readLoop()
	close(c.inputDone) // no answer to our calls can arrive any more
	if errors.Is(err, io.EOF) {
		// The peer may have only half-closed: it still reads the answers to what it
		// asked. A peer that is gone entirely fails the next write, which closes us.
		c.serving.Wait()
		c.waitFlushed()
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
		// Answers of inline requests wait while more frames are already buffered, so
		// that a pipelining client gets them in one write; they leave before the
		// reader can block, so no answer ever waits for the client's next request.
		if len(c.held) > 0 && !c.buffered() {
			c.release()
		}
		line, err := c.framer.ReadFrame()
		if err != nil {
			var fe *FrameError
			if errors.As(err, &fe) {
				c.writeError(NullID, fe.Reply())
			}
			return err
		}
		frame := bytes.Clone(line) // handlers outlive the framer's buffer
		env := Classify(frame)
		switch {
		case env.Reject != nil:
			c.writeError(env.Reject.ID, env.Reject.Error)
		case env.Dropped != "":
			c.log.Warn("dropped malformed response", "reason", env.Dropped)
		case env.Response != nil:
			c.deliver(env.Response)
		case env.Request != nil:
			if !c.dispatch(env.Request) {
				return ErrClosed
			}
		}
	}
}

// dispatch serves req, waiting for a free slot first: that wait is the backpressure of
// SPEC §2. It reports false when the connection closed while waiting.
func (c *Conn) dispatch(req *Request) bool {
	if c.inline != nil && c.inline(req) {
		if msg := c.answer(req); msg != nil {
			c.held = append(c.held, msg)
		}
		return true
	}
	// Answers held so far leave first: a request served on its own goroutine may
	// answer (or notify) at once, and must not overtake them, nor may they wait for
	// a free slot below.
	if len(c.held) > 0 {
		c.release()
	}
	select {
	case c.slots <- struct{}{}:
	case <-c.done:
		return false
	}
	c.serving.Add(1)
	go func() {
		defer func() {
			<-c.slots
			c.serving.Done()
		}()
		c.serve(req)
	}()
	return true
}

func (c *Conn) serve(req *Request) {
	if msg := c.answer(req); msg != nil {
		c.write(msg)
	}
}

// answer runs the handler and encodes its answer (nil for a notification).
func (c *Conn) answer(req *Request) []byte {
	result, err := c.call(req)
	if req.IsNotification() {
		if err != nil {
			c.log.Debug("notification failed", "method", req.Method, "err", err)
		}
		return nil
	}
	if err == nil {
		var b []byte
		if b, err = json.Marshal(result); err == nil {
			return AppendResult(c.buffer(len(b)), req.ID, b)
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
	return AppendError(c.buffer(len(e.Message)+len(e.Data)), req.ID, e)
}

// call runs the handler, turning a panic into an internal error so one bad request
// cannot take the daemon down.
func (c *Conn) call(req *Request) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panicked", "method", req.Method, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return c.handler.Handle(c.ctx, req)
}

func (c *Conn) deliver(r *Response) {
	key := r.ID.key()
	c.pendingMu.Lock()
	ch, ok := c.pending[key]
	delete(c.pending, key)
	c.pendingMu.Unlock()
	if !ok {
		c.log.Info("ignored response with an unknown id", "id", shortID(r.ID))
		return
	}
	ch <- r
}

// Call sends a request to the peer and waits for its answer, ctx, or the end of the
// connection. A result is unmarshaled into result when result is non-nil; an explicit
// "result": null is a success. A peer's error object comes back as *Error.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	p, err := encodeParams(params)
	if err != nil {
		return err
	}
	id := StringID("zc-out-" + strconv.FormatUint(c.nextID.Add(1)-1, 10))
	key := id.key()
	ch := make(chan *Response, 1)
	c.pendingMu.Lock()
	if c.closed.Load() {
		c.pendingMu.Unlock()
		return ErrClosed
	}
	c.pending[key] = ch
	c.pendingMu.Unlock()
	forget := func() {
		c.pendingMu.Lock()
		delete(c.pending, key)
		c.pendingMu.Unlock()
	}

	msg, err := AppendRequest(c.buffer(len(p)+len(method)), id, method, p)
	if err != nil {
		forget()
		return err
	}
	if err := c.write(msg); err != nil {
		forget()
		return err
	}
	select {
	case r := <-ch:
		return decodeResult(r, result)
	case <-ctx.Done():
		forget()
		return ctx.Err()
	case <-c.inputDone:
		select { // an answer read just before the end still counts
		case r := <-ch:
			return decodeResult(r, result)
		default:
			return ErrClosed
		}
	}
}

func decodeResult(r *Response, result any) error {
	if r.Error != nil {
		return r.Error
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, result); err != nil {
		return fmt.Errorf("decoding the peer's result: %w", err)
	}
	return nil
}

// Notify sends a notification to the peer.
func (c *Conn) Notify(method string, params any) error {
	p, err := encodeParams(params)
	if err != nil {
		return err
	}
	msg, err := AppendRequest(c.buffer(len(p)+len(method)), nil, method, p)
	if err != nil {
		return err
	}
	c.outMu.Lock()
	defer c.outMu.Unlock()
	return c.enqueue(msg)
}

// maxQueued bounds the bytes queued for the flusher; a sender waits beyond it.
const maxQueued = 256 << 10

// enqueue queues msgs for the flusher, starting it when none runs. It waits while
// the queue is full. outMu is held.
func (c *Conn) enqueue(msgs ...[]byte) error {
	for c.outBytes >= maxQueued && !c.closed.Load() {
		c.outCond.Wait()
	}
	if c.closed.Load() {
		return ErrClosed
	}
	for _, m := range msgs {
		c.out = append(c.out, m)
		c.outBytes += len(m)
	}
	if !c.flushing {
		c.flushing = true
		go c.flush()
	}
	return nil
}

// flush writes the queue until it is empty, each time all of it in one write.
func (c *Conn) flush() {
	c.outMu.Lock()
	for len(c.out) > 0 && !c.closed.Load() {
		batch := c.out
		c.out, c.spare, c.outBytes = c.spare, nil, 0
		c.outCond.Broadcast()
		c.outMu.Unlock()
		c.writeMu.Lock()
		err := c.writeFrames(batch)
		c.writeMu.Unlock()
		clear(batch)
		c.outMu.Lock()
		if cap(batch) <= 1024 {
			c.spare = batch[:0]
		}
		if err != nil {
			c.outMu.Unlock()
			c.log.Info("write failed; closing connection", "err", err)
			c.Close()
			c.outMu.Lock()
		}
	}
	c.out, c.outBytes, c.flushing = nil, 0, false
	c.outCond.Broadcast()
	c.outMu.Unlock()
}

// queued queues msgs when the flusher runs, so they leave after what it holds, and
// reports whether it did.
func (c *Conn) queued(msgs ...[]byte) (bool, error) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	if !c.flushing {
		return false, nil
	}
	return true, c.enqueue(msgs...)
}

// waitFlushed returns when the flusher has written everything or the connection
// closed.
func (c *Conn) waitFlushed() {
	c.outMu.Lock()
	for c.flushing && !c.closed.Load() {
		c.outCond.Wait()
	}
	c.outMu.Unlock()
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

func encodeParams(params any) (jsontext.Value, error) {
	switch p := params.(type) {
	case nil:
		return nil, nil
	case jsontext.Value:
		return p, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encoding params: %w", err)
	}
	return b, nil
}

// Close closes the connection: the context ends, pending calls fail with ErrClosed,
// and the framer is closed. It is safe to call more than once and from any goroutine.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.pendingMu.Lock()
		c.closed.Store(true)
		c.pendingMu.Unlock()
		c.cancel()
		close(c.done)
		c.framer.Close()
		c.outMu.Lock()
		c.outCond.Broadcast()
		c.outMu.Unlock()
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
	c.write(AppendError(c.buffer(len(e.Message)+len(e.Data)), id, e))
}

// write sends one message; a failed write (the peer stopped reading for the framer's
// write timeout, or went away) closes the connection.
func (c *Conn) write(msg []byte) error {
	if ok, err := c.queued(msg); ok {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.closed.Load() {
		return ErrClosed
	}
	if err := c.framer.WriteFrame(msg); err != nil {
		c.log.Info("write failed; closing connection", "err", err)
		c.Close() // Close never takes writeMu
		return ErrClosed
	}
	return nil
}

// buffered reports whether the framer holds another complete frame, so that the next
// read cannot block.
func (c *Conn) buffered() bool {
	b, ok := c.framer.(interface{ Buffered() bool })
	return ok && b.Buffered()
}

// release writes the held answers, in one write when the framer can (BatchWriter).
func (c *Conn) release() {
	msgs := c.held
	if cap(msgs) > 32 { // a long batch is done: do not keep its slice on an idle connection
		c.held = nil
	} else {
		c.held = msgs[:0]
	}
	defer clear(msgs)
	if ok, _ := c.queued(msgs...); ok {
		return
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.closed.Load() {
		return
	}
	var err error
	if bw, ok := c.framer.(BatchWriter); ok && len(msgs) > 1 {
		err = bw.WriteFrames(msgs)
	} else {
		for _, m := range msgs {
			if err = c.framer.WriteFrame(m); err != nil {
				break
			}
		}
	}
	if err != nil {
		c.log.Info("write failed; closing connection", "err", err)
		c.Close() // Close never takes writeMu
	}
}

// BatchWriter is a Framer that can write several messages at once. Conn uses it for
// the answers of inline requests read from one buffer.
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
