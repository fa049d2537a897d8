package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// Names of the write operations of session controls (docs/protocol.md,
// "Session controls"), as passed to Options.FailWrites.
const (
	OpControls = "controls"
	OpUsage    = "usage"
	OpCompact  = "compact"
	OpFork     = "fork"
)

// Controls are what session/set chose for a session; "" means not chosen (the
// agent's autonomy, the agent's model, the derived title).
type Controls struct {
	Mode  string
	Model string
	Title string
}

// Totals are a session's token usage over all its turns.
type Totals struct {
	InputTokens  int
	OutputTokens int
}

// SetControls stores the controls of a session, all three at once. ErrNotFound when
// there is no such session.
func (s *Store) SetControls(ctx context.Context, id string, c Controls) error {
	return s.write(ctx, OpControls, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE sessions SET mode = ?, model = ?, title = ? WHERE id = ?",
			nullable(c.Mode), nullable(c.Model), nullable(c.Title), id)
		if err != nil {
			return fmt.Errorf("store: storing the controls of %s: %w", id, err)
		}
		return mustAffect(res, id)
	})
}

// addUsage adds t to the session's usage totals inside tx.
func (s *Store) addUsage(ctx context.Context, tx *sql.Tx, id string, t Totals) error {
	if t == (Totals{}) {
		return nil
	}
	if _, err := s.exec(ctx, tx, qAddUsage, t.InputTokens, t.OutputTokens, id); err != nil {
		return fmt.Errorf("store: adding usage to %s: %w", id, err)
	}
	return nil
}

// Compaction is the outcome of a session/compact: the retained context's size in
// characters before and after; Snapshot is the new retained context when it was
// compacted (After < Before), nil when it stays as it was.
type Compaction struct {
	TurnID      string
	OperationID string // "" when none
	Before      int
	After       int
	Snapshot    []llm.Message
	// Kept, when not empty, are the checkpoint ids of Snapshot's last len(Kept)
	// messages, oldest first: the messages a compaction keeps as they are after
	// its summary (an automatic one keeps its turn's prompt and what followed it).
	// When they are the session's newest checkpoints, the snapshot stored is only
	// what comes before them, and they stay checkpoints after its boundary, as
	// TrimBefore keeps them: a long prompt is not encoded and written again.
	Kept      []int64
	Cancelled bool   // session/cancel stopped the summary: nothing was replaced
	Usage     Totals // the summary's model call, added to the session's totals
}

// Compact records a compaction in one transaction: a turn row of its own (complete,
// with no checkpoints and no transcript rows), its operation id with the outcome
// when it has one, the summary's usage, and, when it compacted, the new snapshot as
// Trim stores it, covering every checkpoint of the session but those it Kept (call
// it holding the session's turn slot, so that none is being written). The visible
// transcript is untouched. ErrNotFound when there is no such session.
func (s *Store) Compact(ctx context.Context, sessionID string, c Compaction) error {
	var enc []byte
	if len(c.Kept) > len(c.Snapshot) {
		return fmt.Errorf("store: compacting %s: %d kept of a snapshot of %d", sessionID, len(c.Kept), len(c.Snapshot))
	}
	if c.Snapshot != nil {
		var err error
		if enc, err = encodeMessages(c.Snapshot[:len(c.Snapshot)-len(c.Kept)]); err != nil {
			return err
		}
	}
	now := ms(s.now())
	return s.write(ctx, OpCompact, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, qTouchSession, now, sessionID)
		if err != nil {
			return fmt.Errorf("store: compacting %s: %w", sessionID, err)
		}
		if err := mustAffect(res, sessionID); err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, qInsertTurn, sessionID, c.TurnID, TurnComplete, now); err != nil {
			return fmt.Errorf("store: compacting %s: %w", sessionID, err)
		}
		if c.OperationID != "" {
			if err := s.insertOperation(ctx, tx, sessionID, c.OperationID, c.TurnID); err != nil {
				return err
			}
			stop := "compacted"
			if c.Cancelled {
				stop = "cancelled"
			}
			if _, err := tx.ExecContext(ctx, `UPDATE operations SET stop_reason = ?, text = '',
				input_tokens = ?, output_tokens = ?, compact_before = ?, compact_after = ?
				WHERE session_id = ? AND operation_id = ?`, stop, c.Usage.InputTokens, c.Usage.OutputTokens,
				c.Before, c.After, sessionID, c.OperationID); err != nil {
				return fmt.Errorf("store: compacting %s: recording the operation: %w", sessionID, err)
			}
		}
		if err := s.addUsage(ctx, tx, sessionID, c.Usage); err != nil {
			return err
		}
		if enc == nil {
			return nil
		}
		if len(c.Kept) > 0 {
			ok, err := s.keepsNewest(ctx, tx, sessionID, c.Kept)
			if err != nil {
				return fmt.Errorf("store: compacting %s: %w", sessionID, err)
			}
			if ok {
				return s.trimTx(ctx, tx, sessionID, enc, c.Kept[0]-1)
			}
			if enc, err = encodeMessages(c.Snapshot); err != nil { // the whole of it, then
				return err
			}
		}
		var boundary int64
		if err := s.queryRow(ctx, tx, qCoveredBoundary, []any{sessionID}, &boundary); err != nil {
			return fmt.Errorf("store: compacting %s: %w", sessionID, err)
		}
		return s.trimTx(ctx, tx, sessionID, enc, boundary)
	})
}

