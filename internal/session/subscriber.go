package session

import (
	"context"
	"encoding/json/jsontext"
)

// Subscriber is a connection attached to sessions. The rpc layer implements it.
type Subscriber interface {
	// Deliver sends one encoded session/update. An error means the connection is
	// gone or stalled; the session then detaches it.
	Deliver(update jsontext.Value) error
	// CanElicit reports whether the client declared form elicitation.
	CanElicit() bool
	// Elicit sends elicitation/create and waits for the answer or ctx.
	Elicit(ctx context.Context, p ElicitParams) (ElicitResult, error)
}
