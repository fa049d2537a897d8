package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// operation is a session/prompt operation id (docs/protocol.md, "session/prompt")
// claimed in this process: from the prompt that claimed it until its turn has ended,
// or until it failed to start one. A repeat of the id waits for it instead of
// starting a second turn.
type operation struct {
	done   chan struct{}
	result *outcome // set before done closes, when a turn (or compaction) ran
}

// outcome is what an operation id answers: a prompt's result or a compaction's
// (docs/protocol.md, "session/compact": one space of ids per session, shared by both).
type outcome struct {
	prompt  *PromptResult
	compact *CompactResult
}

// errOperationKind answers an operation id repeated by the other method.
func errOperationKind(id, usedBy string) *Error {
	return errParam("operationId", "operation_id_taken",
		fmt.Sprintf("invalid params: operationId %q was used by %s", id, usedBy))
}

// claimOperation either answers a repeated operation id with the result of the
// turn it started (waiting while that turn runs), or claims the id for the caller,
// who must run the turn and then call finishOperation.
func (s *Session) claimOperation(ctx context.Context, id string) (*operation, *outcome, error) {
	for {
		s.opMu.Lock()
		if op := s.ops[id]; op != nil {
			s.opMu.Unlock()
			select {
			case <-op.done:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			if op.result != nil {
				return nil, op.result, nil
			}
			continue // it started no turn (busy, closed, abandoned in the queue): try ourselves
		}
		// Held across the read so that no other prompt claims the id meanwhile; it
		// only ever waits for prompts of this session.
		stored, err := s.mgr.st.Operation(ctx, s.ID, id)
		if err == nil {
			s.opMu.Unlock()
			return nil, s.storedResult(stored), nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			s.opMu.Unlock()
			s.mgr.log.Error("reading an operation id", "session", s.ID, "operation", id, "err", err)
			return nil, nil, errStorage(err)
		}
		op := &operation{done: make(chan struct{})}
		s.ops[id] = op
		s.opMu.Unlock()
		return op, nil, nil
	}
}

// finishOperation releases a claimed id: with the turn's result when one ran, nil
// when none did. A turn's result is in the store by then (EndTurnWith).
func (s *Session) finishOperation(id string, op *operation, r *outcome) {
	s.opMu.Lock()
	op.result = r
	delete(s.ops, id)
	s.opMu.Unlock()
	close(op.done)
}

// storedResult answers a repeated operation id from the store: the turn's result,
// or, when the turn's end could not be stored, an error result saying so.
func (s *Session) storedResult(op store.Operation) *outcome {
	if op.Compaction != nil {
		before, after := op.Compaction[0], op.Compaction[1]
		return &outcome{compact: &CompactResult{SessionID: s.ID, Before: before, After: after,
			Compacted: after < before, Cancelled: op.Result != nil && op.Result.StopReason == "cancelled"}}
	}
	r := &PromptResult{SessionID: s.ID, TurnID: op.TurnID}
	if op.Result == nil {
		r.StopReason, r.Text = "error", "storage failed: the result of this turn was not stored"
		return &outcome{prompt: r}
	}
	r.StopReason, r.Text = op.Result.StopReason, op.Result.Text
	r.Usage = Usage{InputTokens: op.Result.InputTokens, OutputTokens: op.Result.OutputTokens}
	return &outcome{prompt: r}
}
