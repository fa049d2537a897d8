package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Update is one stored session/update notification.
type Update struct {
	SessionID string
	Seq       uint64
	Payload   []byte // the notification's params, as sent
}

func seqArg(seq uint64) (int64, error) {
	if seq > math.MaxInt64 {
		return 0, fmt.Errorf("store: seq %d is out of range", seq)
	}
	return int64(seq), nil
}

// ReserveSeq durably records that the session may use seqs up to upTo; the mark
// only grows (a lower upTo changes nothing). After a restart the session continues
// at SeqMark()+1, so a seq handed out before a crash is never handed out again,
// even if its update was never stored. ErrNotFound when there is no such session.
func (s *Store) ReserveSeq(ctx context.Context, sessionID string, upTo uint64) error {
	mark, err := seqArg(upTo)
	if err != nil {
		return err
	}
	return s.write(ctx, OpReserveSeq, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE sessions SET seq_mark = max(seq_mark, ?) WHERE id = ?", mark, sessionID)
		if err != nil {
			return fmt.Errorf("store: reserving seqs of %s: %w", sessionID, err)
		}
		return mustAffect(res, sessionID)
	})
}

// SeqMark returns the reserved seq high-water mark: 0 for a new session.
func (s *Store) SeqMark(ctx context.Context, sessionID string) (uint64, error) {
	var mark int64
	err := s.r.QueryRowContext(ctx, "SELECT seq_mark FROM sessions WHERE id = ?", sessionID).Scan(&mark)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: session %s", ErrNotFound, sessionID)
	}
	if err != nil {
		return 0, fmt.Errorf("store: reading the seq mark of %s: %w", sessionID, err)
	}
	return uint64(mark), nil
}

