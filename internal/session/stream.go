package session

import (
	"context"
	"errors"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/feed"
)

// Subscriber is a connection attached to sessions. The rpc layer implements it:
// the feed's side (Deliver, Want, Lagged: internal/feed) and the questions a turn
// may ask its clients.
type Subscriber interface {
	feed.Subscriber
	// CanElicit reports whether the client declared form elicitation.
	CanElicit() bool
	// Elicit sends elicitation/create and waits for the answer or ctx.
	Elicit(ctx context.Context, p ElicitParams) (ElicitResult, error)
}

// Puller is what a connection pulls updates from when it has room
// (feed.Subscriber.Want).
type Puller = feed.Puller

// LagAfter is how long a cursor waits for its connection to take an update before
// it is detached as lagged (Options.LagAfter).
const LagAfter = feed.LagAfter

// SeqBlock is how many seqs one durable reservation covers (Options.SeqBlock).
const SeqBlock = feed.SeqBlock

// Attach makes sub receive every later update of the session.
func (s *Session) Attach(sub Subscriber) { s.feed.Attach(sub) }

// Detach stops delivering to sub.
func (s *Session) Detach(sub Subscriber) { s.feed.Detach(sub) }

// WaitDelivered returns once sub's connection has been handed every update of the
// session up to seq, or sub is not (or no longer) attached, or ctx ends. A prompt's
// answer waits for it, and so does the answer of every request that published an
// update, so that on the requesting connection the answer follows its updates.
func (s *Session) WaitDelivered(ctx context.Context, sub Subscriber, seq uint64) {
	s.feed.WaitDelivered(ctx, sub, seq)
}

// LastSeq is the seq of the session's last update.
func (s *Session) LastSeq() uint64 { return s.feed.Seq() }

// AttachAfter attaches sub, with a replay of the updates after afterSeq when it is
// set (feed.Feed.AttachAfter), and returns the last seq sent and how many were.
// When the updates after afterSeq are no longer kept, nothing is sent and the
// error says which is the oldest kept (replay_truncated).
func (s *Session) AttachAfter(ctx context.Context, sub Subscriber, afterSeq *uint64) (uint64, int, error) {
	last, n, err := s.feed.AttachAfter(ctx, sub, afterSeq)
	var trunc *feed.TruncatedError
	var storage *feed.StorageError
	switch {
	case err == nil:
		return last, n, nil
	case errors.As(err, &trunc):
		return 0, 0, &Error{Kind: Invalid, Msg: trunc.Error(),
			Details: map[string]any{"reason": "replay_truncated", "oldestSeq": trunc.Oldest}}
	case errors.As(err, &storage):
		return 0, 0, errStorage(storage.Err)
	case errors.Is(err, feed.ErrClosed):
		return 0, 0, errNotFound(s.ID)
	}
	return last, n, err // the caller's ctx ended
}
