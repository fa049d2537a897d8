package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
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
func (s *Store) Context(ctx context.Context, sessionID string) ([]provider.Message, error) {
	var out []provider.Message
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
		}
		rows, err := tx.QueryContext(ctx, "SELECT message FROM checkpoints WHERE session_id = ? AND id > ? ORDER BY id",
			sessionID, boundary)
		if err != nil {
			return fmt.Errorf("store: reading the checkpoints of %s: %w", sessionID, err)
		}
		defer rows.Close()
		var raw []byte
		for rows.Next() {
			if err := rows.Scan(&raw); err != nil {
				return fmt.Errorf("store: reading the checkpoints of %s: %w", sessionID, err)
			}
			m, err := decodeMessage(raw)
			if err != nil {
				return err
			}
			out = append(out, m)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return providerSafe(out), nil
}

// providerSafe answers every unanswered tool call and drops orphan tool results:
// both APIs we speak refuse a context with either.
func providerSafe(in []provider.Message) []provider.Message {
	out := make([]provider.Message, 0, len(in))
	var pending []provider.ToolCall // calls of the last assistant message still without a result
	answer := func() {
		for _, c := range pending {
			out = append(out, provider.Message{Role: provider.RoleTool, ToolCallID: c.ID, Name: c.Name,
				Text: UnansweredText, IsError: true})
		}
		pending = nil
	}
	for _, m := range in {
		if m.Role == provider.RoleTool {
			i := indexOfCall(pending, m.ToolCallID)
			if i < 0 {
				continue // no call asked for it
			}
			pending = append(pending[:i:i], pending[i+1:]...)
			out = append(out, m)
			continue
		}
		answer()
		out = append(out, m)
		if m.Role == provider.RoleAssistant {
			pending = append(pending, m.ToolCalls...)
		}
	}
	answer()
	return out
}

func indexOfCall(calls []provider.ToolCall, id string) int {
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
func (s *Store) Trim(ctx context.Context, sessionID string, snapshot []provider.Message, boundary int64) error {
	enc, err := encodeMessages(snapshot)
	if err != nil {
		return err
	}
	return s.write(ctx, OpTrim, func(tx *sql.Tx) error {
		if err := sessionExists(ctx, tx, sessionID); err != nil {
			return err
		}
		if err := checkBoundary(ctx, tx, sessionID, boundary); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO snapshots (session_id, messages, boundary) VALUES (?, ?, ?)
			ON CONFLICT (session_id) DO UPDATE SET messages = excluded.messages, boundary = excluded.boundary`,
			sessionID, string(enc), boundary); err != nil {
			return fmt.Errorf("store: trimming %s: storing the snapshot: %w", sessionID, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoints WHERE session_id = ?1 AND id <= ?2
			AND turn_id NOT IN (SELECT turn_id FROM turns WHERE session_id = ?1 AND state = 'running')`,
			sessionID, boundary); err != nil {
			return fmt.Errorf("store: trimming %s: deleting covered checkpoints: %w", sessionID, err)
		}
		return nil
	})
}

func checkBoundary(ctx context.Context, tx *sql.Tx, sessionID string, boundary int64) error {
	var prev, last sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT boundary FROM snapshots WHERE session_id = ?", sessionID).Scan(&prev); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: trimming %s: %w", sessionID, err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT seq FROM sqlite_sequence WHERE name = 'checkpoints'").Scan(&last); err != nil && !errors.Is(err, sql.ErrNoRows) {
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