// AppendUpdates stores a batch of updates, of any sessions, in one transaction
// (group commit), then trims each session it touched to its newest Keep updates.
// It is meant to be fed from behind the live stream, so:
//   - an update of a session that no longer exists (deleted meanwhile) is skipped;
//   - an update whose (session, seq) is already stored is skipped, so retrying a
//     batch is harmless;
//   - each session's seq mark is raised to the highest seq of the batch, so a
//     stored seq is always a reserved one, whatever the caller reserved.
func (s *Store) AppendUpdates(ctx context.Context, batch []Update) error {
	if len(batch) == 0 {
		return nil
	}
	// Per session, in first-seen order, its updates in batch order.
	bySession := map[string][]Update{}
	var order []string
	for _, u := range batch {
		if _, err := seqArg(u.Seq); err != nil {
			return err
		}
		if _, seen := bySession[u.SessionID]; !seen {
			order = append(order, u.SessionID)
		}
		bySession[u.SessionID] = append(bySession[u.SessionID], u)
	}
	return s.write(ctx, OpAppendUpdates, func(tx *sql.Tx) error {
		for _, id := range order {
			err := sessionExists(ctx, tx, id)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			added, maxSeq, err := insertUpdates(ctx, tx, id, bySession[id])
			if err != nil {
				return err
			}
			if added > 0 {
				if err := s.keepNewest(ctx, tx, id, added, maxSeq); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// updatesPerInsert rows go in one multi-row INSERT: a statement per row costs a
// parse and a VM start each, which dominated a batch (3 parameters a row stays far
// below SQLite's limit of 32,766).
const updatesPerInsert = 128

// insertUpdates stores one session's updates, skipping seqs already stored, and
// returns how many it added and the highest seq among them.
func insertUpdates(ctx context.Context, tx *sql.Tx, sessionID string, us []Update) (added, maxSeq int64, err error) {
	for len(us) > 0 {
		chunk := us[:min(len(us), updatesPerInsert)]
		us = us[len(chunk):]
		var q strings.Builder
		q.WriteString("INSERT INTO updates (session_id, seq, payload) VALUES ")
		args := make([]any, 0, 3*len(chunk))
		for i, u := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?)")
			payload := u.Payload
			if payload == nil {
				payload = []byte{} // NOT NULL: an empty payload is still a payload
			}
			args = append(args, sessionID, int64(u.Seq), payload)
			maxSeq = max(maxSeq, int64(u.Seq))
		}
		q.WriteString(" ON CONFLICT (session_id, seq) DO NOTHING")
		res, err := tx.ExecContext(ctx, q.String(), args...)
		if err != nil {
			return 0, 0, fmt.Errorf("store: storing updates of %s: %w", sessionID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, 0, fmt.Errorf("store: storing updates of %s: %w", sessionID, err)
		}
		added += n
	}
	return added, maxSeq, nil
}

// keepNewest counts the added updates, raises the seq mark, and deletes the oldest
// updates beyond Keep. The count (updates_kept) spares a scan of Keep index
// entries in every batch: only the excess is visited.
func (s *Store) keepNewest(ctx context.Context, tx *sql.Tx, sessionID string, added, maxSeq int64) error {
	var kept int64
	err := tx.QueryRowContext(ctx, `UPDATE sessions SET updates_kept = updates_kept + ?, seq_mark = max(seq_mark, ?)
		WHERE id = ? RETURNING updates_kept`, added, maxSeq, sessionID).Scan(&kept)
	if err != nil {
		return fmt.Errorf("store: counting the updates of %s: %w", sessionID, err)
	}
	// Trimming waits for some slack (1/16 of Keep) and then deletes it all at once:
	// a delete per batch costs as much as the batch's inserts. So between Keep and
	// Keep+Keep/16 updates are kept, never fewer than Keep.
	excess := kept - int64(s.keep)
	if excess <= int64(s.keep/16) {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM updates WHERE session_id = ?1
		AND seq < (SELECT seq FROM updates WHERE session_id = ?1 ORDER BY seq LIMIT 1 OFFSET ?2)`,
		sessionID, excess); err != nil {
		return fmt.Errorf("store: trimming the updates of %s: %w", sessionID, err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE sessions SET updates_kept = ? WHERE id = ?", s.keep, sessionID); err != nil {
		return fmt.Errorf("store: trimming the updates of %s: %w", sessionID, err)
	}
	return nil
}

// Updates calls fn with every stored update of the session with seq > afterSeq, in
// seq order, and returns the oldest seq still kept (0 when none is). All of it reads
// one snapshot, so oldest and the updates agree. The caller decides
// replay_truncated: updates were lost when afterSeq+1 < oldest. fn runs while a read
// connection is held: it should not block for long. An error from fn stops the
// replay and is returned. ErrNotFound when there is no such session.
func (s *Store) Updates(ctx context.Context, sessionID string, afterSeq uint64, fn func(Update) error) (uint64, error) {
	after := int64(math.MaxInt64)
	if afterSeq < math.MaxInt64 {
		after = int64(afterSeq)
	}
	var oldest int64
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := sessionExists(ctx, tx, sessionID); err != nil {
			return err
		}
		var min sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT min(seq) FROM updates WHERE session_id = ?", sessionID).Scan(&min); err != nil {
			return fmt.Errorf("store: reading the updates of %s: %w", sessionID, err)
		}
		oldest = min.Int64
		rows, err := tx.QueryContext(ctx, "SELECT seq, payload FROM updates WHERE session_id = ? AND seq > ? ORDER BY seq",
			sessionID, after)
		if err != nil {
			return fmt.Errorf("store: reading the updates of %s: %w", sessionID, err)
		}
		defer rows.Close()
		for rows.Next() {
			u := Update{SessionID: sessionID}
			var seq int64
			if err := rows.Scan(&seq, &u.Payload); err != nil {
				return fmt.Errorf("store: reading the updates of %s: %w", sessionID, err)
			}
			u.Seq = uint64(seq)
			if err := fn(u); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return 0, err
	}
	return uint64(oldest), nil
}
