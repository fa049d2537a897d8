package store

import (
	"context"
	"database/sql"
	"fmt"
	"unicode/utf8"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// Roles of transcript rows.
const (
	RoleUser       = "user"
	RoleAssistant  = "assistant"
	RoleToolCall   = "tool_call"
	RoleToolResult = "tool_result"
	// RoleMarker rows are for clients only (the interruption marker); they are never
	// part of the model context.
	RoleMarker = "marker"
)

// MaxToolOutput caps the text of a tool_result row: longer output is cut at a UTF-8
// boundary and a note says how much was kept. The model context (checkpoints and
// snapshots) keeps the output whole.
const MaxToolOutput = 64 << 10

// InterruptedText is the text of the marker Recover appends.
const InterruptedText = "turn interrupted: the daemon stopped before it finished"

// Row is one row of the visible transcript.
type Row struct {
	Index       int // from 0, never renumbered
	Role        string
	Text        string
	ToolCallID  string
	Name        string
	TurnID      string
	IsError     bool
	Interrupted bool // true only on the interruption marker
}

// rowsOf maps one model-context message to transcript rows: a user message is one
// row; an assistant message is a row for its text (if any) and one tool_call row per
// call (text: the arguments); a tool result is one tool_result row, capped.
func rowsOf(turnID string, m llm.Message) []Row {
	switch m.Role {
	case llm.RoleUser:
		return []Row{{Role: RoleUser, Text: m.Text, TurnID: turnID}}
	case llm.RoleAssistant:
		var out []Row
		if m.Text != "" {
			out = append(out, Row{Role: RoleAssistant, Text: m.Text, TurnID: turnID})
		}
		for _, c := range m.ToolCalls {
			args := string(c.Arguments)
			if args == "" {
				args = "{}"
			}
			out = append(out, Row{Role: RoleToolCall, Text: args, ToolCallID: c.ID, Name: c.Name, TurnID: turnID})
		}
		return out
	case llm.RoleTool:
		return []Row{{Role: RoleToolResult, Text: capOutput(m.Text), ToolCallID: m.ToolCallID, Name: m.Name,
			IsError: m.IsError, TurnID: turnID}}
	}
	return nil
}

func capOutput(s string) string {
	if len(s) <= MaxToolOutput {
		return s
	}
	cut := MaxToolOutput
	for cut > MaxToolOutput-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[output truncated: %d of %d bytes kept]", cut, len(s))
}

// appendRows appends rows to the session's transcript at the next indexes.
func (s *Store) appendRows(ctx context.Context, tx *sql.Tx, sessionID string, rows []Row) error {
	if len(rows) == 0 {
		return nil
	}
	var next int
	var num int64
	if err := s.queryRow(ctx, tx, qMessageCount, []any{sessionID}, &next, &num); err != nil {
		return fmt.Errorf("store: appending to the transcript of %s: %w", sessionID, err)
	}
	stmt, err := s.stmt(ctx, tx, qInsertRow)
	if err != nil {
		return fmt.Errorf("store: appending to the transcript of %s: %w", sessionID, err)
	}
	for i, r := range rows {
		if _, err := stmt.ExecContext(ctx, rowKey(num, next+i), r.Role, r.Text, nullable(r.ToolCallID), nullable(r.Name),
			boolInt(r.IsError), boolInt(r.Interrupted), r.TurnID); err != nil {
			return fmt.Errorf("store: appending to the transcript of %s: %w", sessionID, err)
		}
	}
	if _, err := s.exec(ctx, tx, qSetMessageCount, next+len(rows), sessionID); err != nil {
		return fmt.Errorf("store: appending to the transcript of %s: %w", sessionID, err)
	}
	return nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Messages returns the last limit rows of the visible transcript with index <
// before, oldest first, and the total number of rows. before < 0 or beyond the end
// means the end; limit <= 0 returns no rows (only the total). ErrNotFound when there
// is no such session.
func (s *Store) Messages(ctx context.Context, sessionID string, limit, before int) ([]Row, int, error) {
	var out []Row
	var total int
	err := s.read(ctx, func(tx *sql.Tx) error {
		var num int64
		err := tx.QueryRowContext(ctx, qMessageCount, sessionID).Scan(&total, &num)
		if err == sql.ErrNoRows {
			return fmt.Errorf("%w: session %s", ErrNotFound, sessionID)
		}
		if err != nil {
			return fmt.Errorf("store: reading the transcript of %s: %w", sessionID, err)
		}
		if before < 0 || before > total {
			before = total
		}
		if limit <= 0 {
			return nil
		}
		// Indexes are dense (rows are never deleted), so the page is a range.
		from := max(before-limit, 0)
		rows, err := tx.QueryContext(ctx, `SELECT key & 0xffffffff, role, text, coalesce(tool_call_id, ''), coalesce(name, ''),
			is_error, interrupted, turn_id
			FROM transcript WHERE key >= ? AND key < ? ORDER BY key`, rowKey(num, from), rowKey(num, before))
		if err != nil {
			return fmt.Errorf("store: reading the transcript of %s: %w", sessionID, err)
		}
		defer rows.Close()
		out = make([]Row, 0, before-from)
		for rows.Next() {
			var r Row
			if err := rows.Scan(&r.Index, &r.Role, &r.Text, &r.ToolCallID, &r.Name, &r.IsError, &r.Interrupted, &r.TurnID); err != nil {
				return fmt.Errorf("store: reading the transcript of %s: %w", sessionID, err)
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// rowKey is the key of row idx of the transcript of the session numbered num
// (schema.sql, migration 8): a session's rows are the keys from rowKey(num, 0)
// up to rowKey(num+1, 0).
func rowKey(num int64, idx int) int64 { return num<<32 | int64(idx) }
