package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Session is the durable row of a session.
type Session struct {
	ID        string
	Owner     string // principal id
	Agent     string // agent alias
	Workspace string
	Surface   string // interaction_surface; CreateSession writes SurfaceRPC when empty
	CreatedAt time.Time
	// LastActivity is set at creation and touched by BeginTurn and EndTurn.
	LastActivity time.Time
	KilledAt     *time.Time // the tombstone; nil while the session may be restored
	MessageCount int        // visible transcript rows
	// LastSeq is the reserved seq high-water mark (ReserveSeq): after a restart the
	// session's next update gets LastSeq+1.
	LastSeq uint64
	// FirstPrompt is the start of the session's first user message ("" before any);
	// only ListSessions fills it.
	FirstPrompt string
	// Controls are what session/set chose, Totals the usage so far (docs/protocol.md,
	// "Session controls").
	Controls Controls
	Totals   Totals
}

const sessionColumns = `id, owner, agent, workspace, interaction_surface, created_at, last_activity,
	killed_at, message_count, seq_mark, mode, model, title, input_tokens, output_tokens`

// firstPromptColumn is the first 400 bytes of the session's first user message.
const firstPromptColumn = `coalesce((SELECT substr(t.text, 1, 400) FROM transcript t
	WHERE t.key >= sessions.num << 32 AND t.key < (sessions.num + 1) << 32 AND t.role = 'user'
	ORDER BY t.key LIMIT 1), '')`

func scanSession(row interface{ Scan(...any) error }, extra ...any) (Session, error) {
	var s Session
	var created, active int64
	var killed sql.NullInt64
	var seq int64
	var mode, model, title sql.NullString
	if err := row.Scan(append([]any{&s.ID, &s.Owner, &s.Agent, &s.Workspace, &s.Surface, &created, &active,
		&killed, &s.MessageCount, &seq, &mode, &model, &title, &s.Totals.InputTokens, &s.Totals.OutputTokens}, extra...)...); err != nil {
		return Session{}, err
	}
	s.Controls = Controls{Mode: mode.String, Model: model.String, Title: title.String}
	s.CreatedAt, s.LastActivity, s.LastSeq = fromMS(created), fromMS(active), uint64(seq)
	if killed.Valid {
		t := fromMS(killed.Int64)
		s.KilledAt = &t
	}
	return s, nil
}

// qInsertSession is CreateSession's insert, prepared once (Store.stmt).
const qInsertSession = `INSERT INTO sessions
	(id, owner, agent, workspace, interaction_surface, created_at, last_activity, killed_at, num)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ` + nextSessionNum + `)`

// nextSessionNum is the number a new session gets: one past the highest (a deleted
// session's number may be given again: its rows went with it).
const nextSessionNum = `(SELECT coalesce(max(num), 0) + 1 FROM sessions)`

// CreateSession stores a new session row. It fails with ErrExists when the id is
// taken. Zero CreatedAt and LastActivity mean now; MessageCount and LastSeq are
// ignored (a new session has neither).
func (s *Store) CreateSession(ctx context.Context, sess Session) error {
	if sess.ID == "" {
		return errors.New("store: create session: empty id")
	}
	if sess.Surface == "" {
		sess.Surface = SurfaceRPC
	}
	now := s.now()
	if sess.CreatedAt.IsZero() {
		sess.CreatedAt = now
	}
	if sess.LastActivity.IsZero() {
		sess.LastActivity = sess.CreatedAt
	}
	var killed any
	if sess.KilledAt != nil {
		killed = ms(*sess.KilledAt)
	}
	return s.write(ctx, OpCreate, func(tx *sql.Tx) error {
		var one int
		err := s.queryRow(ctx, tx, qSessionExists, []any{sess.ID}, &one)
		if err == nil {
			return fmt.Errorf("%w: %s", ErrExists, sess.ID)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: looking up session %s: %w", sess.ID, err)
		}
		insert, err := s.stmt(ctx, tx, qInsertSession)
		if err == nil {
			_, err = insert.ExecContext(ctx, sess.ID, sess.Owner, sess.Agent, sess.Workspace, sess.Surface,
				ms(sess.CreatedAt), ms(sess.LastActivity), killed)
		}
		if err != nil {
			return fmt.Errorf("store: creating session %s: %w", sess.ID, err)
		}
		return nil
	})
}

