package wss

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// Keepalive (docs/protocol.md, "Transport and framing"): a connection silent for
// PingAfter is pinged, and closed when no pong arrives within PongWait.
const (
	PingAfter = 20 * time.Second
	PongWait  = 10 * time.Second
)

const retainedBuffer = 64 << 10

// Framer is a jsonrpc.Framer over one WebSocket: each text message is one JSON-RPC
// message. A binary message is answered with -32600 and skipped; a message over
// MaxMessage bytes is a frame_too_large FrameError (the connection then closes), and
// so is one not completed within MessageTimeout (frame_timeout).
//
// The daemon's side also keeps the connection alive (Keepalive). The client's side
// only answers pings, which the library does while a read is in progress.
type Framer struct {
	ws  *websocket.Conn
	ctx context.Context // ends with Close: it bounds every read and write

	cancel context.CancelFunc

	MaxMessage     int64
	MessageTimeout time.Duration
	WriteTimeout   time.Duration

	buf      bytes.Buffer
	lastRead atomic.Int64 // unix nanoseconds of the last message read, or pong
	failed   atomic.Pointer[jsonrpc.FrameError]

	closeOnce sync.Once
	closed    chan struct{} // closed when the closing handshake is over
}

// NewFramer returns a framer over ws with the limits (docs/protocol.md, "Limits").
func NewFramer(ws *websocket.Conn) *Framer {
	f := &Framer{
		ws:             ws,
		MaxMessage:     jsonrpc.MaxFrameBytes,
		MessageTimeout: jsonrpc.FrameTimeout,
		WriteTimeout:   jsonrpc.WriteStallTimeout,
		closed:         make(chan struct{}),
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.lastRead.Store(time.Now().UnixNano())
	// One byte over our own limit: the library closes the connection by itself past
	// its limit, while we first tell the peer why (frame_too_large).
	ws.SetReadLimit(f.MaxMessage + 1)
	return f
}

// ReadFrame returns the next text message.
func (f *Framer) ReadFrame() ([]byte, error) {
	for {
		typ, r, err := f.ws.Reader(f.ctx)
		if err != nil {
			if fe := f.failed.Load(); fe != nil {
				return nil, fe
			}
			return nil, f.endOfInput(err)
		}
		body, err := f.readMessage(r)
		f.lastRead.Store(time.Now().UnixNano())
		if err != nil {
			return nil, err
		}
		if typ == websocket.MessageBinary {
			f.refuseBinary()
			continue
		}
		return body, nil
	}
}

// readMessage reads one message into the framer's buffer, never more than
// MaxMessage bytes of it, within MessageTimeout.
func (f *Framer) readMessage(r io.Reader) ([]byte, error) {
	if f.buf.Cap() > retainedBuffer {
		f.buf = bytes.Buffer{} // a large message is done: give its memory back
	}
	f.buf.Reset()
	timer := time.AfterFunc(f.MessageTimeout, func() {
		// The library reads under the context given to Reader; ending it would close
		// the connection before the peer hears why. Close it ourselves, having said so.
		f.failed.CompareAndSwap(nil, &jsonrpc.FrameError{Reason: "frame_timeout"})
		f.ws.CloseNow()
	})
	_, err := f.buf.ReadFrom(io.LimitReader(r, f.MaxMessage+1))
	timer.Stop()
	if fe := f.failed.Load(); fe != nil {
		return nil, fe
	}
	if err != nil {
		return nil, f.endOfInput(err)
	}
	if int64(f.buf.Len()) > f.MaxMessage {
		fe := &jsonrpc.FrameError{Reason: "frame_too_large", Limit: f.MaxMessage}
		f.failed.Store(fe)
		return nil, fe
	}
	return f.buf.Bytes(), nil
}

// endOfInput maps the end of a WebSocket to io.EOF when the peer closed it normally.
func (f *Framer) endOfInput(err error) error {
	switch websocket.CloseStatus(err) {
	case websocket.StatusNormalClosure, websocket.StatusGoingAway, websocket.StatusNoStatusRcvd:
		return io.EOF
	}
	return err
}

// refuseBinary answers a binary message with -32600. The library serializes
// writes, so this may run beside the connection's own writer.
func (f *Framer) refuseBinary() {
	e := jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "binary messages are not accepted: send each JSON-RPC message as one text message",
		map[string]any{"reason": "binary_message"})
	f.WriteFrame(jsonrpc.AppendError(make([]byte, 0, 192), jsonrpc.NullID, e))
}

// WriteFrame writes msg as one text message.
func (f *Framer) WriteFrame(msg []byte) error {
	ctx, cancel := f.ctx, context.CancelFunc(func() {})
	if f.WriteTimeout > 0 {
		ctx, cancel = context.WithTimeout(f.ctx, f.WriteTimeout)
	}
	defer cancel()
	return f.ws.Write(ctx, websocket.MessageText, msg)
}

// Close starts the closing handshake and returns; Done is closed when it is over
// (at most five seconds when the peer does not answer). After a framing violation
// the close status says which.
func (f *Framer) Close() error {
	f.closeOnce.Do(func() {
		code, reason := websocket.StatusNormalClosure, ""
		if fe := f.failed.Load(); fe != nil {
			code, reason = websocket.StatusPolicyViolation, fe.Reason
			if fe.Reason == "frame_too_large" {
				code = websocket.StatusMessageTooBig
			}
		}
		go func() {
			defer close(f.closed)
			f.ws.Close(code, reason)
			f.cancel()
		}()
	})
	return nil
}

// Done is closed once Close has finished closing the WebSocket.
func (f *Framer) Done() <-chan struct{} { return f.closed }

// Keepalive pings the peer after pingAfter without a message from it, and closes the
// connection when no pong comes within pongWait. It returns when the connection
// closes. The pong is read by the ReadFrame in progress.
func (f *Framer) Keepalive(pingAfter, pongWait time.Duration, onTimeout func()) {
	timer := time.NewTimer(pingAfter)
	defer timer.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-f.closed:
			return
		case <-timer.C:
		}
		if idle := time.Since(time.Unix(0, f.lastRead.Load())); idle < pingAfter {
			timer.Reset(pingAfter - idle)
			continue
		}
		ctx, cancel := context.WithTimeout(f.ctx, pongWait)
		err := f.ws.Ping(ctx)
		cancel()
		if err != nil {
			if f.ctx.Err() == nil && !errors.Is(err, context.Canceled) && onTimeout != nil {
				onTimeout()
			}
			f.ws.CloseNow()
			return
		}
		f.lastRead.Store(time.Now().UnixNano())
		timer.Reset(pingAfter)
	}
}
