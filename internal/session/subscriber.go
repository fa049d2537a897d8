package session

import (
	"context"
	"encoding/json/jsontext"
)

// Subscriber is a connection attached to sessions. The rpc layer implements it.
//
// Delivery never waits for a slow connection, and never keeps a copy of the stream
// per connection (SPEC §15, §24): each attachment is a cursor in the session's
// replay log (delivery.go), whose goroutine hands the connection one committed
// update after another through Deliver, at the pace the connection takes them.
// A connection is detached, and told Lagged once, only when the update it needs
// next is no longer kept, or when it took none for Options.LagAfter; the client
// then catches up through session/attach.
type Subscriber interface {
	// Deliver queues encoded session/update notifications, in order, as many as
	// the connection has room for, and returns how many; with 0 the caller waits on
	// Room. It fails once the connection is gone. updates are their params; frames,
	// when not nil, are the same notifications framed as NDJSON (FrameUpdate), one
	// per update, which the connection may write from the caller's memory, never
	// changed (the tail's), instead of copying them. The slices themselves are the
	// caller's again once Deliver returns.
	Deliver(updates []jsontext.Value, frames [][]byte) (int, error)
	// Room returns a channel closed once Deliver may have room again, or the
	// connection closed.
	Room() <-chan struct{}
	// Lagged tells the connection it was detached from sessionID because it fell
	// behind what the session keeps: afterSeq is the last seq of that session it
	// was sent.
	Lagged(sessionID string, afterSeq uint64)
	// CanElicit reports whether the client declared form elicitation.
	CanElicit() bool
	// Elicit sends elicitation/create and waits for the answer or ctx.
	Elicit(ctx context.Context, p ElicitParams) (ElicitResult, error)
}

// attachment is what a session keeps of one attached subscriber: its cursor in the
// session's updates. Its fields are guarded by the session's mu.
type attachment struct {
	sub     Subscriber
	sent    uint64        // the seq of the last update it was sent, or the seq it attached at
	count   int           // updates sent since it attached (or an attach moved it)
	gen     uint64        // bumped when an attach moves the cursor
	running bool          // its delivery goroutine runs
	gone    bool          // detached (the connection left, it lagged, the session closed)
	moved   chan struct{} // closed when sent moves or it is gone; nil until waited on
}

// wakeLocked tells whoever waits on a that it moved; the session's mu is held.
func (a *attachment) wakeLocked() {
	if a.moved != nil {
		close(a.moved)
		a.moved = nil
	}
}
