package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// UnansweredText is the text of the tool result Context supplies for a call whose
// result was never recorded (the daemon stopped while the tool ran).
const UnansweredText = "interrupted"

// Context returns the session's model context: the latest retained snapshot
// followed by every checkpoint after its boundary, in order. Without a snapshot
// (NULL: the session never trimmed) it is every checkpoint: the legacy full replay.
// An empty snapshot is authoritative: only the checkpoints after its boundary
// follow it. Marker rows never appear: they live in the transcript only.
//
// The result is made provider-safe, since a crash can leave it half-formed: a tool
// call without a result (before the next user or assistant message, or at the end)
// gets a synthetic error result with the text UnansweredText right after the
// results it does have, and a tool result with no earlier matching call is left
// out. ErrNotFound when there is no such session.
func (s *Store) Context(ctx context.Context, sessionID string) ([]llm.Message, error) {
	msgs, _, err := s.ContextIDs(ctx, sessionID)
	return msgs, err
}

// ContextIDs is Context with, for each message, the id of the checkpoint it is: 0
// for a message of the snapshot and for one Context supplies (an unanswered call's
// result). TrimBefore takes those ids.
func (s *Store) ContextIDs(ctx context.Context, sessionID string) ([]llm.Message, []int64, error) {
	var out []llm.Message
	var ids []int64
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := sessionExists(ctx, tx, sessionID); err != nil {
			return err
		}
		var snapshot []byte
		var boundary int64
		err := tx.QueryRowContext(ctx, "SELECT messages, boundary FROM snapshots WHERE session_id = ?", sessionID).
			Scan(&snapshot, &boundary)
		switch {
		case errors.Is(err, sql.ErrNoRows): // no snapshot: replay every checkpoint
		case err != nil:
			return fmt.Errorf("store: reading the snapshot of %s: %w", sessionID, err)
		default:
			if out, err = decodeMessages(snapshot); err != nil {
				return err
			}
			ids = make([]int64, len(out))
		}
		rows, err := tx.QueryContext(ctx, "SELECT id, message FROM checkpoints WHERE session_id = ? AND id > ? ORDER BY id",
			sessionID, boundary)
		if err != nil {
			return fmt.Errorf("store: reading the checkpoints of %s: %w", sessionID, err)
		}
		defer rows.Close()
		var raw []byte
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id, &raw); err != nil {
				return fmt.Errorf("store: reading the checkpoints of %s: %w", sessionID, err)
			}
			m, err := decodeMessage(raw)
			if err != nil {
				return err
			}
			out, ids = append(out, m), append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, err
	}
	out, ids = providerSafe(out, ids)
	return out, ids, nil
}

// providerSafe answers every unanswered tool call and drops orphan tool results:
// both APIs we speak refuse a context with either. ids go along with the messages
// (an answer it adds has 0).
func providerSafe(in []llm.Message, inIDs []int64) ([]llm.Message, []int64) {
	out := make([]llm.Message, 0, len(in))
	ids := make([]int64, 0, len(in))
	var pending []llm.ToolCall // calls of the last assistant message still without a result
	answer := func() {
		for _, c := range pending {
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name,
				Text: UnansweredText, IsError: true})
			ids = append(ids, 0)
		}
		pending = nil
	}
	for i, m := range in {
		if m.Role == llm.RoleTool {
			j := indexOfCall(pending, m.ToolCallID)
			if j < 0 {
				continue // no call asked for it
			}
			pending = append(pending[:j:j], pending[j+1:]...)
			out, ids = append(out, m), append(ids, inIDs[i])
			continue
		}
		answer()
		out, ids = append(out, m), append(ids, inIDs[i])
		if m.Role == llm.RoleAssistant {
			pending = append(pending, m.ToolCalls...)
		}
	}
	answer()
	return out, ids
}

func indexOfCall(calls []llm.ToolCall, id string) int {
	for i, c := range calls {
		if c.ID == id {
			return i
		}
	}
	return -1
}

// Trim stores snapshot as the session's retained context, covering every
// checkpoint up to and including boundary, and deletes those checkpoints, all in one
// transaction: on error nothing changed (and the caller sends no history_trimmed).
// A nil snapshot is stored as an explicit empty one. The transcript is untouched;
// checkpoints of a turn still running are kept until EndTurn or Recover has copied
// them to it. boundary may not move backwards, nor beyond the last checkpoint id
// handed out. ErrNotFound when there is no such session.
func (s *Store) Trim(ctx context.Context, sessionID string, snapshot []llm.Message, boundary int64) error {
	enc, err := encodeMessages(snapshot)
	if err != nil {
		return err
	}
	return s.write(ctx, OpTrim, func(tx *sql.Tx) error {
		if err := s.sessionWritten(ctx, tx, sessionID); err != nil {
			return err
		}
		return s.trimTx(ctx, tx, sessionID, enc, boundary)
	})
}