// Session returns the row of id, or ErrNotFound.
func (s *Store) Session(ctx context.Context, id string) (Session, error) {
	sess, err := scanSession(s.r.QueryRowContext(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	if err != nil {
		return Session{}, fmt.Errorf("store: reading session %s: %w", id, err)
	}
	return sess, nil
}

// DefaultListLimit is the page size of ListSessions for a limit <= 0.
const DefaultListLimit = 100

// ListSessions returns the sessions of owner ("" = every owner), killed ones
// included, most recently active first (ties: id descending), at most limit of
// them, and the cursor of the next page ("" after the last). The cursor names the
// position after the last row returned, not an offset, so sessions created between
// two pages do not shift the rows of the next one; a session touched between two
// pages moves and may show up twice or not at all, as in any live listing.
func (s *Store) ListSessions(ctx context.Context, owner string, limit int, cursor string) ([]Session, string, error) {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	afterActivity, afterID := int64(math.MaxInt64), ""
	if cursor != "" {
		var err error
		if afterActivity, afterID, err = decodeCursor(cursor); err != nil {
			return nil, "", err
		}
	}
	// (last_activity, id) < (a, i) with both descending walks the index in order;
	// the first page starts above every row.
	q := "SELECT " + sessionColumns + ", " + firstPromptColumn + " FROM sessions WHERE "
	args := []any{}
	if owner != "" {
		q += "owner = ? AND "
		args = append(args, owner)
	}
	if cursor == "" {
		q += "last_activity <= ?"
		args = append(args, afterActivity)
	} else {
		q += "(last_activity, id) < (?, ?)"
		args = append(args, afterActivity, afterID)
	}
	q += " ORDER BY last_activity DESC, id DESC LIMIT ?"
	args = append(args, limit+1) // one more tells whether a next page exists
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("store: listing sessions: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var first string
		sess, err := scanSession(rows, &first)
		if err != nil {
			return nil, "", fmt.Errorf("store: listing sessions: %w", err)
		}
		sess.FirstPrompt = first
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("store: listing sessions: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = encodeCursor(ms(last.LastActivity), last.ID)
	}
	return out, next, nil
}

// A cursor is "v1:<last_activity ms>:<id>" in unpadded URL-safe base64: opaque to
// clients, and versioned so its form can change.
func encodeCursor(activity int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1:" + strconv.FormatInt(activity, 10) + ":" + id))
}

func decodeCursor(c string) (int64, string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	rest, ok := strings.CutPrefix(string(raw), "v1:")
	num, id, ok2 := strings.Cut(rest, ":")
	activity, err := strconv.ParseInt(num, 10, 64)
	if !ok || !ok2 || err != nil {
		return 0, "", fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	return activity, id, nil
}

// Kill tombstones the session: killed_at is set (the first kill's time is kept),
// the history stays. ErrNotFound when there is no such session.
func (s *Store) Kill(ctx context.Context, id string, at time.Time) error {
	return s.write(ctx, OpKill, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE sessions SET killed_at = coalesce(killed_at, ?) WHERE id = ?", ms(at), id)
		if err != nil {
			return fmt.Errorf("store: killing session %s: %w", id, err)
		}
		return mustAffect(res, id)
	})
}

// Delete removes the session and, by ON DELETE CASCADE in the same transaction,
// its transcript, turns, checkpoints, snapshot and stored updates. ErrNotFound when
// there is no such session.
func (s *Store) Delete(ctx context.Context, id string) error {
	err := s.write(ctx, OpDelete, func(tx *sql.Tx) error {
		// The transcript is the session's range of keys (rowKey); the rest goes by
		// ON DELETE CASCADE.
		if _, err := tx.ExecContext(ctx, `DELETE FROM transcript WHERE key >= (SELECT num FROM sessions WHERE id = ?1) << 32
			AND key < ((SELECT num FROM sessions WHERE id = ?1) + 1) << 32`, id); err != nil {
			return fmt.Errorf("store: deleting session %s: %w", id, err)
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM sessions WHERE id = ?", id)
		if err != nil {
			return fmt.Errorf("store: deleting session %s: %w", id, err)
		}
		return mustAffect(res, id)
	})
	if err == nil {
		s.vacuumFree(ctx) // the space goes back to the file system (docs/protocol.md, "A daemon that runs for months")
	}
	return err
}

func mustAffect(res sql.Result, id string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: session %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	return nil
}
