package feed

import (
	"encoding/json/jsontext"
	"time"
)

// Subscriber is a connection attached to feeds. The rpc layer implements it.
//
// Delivery never waits for a slow connection, and never keeps a copy of the stream
// per connection (docs/protocol.md, "Delivery"): each attachment is a cursor in the session's
// replay log (delivery.go), with no goroutine of its own: the connection's writer
// pulls from it (Want, Puller) whenever it has room, and it hands the connection
// one committed update after another through Deliver, at the pace the connection
// takes them. A connection is detached, and told Lagged once, only when its
// backlog passed rpc.replay_bytes or the update it needs next is no longer kept
// (retain.go), or when it took none for Options.LagAfter; the client then catches
// up through session/attach.
type Subscriber interface {
	// Deliver queues encoded session/update notifications, in order, as many as
	// the connection has room for, and returns how many; with 0 the caller Wants
	// a Pull. It never waits (the feed's lock is held), and fails once the
	// connection is gone. updates are their params; frames, when not nil, are the
	// same notifications framed as NDJSON (FrameUpdate), one per update, which
	// the connection may write from the caller's memory, never changed (the
	// tail's), instead of copying them. The slices themselves are the caller's
	// again once Deliver returns.
	Deliver(updates []jsontext.Value, frames [][]byte) (int, error)
	// Want asks the connection to call p.Pull, once, on its writer with none of
	// its locks held, once Deliver may have room: at once when it has room now.
	// It never waits (the feed's lock is held), and fails once the connection
	// is gone.
	Want(p Puller) error
	// Lagged tells the connection it was detached from sessionID because it fell
	// behind what the session keeps: afterSeq is the last seq of that session it
	// was sent. It never waits (the feed's lock is held).
	Lagged(sessionID string, afterSeq uint64)
}

// Puller is what a connection pulls updates from when it has room
// (Subscriber.Want): an attachment's cursor.
type Puller interface {
	Pull()
}

// attachment is what a session keeps of one attached subscriber: its cursor in the
// session's updates. Its fields are guarded by the session's mu.
type attachment struct {
	f       *Feed
	sub     Subscriber
	sent    uint64        // the seq of the last update it was sent, or the seq it attached at
	count   int           // updates sent since it attached (or an attach moved it)
	gen     uint64        // bumped when an attach moves the cursor
	wanting bool          // it waits for a Pull of its connection (Subscriber.Want)
	gone    bool          // detached (the connection left, it lagged, the session closed)
	moved   chan struct{} // closed when sent moves or it is gone; nil until waited on
	// page is what it read from the store and has not yet handed its connection:
	// updates older than the tail, read a page at a time (delivery.go).
	page []tailEntry
	// blocked is since when it has had updates its connection took none of (zero
	// while it has none, or its connection takes them); timer, while timing, lags
	// it LagAfter after that.
	blocked time.Time
	timer   *time.Timer
	timing  bool
}

// wakeLocked tells whoever waits on a that it moved; the session's mu is held.
func (a *attachment) wakeLocked() {
	if a.moved != nil {
		close(a.moved)
		a.moved = nil
	}
}