// newestAre is nil when kept (not empty) are exactly the session's checkpoints
// from kept[0] on, ErrNotContiguous (wrapped) when they are not.
func (s *Store) newestAre(ctx context.Context, tx *sql.Tx, sessionID string, kept []int64) error {
	for i := 1; i < len(kept); i++ {
		if kept[i] <= kept[i-1] {
			return fmt.Errorf("%w: %d after %d", ErrNotContiguous, kept[i], kept[i-1])
		}
	}
	var n, first, last int64
	if err := s.queryRow(ctx, tx, qCheckpointsFrom, []any{sessionID, kept[0]}, &n, &first, &last); err != nil {
		return fmt.Errorf("store: trimming %s: %w", sessionID, err)
	}
	if n != int64(len(kept)) || first != kept[0] || last != kept[len(kept)-1] {
		return fmt.Errorf("%w: %d stored from %d (%d to %d), %d kept", ErrNotContiguous, n, kept[0], first, last, len(kept))
	}
	return nil
}

// keepsNewest reports whether a snapshot may end at kept[0] and leave kept as its
// checkpoints: they are the session's newest (newestAre), and the boundary before
// them does not move back over the current one.
func (s *Store) keepsNewest(ctx context.Context, tx *sql.Tx, sessionID string, kept []int64) (bool, error) {
	if kept[0] <= 0 {
		return false, nil
	}
	if err := s.newestAre(ctx, tx, sessionID, kept); errors.Is(err, ErrNotContiguous) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	var prev sql.NullInt64
	if err := s.queryRow(ctx, tx, qSnapshotBoundary, []any{sessionID}, &prev); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	return !prev.Valid || kept[0]-1 >= prev.Int64, nil
}

// trimTx stores the snapshot enc covering the checkpoints up to boundary and
// deletes those (Trim).
func (s *Store) trimTx(ctx context.Context, tx *sql.Tx, sessionID string, enc []byte, boundary int64) error {
	if err := s.checkBoundary(ctx, tx, sessionID, boundary); err != nil {
		return err
	}
	if _, err := s.exec(ctx, tx, qStoreSnapshot, sessionID, string(enc), boundary); err != nil {
		return fmt.Errorf("store: trimming %s: storing the snapshot: %w", sessionID, err)
	}
	// Each candidate's turn is looked up by its key: a NOT IN over the session's
	// running turns read every turn the session ever had, on every trim (the turn
	// cost grew with the history: docs/protocol.md, "A daemon that runs for months").
	if _, err := s.exec(ctx, tx, qDropCoveredByTrim, sessionID, boundary); err != nil {
		return fmt.Errorf("store: trimming %s: deleting covered checkpoints: %w", sessionID, err)
	}
	return nil
}

// ErrNotContiguous: the checkpoints TrimBefore was given are not exactly the
// session's from the first of them on; nothing was trimmed.
var ErrNotContiguous = errors.New("store: the kept checkpoints are not the session's newest")

// TrimBefore is Trim for a cut that falls among the checkpoints: kept are the ids
// of the checkpoints the retained context keeps, oldest first, and they must be
// exactly the session's checkpoints from kept[0] on (else ErrNotContiguous, and
// nothing changes). The snapshot becomes empty with the boundary just before
// kept[0], and the older checkpoints go, as Trim does with them: the context then
// reads back as those checkpoints, and nothing of it was encoded or written again.
// A session trimmed on every turn (one at max_context_messages) so costs what its
// newest turn added, not its whole retained context.
func (s *Store) TrimBefore(ctx context.Context, sessionID string, kept []int64) error {
	if len(kept) == 0 {
		return fmt.Errorf("%w: none kept", ErrNotContiguous)
	}
	return s.write(ctx, OpTrim, func(tx *sql.Tx) error {
		if err := s.sessionWritten(ctx, tx, sessionID); err != nil {
			return err
		}
		// Counted in SQL, not read row by row: a session at its limit trims on
		// every turn, and reading its whole kept context back was most of what a
		// turn cost once it got there (docs/protocol.md,
		// "A daemon that runs for months"). kept increases, and its ids are
		// ones the session stored: they are the session's checkpoints from kept[0]
		// on when as many are stored from kept[0] on, the first being kept[0] and the
		// last the last of kept.
		if err := s.newestAre(ctx, tx, sessionID, kept); err != nil {
			return err
		}
		return s.trimTx(ctx, tx, sessionID, []byte("[]"), kept[0]-1)
	})
}

func (s *Store) checkBoundary(ctx context.Context, tx *sql.Tx, sessionID string, boundary int64) error {
	var prev, last sql.NullInt64
	if err := s.queryRow(ctx, tx, qSnapshotBoundary, []any{sessionID}, &prev); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: trimming %s: %w", sessionID, err)
	}
	if err := s.queryRow(ctx, tx, qLastCheckpointID, nil, &last); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: trimming %s: %w", sessionID, err)
	}
	switch {
	case boundary < 0:
		return fmt.Errorf("store: trimming %s: negative boundary %d", sessionID, boundary)
	case prev.Valid && boundary < prev.Int64:
		return fmt.Errorf("store: trimming %s: boundary %d is before the current one, %d", sessionID, boundary, prev.Int64)
	case boundary > last.Int64:
		return fmt.Errorf("store: trimming %s: boundary %d is beyond the last checkpoint, %d", sessionID, boundary, last.Int64)
	}
	return nil
}
