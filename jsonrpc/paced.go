package jsonrpc

import (
	"encoding/json/jsontext"
	"errors"
)

// PacedWindow is how many bytes of paced notifications (NotifyPaced) may wait in a
// connection's outbound queue or be being written: enough for the writer to fill
// the socket in large writes, small enough that a connection reading a long
// stream holds little of it.
const PacedWindow = 32 << 10

// errNoPacedRoom refuses a paced notification while a window of them waits.
var errNoPacedRoom = errors.New("jsonrpc: the paced window is full")

// NotifyPaced queues a notification that the sender paces to the peer's reading
// (docs/protocol.md, "A daemon that runs for months": session updates read from the
// replay log at the client's pace). It never waits: it reports false, queuing
// nothing, while PacedWindow bytes of paced notifications are queued or being written
// (a lone one larger than the window is taken when none waits); the sender then waits
// for a Pull (Want). Paced notifications are not counted against the bounds of
// Notify, and leave in the order they and every other frame were queued. It fails
// with ErrClosed once the connection closed.
func (c *Conn) NotifyPaced(method string, params jsontext.Value) (bool, error) {
	err := c.notifyEncoded(method, params, framePaced)
	if errors.Is(err, errNoPacedRoom) {
		return false, nil
	}
	return err == nil, err
}

// NotifyPacedBatch is NotifyPaced of several notifications of one method: it queues
// as many of them, in order, as the window takes, under one lock, and returns how
// many (0 when the window is full: Want a Pull).
func (c *Conn) NotifyPacedBatch(method string, params []jsontext.Value) (int, error) {
	if _, ndjson := c.out.framer.(*NDJSON); !ndjson || !plainMethod(method) {
		for i, p := range params {
			ok, err := c.NotifyPaced(method, p)
			if err != nil || !ok {
				return i, err
			}
		}
		return len(params), nil
	}
	o := &c.out
	o.mu.Lock()
	defer o.mu.Unlock()
	taken := 0
	for _, p := range params {
		n := notificationSize(method, p)
		if err := o.admitLocked(n, framePaced); err != nil {
			if errors.Is(err, errNoPacedRoom) {
				break
			}
			return taken, err // closed: nothing was taken under this lock
		}
		o.appendNotificationLocked(method, p, n)
		o.queued++
		taken++
	}
	if taken > 0 {
		o.startLocked()
	}
	return taken, nil
}

// NotifyPacedFrames is NotifyPacedBatch of notifications the caller framed
// already, as NDJSON frames (the notification's JSON and its newline): it queues
// as many of them, in order, as the window takes, and returns how many. The
// frames are borrowed, not copied: they are written from the caller's memory,
// which must not change until the connection has released them (PacedBytes): the
// session's tail, which so costs no copy per connection (docs/protocol.md,
// "A daemon that runs for months"). Frames laid out one after the other in one array
// leave in one write. It fails with ErrNotNDJSON over any other framer
// (FramesNDJSON).
func (c *Conn) NotifyPacedFrames(frames [][]byte) (int, error) {
	if !c.FramesNDJSON() {
		return 0, ErrNotNDJSON
	}
	o := &c.out
	o.mu.Lock()
	defer o.mu.Unlock()
	taken := 0
	for _, f := range frames {
		if err := o.admitLocked(len(f), framePaced); err != nil {
			if errors.Is(err, errNoPacedRoom) {
				break
			}
			return taken, err // closed: nothing was taken under this lock
		}
		o.appendRefLocked(f)
		o.queued++
		taken++
	}
	if taken > 0 {
		o.startLocked()
	}
	return taken, nil
}

// ErrNotNDJSON: NotifyPacedFrames over a connection whose framer is not NDJSON.
var ErrNotNDJSON = errors.New("jsonrpc: the connection does not frame NDJSON")

// FramesNDJSON reports whether the connection's framer is NDJSON, whose frames
// NotifyPacedFrames takes.
func (c *Conn) FramesNDJSON() bool {
	_, ok := c.out.framer.(*NDJSON)
	return ok
}

// Puller is a source of paced notifications that the connection's writer pulls
// from (Want): a session's cursor, which has no goroutine of its own.
type Puller interface {
	// Pull is called on the connection's writer goroutine, with none of the
	// connection's locks held, once the paced window has room. It queues what it
	// has with NotifyPacedFrames or NotifyPacedBatch, and calls Want again when
	// the window took less than it has. It must not wait for the connection.
	Pull()
}

// Want asks the connection's writer to call p.Pull once at most half of
// PacedWindow of paced notifications waits: at once (on the writer, which it
// starts) when that is so already. Each Want is answered by one Pull, in the
// order they were made, one Puller at a time (a connection pulled by several
// takes from them in turn), unless the connection closes first; it fails with
// ErrClosed once it closed. A Puller costs its connection no goroutine while the
// peer does not read: only the writer, blocked in its write, which exists then
// anyway.
func (c *Conn) Want(p Puller) error {
	o := &c.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	o.wants = append(o.wants, p)
	o.startLocked()
	return nil
}

// pullableLocked reports whether a Puller waits and the paced window has room for
// it; mu is held.
func (o *outbox) pullableLocked() bool {
	return len(o.wants) > 0 && o.paced <= PacedWindow/2
}

// pullLocked calls the first Puller that waits, with mu released meanwhile; mu is
// held. The others wait for the writer's next turn, behind any it queues again.
func (o *outbox) pullLocked() {
	p := o.wants[0]
	n := copy(o.wants, o.wants[1:])
	o.wants[n] = nil
	o.wants = o.wants[:n]
	if n == 0 && cap(o.wants) > 16 {
		o.wants = nil
	}
	o.mu.Unlock()
	p.Pull()
	o.mu.Lock()
}

// admitPacedLocked counts a paced notification of n bytes, or refuses it.
func (o *outbox) admitPacedLocked(n int) error {
	if o.paced > 0 && o.paced+n > PacedWindow {
		return errNoPacedRoom
	}
	o.paced += n
	o.qPaced += n
	o.pacedIn.Add(uint64(n))
	return nil
}

// PacedBytes reports the bytes of paced notifications the connection has queued
// since it opened, and of those the bytes it has written or discarded (closed):
// both only grow, and paced notifications leave in the order they were queued.
// So a frame NotifyPacedFrames borrowed is no longer read by the connection once
// released has reached what queued was right after the frame was taken.
func (c *Conn) PacedBytes() (queued, released uint64) {
	return c.out.pacedIn.Load(), c.out.pacedOut.Load()
}
