package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Limits (docs/protocol.md, "Limits").
const (
	MaxFrameBytes      = 8 << 20 // one line, its newline counted
	FrameTimeout       = 30 * time.Second
	WriteStallTimeout  = 30 * time.Second
	initialReadBuffer  = 1 << 10 // held by every idle connection: keep it small
	busyReadBuffer     = 16 << 10
	retainedReadBuffer = 64 << 10
)

// Framer turns a byte stream (or a message transport) into frames, one JSON-RPC
// message each. A Conn calls ReadFrame from one goroutine only and serializes its
// WriteFrame calls; Close may be called from any goroutine and unblocks both.
type Framer interface {
	// ReadFrame returns the next frame. It is valid until the next call.
	// A *FrameError reports a frame the peer must be told about before closing.
	ReadFrame() ([]byte, error)
	// WriteFrame writes one message. The framer may append to msg within its capacity.
	WriteFrame(msg []byte) error
	Close() error
}

// FrameError is a framing violation that ends the connection after one -32600 reply
// whose data carries Reason (and Limit when set).
type FrameError struct {
	Reason string // "frame_too_large" or "frame_timeout"
	Limit  int64  // the byte limit, for frame_too_large
}

func (e *FrameError) Error() string {
	if e.Limit > 0 {
		return fmt.Sprintf("%s (limit %d bytes)", e.Reason, e.Limit)
	}
	return e.Reason
}

// Reply is the error response the peer receives before the connection closes.
func (e *FrameError) Reply() *Error {
	switch e.Reason {
	case "frame_too_large":
		return NewError(CodeInvalidRequest, fmt.Sprintf("frame exceeds %d bytes", e.Limit),
			map[string]any{"reason": e.Reason, "limit_bytes": e.Limit})
	default:
		return NewError(CodeInvalidRequest, fmt.Sprintf("frame not completed within %s", FrameTimeout),
			map[string]any{"reason": e.Reason})
	}
}

type deadliner interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

type closeWriter interface{ CloseWrite() error }

// NDJSON frames newline-delimited JSON over a stream (docs/protocol.md,
// "Transport and framing"): one message per line, empty and whitespace-only lines
// ignored, a final unterminated line processed at EOF. It never buffers more than
// MaxLine bytes for one line. When the stream can take deadlines (a net.Conn), a
// started line must complete within LineTimeout and a
// write may stall at most WriteTimeout.
type NDJSON struct {
	rw io.ReadWriteCloser
	dl deadliner // nil when rw takes no deadlines

	MaxLine      int
	LineTimeout  time.Duration
	WriteTimeout time.Duration

	buf              []byte
	start, scan, end int         // buf[start:end] is unread; buf[start:scan] holds no newline
	filled           bool        // the last read filled all the room it had
	smallReads       int         // reads in a row that brought less than initialReadBuffer/2
	timing           bool        // a read deadline for the started line is set
	failed           atomic.Bool // a FrameError was returned: Close lingers so the reply is read
	eof              bool
	// large is the capacity a buffer needs for the last line longer than
	// busyReadBuffer, zero when the last line was short: the next line that
	// outgrows the first read grows to it at once instead of doubling up to it.
	large int
}

// NewNDJSON returns an NDJSON framer with the limits (docs/protocol.md, "Limits").
func NewNDJSON(rw io.ReadWriteCloser) *NDJSON {
	f := &NDJSON{rw: rw, MaxLine: MaxFrameBytes, LineTimeout: FrameTimeout, WriteTimeout: WriteStallTimeout}
	f.dl, _ = rw.(deadliner)
	return f
}

// ReadFrame returns the next non-blank line without its newline.
func (f *NDJSON) ReadFrame() ([]byte, error) {
	for {
		if i := bytes.IndexByte(f.buf[f.scan:f.end], '\n'); i >= 0 {
			nl := f.scan + i
			line := f.buf[f.start:nl]
			f.start, f.scan = nl+1, nl+1
			f.large = 0
			if len(line) > busyReadBuffer {
				f.large = min(len(line)+len(line)/8+1, f.MaxLine)
			}
			if isBlank(line) {
				continue
			}
			return line, nil
		}
		f.scan = f.end
		if f.eof {
			line := f.buf[f.start:f.end]
			f.start, f.scan = f.end, f.end
			if len(line) > 0 && !isBlank(line) {
				return line, nil
			}
			return nil, io.EOF
		}
		if err := f.fill(); err != nil {
			return nil, err
		}
	}
}

