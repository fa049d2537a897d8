package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// MaxOperations is how many operation ids a session keeps: older ones are forgotten
// as new turns begin (docs/protocol.md, "session/prompt").
const MaxOperations = 256

// TurnResult is what a turn answered its prompt with: enough to answer a repeat of
// the prompt's operation id the same way, also after a restart.
type TurnResult struct {
	StopReason   string
	Text         string
	InputTokens  int
	OutputTokens int
}

// Operation is an operation id of session/prompt and the turn it started. Result is
// nil while the turn runs.
type Operation struct {
	TurnID string
	Result *TurnResult
	// Compaction is set when the id was a session/compact's (docs/protocol.md,
	// "session/compact"): the retained context's size before and after.
	Compaction *[2]int
}

// Operation returns the turn that operationID started in the session: ErrNotFound
// when the session never saw the id (or has forgotten it).
func (s *Store) Operation(ctx context.Context, sessionID, operationID string) (Operation, error) {
	var op Operation
	var stop, text sql.NullString
	var in, out, before, after sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT turn_id, stop_reason, text, input_tokens, output_tokens, compact_before, compact_after
		FROM operations WHERE session_id = ? AND operation_id = ?`, sessionID, operationID).Scan(&op.TurnID, &stop, &text, &in, &out, &before, &after)
	if errors.Is(err, sql.ErrNoRows) {
		return Operation{}, fmt.Errorf("%w: operation %q of session %s", ErrNotFound, operationID, sessionID)
	}
	if err != nil {
		return Operation{}, fmt.Errorf("store: reading operation %q of %s: %w", operationID, sessionID, err)
	}
	if stop.Valid {
		op.Result = &TurnResult{StopReason: stop.String, Text: text.String, InputTokens: int(in.Int64), OutputTokens: int(out.Int64)}
	}
	if before.Valid {
		op.Compaction = &[2]int{int(before.Int64), int(after.Int64)}
	}
	return op, nil
}

func (s *Store) insertOperation(ctx context.Context, tx *sql.Tx, sessionID, operationID, turnID string) error {
	if _, err := s.exec(ctx, tx, qInsertOperation,
		sessionID, operationID, turnID); err != nil {
		return fmt.Errorf("store: recording operation %q of %s: %w", operationID, sessionID, err)
	}
	if _, err := s.exec(ctx, tx, qForgetOperations, sessionID, MaxOperations); err != nil {
		return fmt.Errorf("store: forgetting old operations of %s: %w", sessionID, err)
	}
	return nil
}

// EndTurnWith is EndTurn that also records r as the answer of the operation id
// that started the turn, if one did, and adds r's tokens to the session's usage
// totals (docs/protocol.md, "Session controls"), in the same transaction.
func (s *Store) EndTurnWith(ctx context.Context, sessionID, turnID string, r TurnResult) error {
	return s.endTurn(ctx, sessionID, turnID, &r)
}

// InterruptedResult is the answer of an operation whose turn a crash interrupted
// (recorded by Recover): the turn was stopped, by the daemon going away.
var InterruptedResult = TurnResult{StopReason: "cancelled"}

func (s *Store) setOperationResult(ctx context.Context, tx *sql.Tx, sessionID, turnID string, r TurnResult) error {
	if _, err := s.exec(ctx, tx, qSetOperationResult,
		r.StopReason, r.Text, r.InputTokens, r.OutputTokens, sessionID, turnID); err != nil {
		return fmt.Errorf("store: recording the result of turn %s of %s: %w", turnID, sessionID, err)
	}
	return nil
}
