package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ExportRow is one row of the visible transcript with the time its turn began.
type ExportRow struct {
	Row
	At time.Time
}

// Export reads a session's row (FirstPrompt filled), hands it to head, then every
// row of its visible transcript to each, oldest first, all in one read transaction: a
// consistent snapshot, however the session is being written meanwhile (a turn's
// rows reach the transcript in the transaction that ends it, so a running turn
// shows none or all of them). An error of each stops the reading and is returned.
// ErrNotFound when there is no such session.
func (s *Store) Export(ctx context.Context, sessionID string, head func(Session), each func(ExportRow) error) error {
	return s.read(ctx, func(tx *sql.Tx) error {
		var num int64
		var first string
		sess, err := scanSession(tx.QueryRowContext(ctx, "SELECT "+sessionColumns+", "+firstPromptColumn+
			", num FROM sessions WHERE id = ?", sessionID), &first, &num)
		sess.FirstPrompt = first
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: session %s", ErrNotFound, sessionID)
		}
		if err != nil {
			return fmt.Errorf("store: exporting %s: %w", sessionID, err)
		}
		head(sess)
		rows, err := tx.QueryContext(ctx, `SELECT t.key & 0xffffffff, t.role, t.text, coalesce(t.tool_call_id, ''),
			coalesce(t.name, ''), t.is_error, t.interrupted, t.turn_id, coalesce(u.started_at, 0)
			FROM transcript t LEFT JOIN turns u ON u.session_id = ?1 AND u.turn_id = t.turn_id
			WHERE t.key >= ?2 AND t.key < ?3 ORDER BY t.key`, sessionID, rowKey(num, 0), rowKey(num+1, 0))
		if err != nil {
			return fmt.Errorf("store: exporting %s: %w", sessionID, err)
		}
		defer rows.Close()
		for rows.Next() {
			var r ExportRow
			var at int64
			if err := rows.Scan(&r.Index, &r.Role, &r.Text, &r.ToolCallID, &r.Name, &r.IsError, &r.Interrupted,
				&r.TurnID, &at); err != nil {
				return fmt.Errorf("store: exporting %s: %w", sessionID, err)
			}
			if at != 0 {
				r.At = fromMS(at)
			}
			if err := each(r); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}