// Buffered reports whether a complete line is buffered, so that the next ReadFrame
// does not read from the stream.
func (f *NDJSON) Buffered() bool {
	return bytes.IndexByte(f.buf[f.scan:f.end], '\n') >= 0
}

// TakeFrame hands the buffer holding line, the frame ReadFrame just returned, to the
// caller, when the line is longer than retainedReadBuffer: it is then the caller's
// for good, and the framer reads on into a buffer of its own. A caller that must
// keep a frame beyond the next ReadFrame takes a large one this way instead of
// copying it (an upload chunk is 1.4 MB). It reports false, and keeps the buffer,
// for a short line or one it did not just return.
func (f *NDJSON) TakeFrame(line []byte) bool {
	at := cap(f.buf) - cap(line) // where line starts in buf, if it is buf's
	if len(line) <= retainedReadBuffer || at < 0 || at+len(line) > f.start || &f.buf[:cap(f.buf)][at] != &line[0] {
		return false
	}
	pending := f.buf[f.start:f.end]
	f.buf = append(make([]byte, 0, max(len(pending), initialReadBuffer)), pending...)
	f.buf = f.buf[:cap(f.buf)]
	f.end, f.scan = len(pending), f.scan-f.start
	f.start = 0
	return true
}

// ReturnFrame takes back the buffer of a frame TakeFrame handed over, once nothing
// refers to it any more: it serves a later large line of any connection.
func (f *NDJSON) ReturnFrame(line []byte) {
	if b := line[:0]; cap(b) > retainedReadBuffer && cap(b) <= f.MaxLine {
		largeBuffers.Put(&b)
	}
}

// fill reads more bytes, keeping the unread part of the current line and never
// growing the buffer past MaxLine.
func (f *NDJSON) fill() error {
	pending := f.end - f.start
	if pending >= f.MaxLine {
		f.failed.Store(true)
		return &FrameError{Reason: "frame_too_large", Limit: int64(f.MaxLine)}
	}
	switch {
	case pending == 0 && cap(f.buf) > retainedReadBuffer:
		// A large line is done: its buffer goes to the pool, for the next large
		// line of any connection (an upload sends many).
		b := f.buf[:0]
		largeBuffers.Put(&b)
		f.buf = nil
		f.start, f.scan, f.end = 0, 0, 0
	case pending == 0 && cap(f.buf) > busyReadBuffer:
		// So is a medium line (a long prompt): an idle connection keeps no such
		// buffer, and the next medium line of any connection is read into it.
		if cap(f.buf) == retainedReadBuffer {
			b := f.buf[:0]
			mediumBuffers.Put(&b)
		}
		f.buf = nil
		f.start, f.scan, f.end = 0, 0, 0
	case pending == 0 && f.filled && len(f.buf) < busyReadBuffer:
		// A pipelining peer filled the buffer: read its bursts in fewer, larger reads.
		f.buf = make([]byte, min(busyReadBuffer, f.MaxLine))
		f.start, f.scan, f.end = 0, 0, 0
	case pending == 0 && f.smallReads >= 16 && len(f.buf) > initialReadBuffer && len(f.buf) <= busyReadBuffer:
		// Traffic slowed down to lone requests: keep only a small buffer.
		f.buf = nil
		f.start, f.scan, f.end = 0, 0, 0
	case f.start > 0:
		copy(f.buf, f.buf[f.start:f.end])
		f.scan -= f.start
		f.end, f.start = pending, 0
	}
	if f.buf == nil {
		f.buf = make([]byte, min(initialReadBuffer, f.MaxLine))
	}
	if f.end == len(f.buf) {
		n := 2 * len(f.buf)
		if f.large > n {
			n = f.large // the last line was large: so is this one, likely
		}
		f.grow(min(n, f.MaxLine))
	}
	f.setLineDeadline(pending > 0)
	n, err := f.rw.Read(f.buf[f.end:])
	f.filled = n == len(f.buf)-f.end
	if n < initialReadBuffer/2 {
		f.smallReads++
	} else {
		f.smallReads = 0
	}
	f.end += n
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF):
		f.eof = true
		return nil
	case f.timing && errors.Is(err, os.ErrDeadlineExceeded):
		f.failed.Store(true)
		return &FrameError{Reason: "frame_timeout"}
	default:
		return err
	}
}

// largeBuffers hold the read buffers of lines longer than retainedReadBuffer
// between uses, so that a stream of them (upload chunks) does not grow a buffer by
// doubling for every line. mediumBuffers hold those of the lines between
// busyReadBuffer and retainedReadBuffer, all of retainedReadBuffer bytes: a
// 40 KB prompt grew its buffer from 1 KiB by doubling, eight reads and 150 KB of
// garbage a prompt, and the connection then kept up to 64 KiB while idle.
var largeBuffers, mediumBuffers sync.Pool

