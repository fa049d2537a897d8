package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sync"
)

// The queries of AppendUpdates (and CreateSession's lookup), prepared once
// (Store.stmt).
const (
	qSessionExists = "SELECT 1 FROM sessions WHERE id = ?"
	qStoredSeq     = "SELECT max(last_seq) FROM update_runs WHERE session_id = ?"
	qInsertRun     = "INSERT INTO update_runs (session_id, first_seq, last_seq, payload) VALUES (?, ?, ?, ?)"
	qCountKept     = `UPDATE sessions SET updates_kept = updates_kept + ?, seq_mark = max(seq_mark, ?)
		WHERE id = ? RETURNING updates_kept`
	qRuns      = "SELECT first_seq, last_seq FROM update_runs WHERE session_id = ? ORDER BY last_seq"
	qDropRuns  = "DELETE FROM update_runs WHERE session_id = ? AND last_seq <= ?"
	qSetKept   = "UPDATE sessions SET updates_kept = ? WHERE id = ?"
	qRaiseMark = "UPDATE sessions SET seq_mark = max(seq_mark, ?) WHERE id = ?"
)

var preparedQueries = append([]string{qSessionExists, qStoredSeq, qInsertRun, qCountKept, qRuns, qDropRuns, qSetKept, qRaiseMark, qInsertSession}, append(turnQueries, trimQueries...)...)