// Fork stores dst, a new session, as a copy of src: its visible transcript, its
// controls, and context as its retained context (a snapshot covering every
// checkpoint stored so far, none of which is dst's), in one transaction. The usage
// totals start at zero. ErrNotFound when src does not exist, ErrExists when dst's
// id is taken.
func (s *Store) Fork(ctx context.Context, src string, dst Session, c Controls, context []llm.Message) error {
	enc, err := encodeMessages(context)
	if err != nil {
		return err
	}
	if dst.Surface == "" {
		dst.Surface = SurfaceRPC
	}
	now := ms(s.now())
	return s.write(ctx, OpFork, func(tx *sql.Tx) error {
		if err := sessionExists(ctx, tx, src); err != nil {
			return err
		}
		var one int
		err := s.queryRow(ctx, tx, qSessionExists, []any{dst.ID}, &one)
		if err == nil {
			return fmt.Errorf("%w: %s", ErrExists, dst.ID)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: looking up session %s: %w", dst.ID, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions
			(id, owner, agent, workspace, interaction_surface, created_at, last_activity, message_count, mode, model, title, num)
			SELECT ?, ?, ?, ?, ?, ?, ?, message_count, ?, ?, ?, `+nextSessionNum+` FROM sessions WHERE id = ?`,
			dst.ID, dst.Owner, dst.Agent, dst.Workspace, dst.Surface, now, now,
			nullable(c.Mode), nullable(c.Model), nullable(c.Title), src); err != nil {
			return fmt.Errorf("store: forking %s: %w", src, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO transcript
			(key, role, text, tool_call_id, name, is_error, interrupted, turn_id)
			SELECT (d.num << 32) | (t.key & 0xffffffff), t.role, t.text, t.tool_call_id, t.name, t.is_error, t.interrupted, t.turn_id
			FROM sessions s, sessions d, transcript t
			WHERE s.id = ?2 AND d.id = ?1 AND t.key >= s.num << 32 AND t.key < (s.num + 1) << 32
			ORDER BY t.key`, dst.ID, src); err != nil {
			return fmt.Errorf("store: forking %s: copying the transcript: %w", src, err)
		}
		var last sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT seq FROM sqlite_sequence WHERE name = 'checkpoints'").Scan(&last); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: forking %s: %w", src, err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO snapshots (session_id, messages, boundary) VALUES (?, ?, ?)",
			dst.ID, string(enc), last.Int64); err != nil {
			return fmt.Errorf("store: forking %s: storing the context: %w", src, err)
		}
		return nil
	})
}