// grow makes the buffer n bytes long (or, for a medium line, retainedReadBuffer),
// keeping what it holds.
func (f *NDJSON) grow(n int) {
	switch {
	case n > retainedReadBuffer:
		if p, ok := largeBuffers.Get().(*[]byte); ok {
			if b := *p; cap(b) >= n && cap(b) <= f.MaxLine {
				f.buf = append(b[:0], f.buf[:f.end]...)[:cap(b)]
				return
			}
		}
	case n > busyReadBuffer && f.MaxLine >= retainedReadBuffer:
		var b []byte
		if p, ok := mediumBuffers.Get().(*[]byte); ok {
			b = (*p)[:0]
		} else {
			b = make([]byte, 0, retainedReadBuffer) // exactly: fill pools it by its size
		}
		f.buf = append(b, f.buf[:f.end]...)[:retainedReadBuffer]
		return
	}
	f.buf = append(f.buf[:f.end], make([]byte, n-f.end)...)
}

// setLineDeadline arms the read deadline when a line has started and clears it when
// the stream sits between lines, so an idle connection is never timed out here.
func (f *NDJSON) setLineDeadline(started bool) {
	if f.dl == nil || started == f.timing {
		return
	}
	f.timing = started
	if started {
		f.dl.SetReadDeadline(time.Now().Add(f.LineTimeout))
	} else {
		f.dl.SetReadDeadline(time.Time{})
	}
}

// WriteFrame writes msg and its newline in one write.
func (f *NDJSON) WriteFrame(msg []byte) error {
	msg = append(msg, '\n')
	f.armWrite()
	_, err := f.rw.Write(msg)
	return err
}

// armWrite sets the write deadline for the write about to start, so that one that
// stalls for WriteTimeout fails. (One write carries a whole batch of frames, so
// this costs a timer update per batch, not per frame.)
func (f *NDJSON) armWrite() {
	if f.dl != nil && f.WriteTimeout > 0 {
		f.dl.SetWriteDeadline(time.Now().Add(f.WriteTimeout))
	}
}

// CloseRead stops reading, when the stream can (a socket): the reader sees the end
// of input while writes still go out.
func (f *NDJSON) CloseRead() error {
	if cr, ok := f.rw.(interface{ CloseRead() error }); ok {
		return cr.CloseRead()
	}
	return errors.ErrUnsupported
}

// AppendFrame appends msg and its newline to dst (StreamFramer).
func (f *NDJSON) AppendFrame(dst, msg []byte) []byte { return append(append(dst, msg...), '\n') }

// WriteStream writes frames made by AppendFrame in one write (StreamFramer).
func (f *NDJSON) WriteStream(b []byte) error {
	f.armWrite()
	_, err := f.rw.Write(b)
	return err
}

// WriteStreams writes pieces of frames made by AppendFrame, in order, in as few
// system calls as the stream takes (writev on a socket) (StreamsWriter).
func (f *NDJSON) WriteStreams(pieces [][]byte) error {
	f.armWrite()
	bufs := net.Buffers(pieces) // WriteTo consumes it: the caller clears pieces after
	_, err := bufs.WriteTo(f.rw)
	return err
}

// writeBuffers hold the batches of WriteFrames between uses.
var writeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// WriteFrames writes msgs, each with its newline, in one write.
func (f *NDJSON) WriteFrames(msgs [][]byte) error {
	bp := writeBuffers.Get().(*[]byte)
	out := (*bp)[:0]
	for _, m := range msgs {
		out = append(append(out, m...), '\n')
	}
	f.armWrite()
	_, err := f.rw.Write(out)
	if cap(out) <= retainedReadBuffer {
		*bp = out
		writeBuffers.Put(bp)
	}
	return err
}

// Close closes the stream. After a framing violation it first half-closes and drains
// what the peer is still sending, for at most a second: closing a socket with unread
// input resets it, and the peer would lose the error reply it was just sent.
func (f *NDJSON) Close() error {
	if f.failed.Swap(false) {
		if cw, ok := f.rw.(closeWriter); ok && f.dl != nil {
			cw.CloseWrite()
			f.dl.SetReadDeadline(time.Now().Add(time.Second))
			io.CopyN(io.Discard, f.rw, 4*MaxFrameBytes)
		}
	}
	return f.rw.Close()
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}