// exec runs one of preparedQueries in tx.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := s.stmt(ctx, tx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// query runs one of preparedQueries in tx.
func (s *Store) query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	st, err := s.stmt(ctx, tx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryRow runs one of preparedQueries in tx and scans its one row into dest.
func (s *Store) queryRow(ctx context.Context, tx *sql.Tx, query string, args []any, dest ...any) error {
	st, err := s.stmt(ctx, tx, query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(ctx, args...).Scan(dest...)
}

// Update is one stored session/update notification.
type Update struct {
	SessionID string
	Seq       uint64
	Payload   []byte // the notification's params, as sent
	// Shape, when not nil, is how Payload was made: updates of one shape in a run
	// are stored compact without the store comparing their bytes (runs.go).
	Shape *Shape
}

// Shape is how the payloads of a kind of update are made: Prefix, the update's
// seq in decimal, Middle, a core of the update's own, and Suffix. No part of a
// payload of a shape holds a newline, and the prefix starts with neither mark of
// a run (runs.go): a streamed text chunk's params, whose core is its quoted text,
// are such. Whoever makes the payloads keeps one Shape for as long as its parts
// stay the same, and never changes one once an update points to it.
type Shape struct {
	Prefix, Middle, Suffix []byte
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
		res, err := s.exec(ctx, tx, qRaiseMark, mark, sessionID)
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
//
// A batch that fails to store (disk full) is not silently forgotten
// (docs/protocol.md, "Storage failures"): the store remembers, per session, the
// highest seq it lost. Until the next write of that
// session works, Updates reports every seq up to it as no longer kept; that write
// then drops the session's older updates in the same transaction, so the log that
// remains has no gap and a replay from before the loss answers replay_truncated
// instead of skipping what was lost. (What the store remembers is lost with the
// process: a restart while writes still fail leaves the gap unmarked.)
func (s *Store) AppendUpdates(ctx context.Context, batch []Update) error {
	return s.AppendUpdatesHeld(ctx, batch, nil)
}

// Hold says that a session's readers still need every update after After: its
// trimming to the newest Keep spares every run holding a later seq
// (docs/protocol.md, "No reader is lost").
type Hold struct {
	SessionID string
	After     uint64
}

// AppendUpdatesHeld is AppendUpdates whose trimming spares what holds name: a
// session with a hold keeps its newest Keep updates and every update after the
// hold's seq.
func (s *Store) AppendUpdatesHeld(ctx context.Context, batch []Update, holds []Hold) error {
	if len(batch) == 0 {
		return nil
	}
	// Per session, in first-seen order, its updates in batch order. A batch of one
	// session (a streaming turn's) is used as it is.
	bySession := map[string][]Update{}
	var order []string
	single := true
	for _, u := range batch {
		if _, err := seqArg(u.Seq); err != nil {
			return err
		}
		single = single && u.SessionID == batch[0].SessionID
	}
	if single {
		order, bySession[batch[0].SessionID] = []string{batch[0].SessionID}, batch
	} else {
		for _, u := range batch {
			if _, seen := bySession[u.SessionID]; !seen {
				order = append(order, u.SessionID)
			}
			bySession[u.SessionID] = append(bySession[u.SessionID], u)
		}
	}
	s.lostMu.Lock()
	lost := make(map[string]uint64)
	for _, id := range order {
		if l, ok := s.lost[id]; ok {
			lost[id] = l
		}
	}
	s.lostMu.Unlock()
	err := s.write(ctx, OpAppendUpdates, func(tx *sql.Tx) error {
		for _, id := range order {
			var one int
			err := s.queryRow(ctx, tx, qSessionExists, []any{id}, &one)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return fmt.Errorf("store: looking up session %s: %w", id, err)
			}
			l, ok := lost[id]
			h, held := holdOf(holds, id)
			if err := s.appendSession(ctx, tx, id, bySession[id], l, ok, h, held); err != nil {
				return err
			}
		}
		return nil
	})
	s.lostMu.Lock()
	defer s.lostMu.Unlock()
	for _, id := range order {
		if err != nil {
			us := bySession[id]
			s.lost[id] = max(s.lost[id], us[len(us)-1].Seq, lost[id])
		} else {
			l, ok := lost[id]
			s.settleLostLocked(id, l, ok)
		}
	}
	return err
}

// holdOf returns the seq after which id's updates are held, if any hold names it.
func holdOf(holds []Hold, id string) (uint64, bool) {
	for _, h := range holds {
		if h.SessionID == id {
			return h.After, true
		}
	}
	return 0, false
}

// appendSession stores us, updates of the existing session id, in tx: first, when
// hadLost, it drops the ones before the gap a failed batch left (through lost),
// then stores us and trims the session to its newest Keep, sparing what is after
// hold when held.
func (s *Store) appendSession(ctx context.Context, tx *sql.Tx, id string, us []Update, lost uint64, hadLost bool, hold uint64, held bool) error {
	if hadLost {
		if err := dropThrough(ctx, tx, id, lost); err != nil {
			return err
		}
	}
	added, maxSeq, err := s.insertUpdates(ctx, tx, id, us)
	if err != nil {
		return err
	}
	if added > 0 {
		return s.keepNewest(ctx, tx, id, added, maxSeq, hold, held)
	}
	return nil
}

// lostOf returns the highest seq of the session that a failed batch lost, if any.
func (s *Store) lostOf(id string) (uint64, bool) {
	s.lostMu.Lock()
	defer s.lostMu.Unlock()
	l, ok := s.lost[id]
	return l, ok
}

// settleLost forgets the session's loss once a write of its updates that began
// knowing it (lost, hadLost) committed: the gap is gone with what it dropped. A
// loss recorded meanwhile stays.
func (s *Store) settleLost(id string, lost uint64, hadLost bool) {
	s.lostMu.Lock()
	defer s.lostMu.Unlock()
	s.settleLostLocked(id, lost, hadLost)
}

// settleLostLocked is settleLost with lostMu held.
func (s *Store) settleLostLocked(id string, lost uint64, hadLost bool) {
	if l, ok := s.lost[id]; ok && hadLost && l == lost {
		delete(s.lost, id)
	}
}

// dropThrough deletes the session's stored updates with seq <= through: the ones
// before a gap that a failed batch left.
func dropThrough(ctx context.Context, tx *sql.Tx, sessionID string, through uint64) error {
	mark, err := seqArg(through)
	if err != nil {
		return err
	}
	var removed sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT sum(last_seq - first_seq + 1) FROM update_runs WHERE session_id = ? AND last_seq <= ?",
		sessionID, mark).Scan(&removed); err != nil {
		return fmt.Errorf("store: dropping the updates of %s before a gap: %w", sessionID, err)
	}
	if removed.Int64 == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM update_runs WHERE session_id = ? AND last_seq <= ?", sessionID, mark); err != nil {
		return fmt.Errorf("store: dropping the updates of %s before a gap: %w", sessionID, err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE sessions SET updates_kept = updates_kept - ? WHERE id = ?", removed.Int64, sessionID); err != nil {
		return fmt.Errorf("store: dropping the updates of %s before a gap: %w", sessionID, err)
	}
	return nil
}

// maxRun bounds the updates of one row of update_runs.
const maxRun = 1024

// insertUpdates stores one session's updates as runs of consecutive seqs, skipping
// seqs at or below the highest already stored (a retried batch, or a late update of
// an older seq, adds nothing), and returns how many it added and the highest seq.
func (s *Store) insertUpdates(ctx context.Context, tx *sql.Tx, sessionID string, us []Update) (added, maxSeq int64, err error) {
	var stored sql.NullInt64
	if err := s.queryRow(ctx, tx, qStoredSeq, []any{sessionID}, &stored); err != nil {
		return 0, 0, fmt.Errorf("store: storing updates of %s: %w", sessionID, err)
	}
	fresh := us // when every seq is new and they increase, as a live stream's do
	for i, u := range us {
		if int64(u.Seq) > stored.Int64 && int64(u.Seq) > maxSeq {
			if len(fresh) < len(us) {
				fresh = append(fresh, u)
			}
			maxSeq = int64(u.Seq)
		} else if len(fresh) == len(us) {
			fresh = append(make([]Update, 0, len(us)), us[:i]...)
		}
	}
	insert, err := s.stmt(ctx, tx, qInsertRun)
	if err != nil {
		return 0, 0, fmt.Errorf("store: storing updates of %s: %w", sessionID, err)
	}
	scratch := runBuffers.Get().(*[]byte)
	defer runBuffers.Put(scratch)
	for len(fresh) > 0 {
		n := runLength(fresh)
		run := fresh[:n]
		fresh = fresh[n:]
		payload := run[0].Payload
		if n > 1 {
			payload = encodeRun(*scratch, run)
			*scratch = payload[:0] // bound by copy: the next run is written over it
		}
		if payload == nil {
			payload = []byte{} // NOT NULL: an empty payload is still a payload
		}
		if _, err := insert.ExecContext(ctx, sessionID, int64(run[0].Seq), int64(run[n-1].Seq), payload); err != nil {
			return 0, 0, fmt.Errorf("store: storing updates of %s: %w", sessionID, err)
		}
		added += int64(n)
	}
	return added, maxSeq, nil
}

// runBuffers hold what runs are encoded into before they are stored: a streamed
// turn's group commits encoded 100 KB of runs a turn into new buffers.
var runBuffers = sync.Pool{New: func() any { return new([]byte) }}

// runLength is how many of us (increasing seqs) form the next run: consecutive seqs
// whose payloads are joinable, at most maxRun. Any other update is a run of its
// own, so a stored run always splits back exactly.
func runLength(us []Update) int {
	if !joinable(us[0]) {
		return 1
	}
	n := 1
	for n < len(us) && n < maxRun && us[n].Seq == us[n-1].Seq+1 && joinable(us[n]) {
		n++
	}
	return n
}

// maxJoined is the largest payload stored in a run with others: a large one (a
// prompt's user_message, a tool's output) saves nothing by joining, and what it
// does not share with the chunks after it would be kept with each of them (runs.go).
const maxJoined = 1 << 10

// joinable reports whether u may be stored in a run with others (runs.go): its
// payload is at most maxJoined bytes, holds no newline and does not start with a
// run's mark, which a payload of a Shape never does.
func joinable(u Update) bool {
	p := u.Payload
	if len(p) > maxJoined {
		return false
	}
	return u.Shape != nil || ((len(p) == 0 || (p[0] != compactMark && p[0] != framedMark)) && bytes.IndexByte(p, '\n') < 0)
}

// keepNewest counts the added updates, raises the seq mark, and, once the session
// keeps more than Keep by some slack (1/16 of Keep), deletes its oldest runs as long
// as at least Keep updates remain: between Keep and Keep plus a run and the slack are
// kept, never fewer than Keep. The count (updates_kept) spares reading the log in
// every batch. When held, no run with a seq after hold is deleted: the oldest
// such run stops the trimming (so a held session reads one row of the log).
func (s *Store) keepNewest(ctx context.Context, tx *sql.Tx, sessionID string, added, maxSeq int64, hold uint64, held bool) error {
	var kept int64
	if err := s.queryRow(ctx, tx, qCountKept, []any{added, maxSeq, sessionID}, &kept); err != nil {
		return fmt.Errorf("store: counting the updates of %s: %w", sessionID, err)
	}
	keep := int64(s.keep)
	if kept-keep <= keep/16 {
		return nil
	}
	rows, err := s.query(ctx, tx, qRuns, sessionID)
	if err != nil {
		return fmt.Errorf("store: trimming the updates of %s: %w", sessionID, err)
	}
	var cutoff, removed int64
	for rows.Next() {
		var first, last int64
		if err := rows.Scan(&first, &last); err != nil {
			rows.Close()
			return fmt.Errorf("store: trimming the updates of %s: %w", sessionID, err)
		}
		if kept-removed-(last-first+1) < keep || (held && uint64(last) > hold) {
			break
		}
		removed += last - first + 1
		cutoff = last
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: trimming the updates of %s: %w", sessionID, err)
	}
	if removed == 0 {
		return nil
	}
	if _, err := s.exec(ctx, tx, qDropRuns, sessionID, cutoff); err != nil {
		return fmt.Errorf("store: trimming the updates of %s: %w", sessionID, err)
	}
	if _, err := s.exec(ctx, tx, qSetKept, kept-removed, sessionID); err != nil {
		return fmt.Errorf("store: trimming the updates of %s: %w", sessionID, err)
	}
	return nil
}

// Updates calls fn with every stored update of the session with seq > afterSeq, in
// seq order, and returns the oldest seq still kept (0 when none is). All of it reads
// one snapshot, so oldest and the updates agree. The caller decides
// replay_truncated: updates were lost when afterSeq+1 < oldest (also when a batch
// failed to store: see AppendUpdates). fn runs while a read
// connection is held: it should not block for long. An error from fn stops the
// replay and is returned, with the oldest seq kept (a caller may stop once it read
// what it wants). ErrNotFound when there is no such session.
func (s *Store) Updates(ctx context.Context, sessionID string, afterSeq uint64, fn func(Update) error) (uint64, error) {
	after := int64(math.MaxInt64)
	if afterSeq < math.MaxInt64 {
		after = int64(afterSeq)
	}
	s.lostMu.Lock()
	lost, gap := s.lost[sessionID]
	s.lostMu.Unlock()
	var oldest int64
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := sessionExists(ctx, tx, sessionID); err != nil {
			return err
		}
		if gap && afterSeq < lost { // updates up to lost failed to store: none of it is replayable
			oldest = int64(lost) + 1
			return nil
		}
		var min sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT min(first_seq) FROM update_runs WHERE session_id = ?", sessionID).Scan(&min); err != nil {
			return fmt.Errorf("store: reading the updates of %s: %w", sessionID, err)
		}
		oldest = min.Int64
		rows, err := tx.QueryContext(ctx, "SELECT first_seq, last_seq, payload FROM update_runs WHERE session_id = ? AND last_seq > ? ORDER BY last_seq",
			sessionID, after)
		if err != nil {
			return fmt.Errorf("store: reading the updates of %s: %w", sessionID, err)
		}
		defer rows.Close()
		for rows.Next() {
			var first, last int64
			var payload []byte
			if err := rows.Scan(&first, &last, &payload); err != nil {
				return fmt.Errorf("store: reading the updates of %s: %w", sessionID, err)
			}
			parts, err := decodeRun(payload, first, last)
			if err != nil {
				return fmt.Errorf("store: %s: %w", sessionID, err)
			}
			for i, p := range parts {
				seq := first + int64(i)
				if seq <= after {
					continue
				}
				if err := fn(Update{SessionID: sessionID, Seq: uint64(seq), Payload: p}); err != nil {
					return err
				}
			}
		}
		return rows.Err()
	})
	if err != nil {
		return uint64(oldest), err // oldest is read first: a caller that stops early has it
	}
	return uint64(oldest), nil
}
