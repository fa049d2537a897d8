package session

import (
	"context"
	"encoding/json/jsontext"
)

// Subscriber is a connection attached to sessions. The rpc layer implements it.
//
// Delivery never waits for a slow connection (SPEC §15): the live stream goes
// through Offer, which queues without blocking. When a connection's queue is full,
// the session detaches it and calls Lagged once; the connection then tells its client
// `lagged {afterSeq}` when it has room, and the client catches up through
// session/attach. Replays of stored updates, which the client asked for, go through
// Send, which waits for room.
type Subscriber interface {
	// Offer queues one encoded session/update without waiting; false when the
	// connection's queue is full or the connection is gone. update is the caller's
	// again once Offer returns: Offer copies what it queues.
	Offer(update jsontext.Value) bool
	// Send queues one encoded session/update, waiting for room until ctx ends.
	Send(ctx context.Context, update jsontext.Value) error
	// Lagged tells the connection it was detached from sessionID because an update
	// did not fit: afterSeq is the last seq of that session it was sent.
	Lagged(sessionID string, afterSeq uint64)
	// CanElicit reports whether the client declared form elicitation.
	CanElicit() bool
	// Elicit sends elicitation/create and waits for the answer or ctx.
	Elicit(ctx context.Context, p ElicitParams) (ElicitResult, error)
}

// attachment is what a session keeps of one attached subscriber.
type attachment struct {
	sub     Subscriber
	lastSeq uint64 // the seq of the last update it was sent, or the seq when it attached
}
