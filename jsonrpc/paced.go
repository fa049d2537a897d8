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
// (SPEC §24: session updates read from the replay log at the client's pace). It
// never waits: it reports false, queuing nothing, while PacedWindow bytes of paced
// notifications are queued or being written (a lone one larger than the window is
// taken when none waits); the sender then waits on PacedRoom. Paced notifications
// are not counted against the bounds of Notify, and leave in the order they and
// every other frame were queued. It fails with ErrClosed once the connection
// closed.
func (c *Conn) NotifyPaced(method string, params jsontext.Value) (bool, error) {
	err := c.notifyEncoded(method, params, framePaced)
	if errors.Is(err, errNoPacedRoom) {
		return false, nil
	}
	return err == nil, err
}

// NotifyPacedBatch is NotifyPaced of several notifications of one method: it queues
// as many of them, in order, as the window takes, under one lock, and returns how
// many (0 when the window is full: wait on PacedRoom).
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
// which must not change until the connection has written them or closed (the
// session's tail, whose blocks are never written again, so costs no copy per
// connection: SPEC §24). Frames laid out one after the other in one array leave
// in one write. It fails with ErrNotNDJSON over any other framer (FramesNDJSON).
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

// PacedRoom returns a channel that is closed once at most half of PacedWindow of
// paced notifications waits (at once when that is so already), or the connection
// closes.
func (c *Conn) PacedRoom() <-chan struct{} {
	o := &c.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.paced <= PacedWindow/2 {
		return closedChan
	}
	if o.pacedRoom == nil {
		o.pacedRoom = make(chan struct{})
	}
	return o.pacedRoom
}

// admitPacedLocked counts a paced notification of n bytes, or refuses it.
func (o *outbox) admitPacedLocked(n int) error {
	if o.paced > 0 && o.paced+n > PacedWindow {
		return errNoPacedRoom
	}
	o.paced += n
	o.qPaced += n
	return nil
}

// signalPacedRoom wakes the paced senders once half the window is free; mu is held.
func (o *outbox) signalPacedRoom() {
	if o.pacedRoom != nil && o.paced <= PacedWindow/2 {
		close(o.pacedRoom)
		o.pacedRoom = nil
	}
}
