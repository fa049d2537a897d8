package store

import (
	"context"
	"database/sql"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"sync"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// Turn states.
const (
	TurnRunning     = "running"
	TurnComplete    = "complete"
	TurnInterrupted = "interrupted"
)

// ErrTurnNotRunning: a checkpoint for a turn that has already ended.
var ErrTurnNotRunning = errors.New("store: turn is not running")

// BeginTurn records turnID as running and prompt as its first checkpoint, in one
// transaction, touches last_activity, and returns the checkpoint's id. ErrNotFound
// when the session does not exist; an error when the turn id was used before.
func (s *Store) BeginTurn(ctx context.Context, sessionID, turnID string, prompt llm.Message) (int64, error) {
	return s.BeginTurnFor(ctx, sessionID, turnID, "", prompt)
}

// BeginTurnFor is BeginTurn for the turn that answers operationID (docs/protocol.md,
// "session/prompt"): the id is kept with the turn in the same transaction, and the
// session's oldest ids beyond MaxOperations are forgotten. An empty operationID is
// BeginTurn.
func (s *Store) BeginTurnFor(ctx context.Context, sessionID, turnID, operationID string, prompt llm.Message) (int64, error) {
	return s.beginTurn(ctx, sessionID, turnID, operationID, prompt, nil, nil)
}

// BeginTurnShown is BeginTurnFor that also stores shown, the session/update that
// shows the prompt (its user_message), in the replay log, in the same transaction:
// the update is stored exactly when the prompt is, and the turn's first visible
// update needs no group commit of its own. shown's session is sessionID; its seq
// must be above every stored one (a lower one is skipped, as AppendUpdates skips it).
func (s *Store) BeginTurnShown(ctx context.Context, sessionID, turnID, operationID string, prompt llm.Message, shown Update) (int64, error) {
	return s.BeginTurnShownQuoted(ctx, sessionID, turnID, operationID, prompt, nil, shown)
}

// BeginTurnShownQuoted is BeginTurnShown for a prompt (a user message of text only)
// whose text the caller has as a JSON string too, quoted, as its client sent it:
// the stored message embeds quoted instead of encoding the text again (a 40 KB
// prompt took 0.1–0.2 ms to encode, before the turn could start). quoted nil, or a
// prompt of anything but text, is BeginTurnShown.
func (s *Store) BeginTurnShownQuoted(ctx context.Context, sessionID, turnID, operationID string, prompt llm.Message, quoted jsontext.Value, shown Update) (int64, error) {
	if shown.SessionID != sessionID {
		return 0, fmt.Errorf("store: beginning turn %s of %s: its update belongs to session %q", turnID, sessionID, shown.SessionID)
	}
	if _, err := seqArg(shown.Seq); err != nil {
		return 0, err
	}
	return s.beginTurn(ctx, sessionID, turnID, operationID, prompt, quoted, &shown)
}

func (s *Store) beginTurn(ctx context.Context, sessionID, turnID, operationID string, prompt llm.Message, quoted jsontext.Value, shown *Update) (int64, error) {
	msg, err := encodePrompt(prompt, quoted)
	if err != nil {
		return 0, err
	}
	var lost uint64
	var hadLost bool
	if shown != nil {
		lost, hadLost = s.lostOf(sessionID)
	}
	now := ms(s.now())
	var id int64
	err = s.write(ctx, OpBeginTurn, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, qTouchSession, now, sessionID)
		if err != nil {
			return fmt.Errorf("store: beginning turn %s of %s: %w", turnID, sessionID, err)
		}
		if err := mustAffect(res, sessionID); err != nil {
			return err
		}
		var one int
		err = s.queryRow(ctx, tx, qTurnExists, []any{sessionID, turnID}, &one)
		if err == nil {
			return fmt.Errorf("store: beginning turn %s of %s: the turn id was used before", turnID, sessionID)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: beginning turn %s of %s: %w", turnID, sessionID, err)
		}
		if _, err := s.exec(ctx, tx, qInsertTurn,
			sessionID, turnID, TurnRunning, now); err != nil {
			return fmt.Errorf("store: beginning turn %s of %s: %w", turnID, sessionID, err)
		}
		if operationID != "" {
			if err := s.insertOperation(ctx, tx, sessionID, operationID, turnID); err != nil {
				return err
			}
		}
		if id, err = s.insertCheckpoint(ctx, tx, sessionID, turnID, msg); err != nil {
			return err
		}
		if shown != nil {
			return s.appendSession(ctx, tx, sessionID, []Update{*shown}, lost, hadLost, 0, true) // trimmed by the next batch, which knows the readers
		}
		return nil
	})
	if err != nil {
		// The update was not stored, and never shown: it is not lost, the caller
		// does not send it.
		return 0, err
	}
	if shown != nil {
		s.settleLost(sessionID, lost, hadLost)
	}
	s.rows.put(id, turnID, prompt)
	return id, nil
}

// AppendCheckpoint appends m, a message that just joined the model context of the
// running turn, in its own transaction, and returns its id; ids increase and are
// never reused. A crash loses at most the checkpoint being written. ErrTurnNotRunning
// when the turn has ended (or never began).
func (s *Store) AppendCheckpoint(ctx context.Context, sessionID, turnID string, m llm.Message) (int64, error) {
	msg, err := encodeMessage(m)
	if err != nil {
		return 0, err
	}
	var id int64
	err = s.write(ctx, OpCheckpoint, func(tx *sql.Tx) error {
		state, err := s.turnState(ctx, tx, sessionID, turnID)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return fmt.Errorf("%w: %w", ErrTurnNotRunning, err)
			}
			return err
		}
		if state != TurnRunning {
			return fmt.Errorf("%w: turn %s of %s is %s", ErrTurnNotRunning, turnID, sessionID, state)
		}
		id, err = s.insertCheckpoint(ctx, tx, sessionID, turnID, msg)
		return err
	})
	if err != nil {
		return 0, err
	}
	s.rows.put(id, turnID, m)
	return id, nil
}

func (s *Store) insertCheckpoint(ctx context.Context, tx *sql.Tx, sessionID, turnID, msg string) (int64, error) {
	res, err := s.exec(ctx, tx, qInsertCheckpoint,
		sessionID, turnID, msg)
	if err != nil {
		return 0, fmt.Errorf("store: checkpoint of turn %s of %s: %w", turnID, sessionID, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("store: checkpoint of turn %s of %s: %w", turnID, sessionID, err)
	}
	return id, nil
}

func (s *Store) turnState(ctx context.Context, tx *sql.Tx, sessionID, turnID string) (string, error) {
	var state string
	err := s.queryRow(ctx, tx, qTurnState, []any{sessionID, turnID}, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("%w: turn %s of session %s", ErrNotFound, turnID, sessionID)
	}
	if err != nil {
		return "", fmt.Errorf("store: reading turn %s of %s: %w", turnID, sessionID, err)
	}
	return state, nil
}

// EndTurn closes a turn in one transaction: its checkpoint messages are appended
// to the visible transcript (see Row), the turn is marked complete, and
// last_activity is touched. Ending a turn that has already ended changes nothing
// and returns nil, so a caller may retry after an error. ErrNotFound when there is
// no such turn.
func (s *Store) EndTurn(ctx context.Context, sessionID, turnID string) error {
	return s.endTurn(ctx, sessionID, turnID, nil)
}

func (s *Store) endTurn(ctx context.Context, sessionID, turnID string, r *TurnResult) error {
	_, err := s.endTurnWith(ctx, sessionID, turnID, nil, r)
	return err
}

// EndTurnWithMessage is EndTurnWith that first appends m as the turn's last
// checkpoint, in the same transaction: a turn's final answer and its end cost one
// commit, not two, and a crash loses at most that one write, as with
// AppendCheckpoint then EndTurnWith. It returns m's checkpoint id. Unlike
// EndTurnWith, a turn that has already ended (or never began) is
// ErrTurnNotRunning: m cannot join it.
func (s *Store) EndTurnWithMessage(ctx context.Context, sessionID, turnID string, m llm.Message, r TurnResult) (int64, error) {
	msg, err := encodeMessage(m)
	if err != nil {
		return 0, err
	}
	return s.endTurnWith(ctx, sessionID, turnID, &finalMessage{raw: msg, m: m}, &r)
}

// finalMessage is the last checkpoint of a turn, stored as the turn ends.
type finalMessage struct {
	raw string
	m   llm.Message
}

func (s *Store) endTurnWith(ctx context.Context, sessionID, turnID string, final *finalMessage, r *TurnResult) (int64, error) {
	var id int64
	err := s.write(ctx, OpEndTurn, func(tx *sql.Tx) error {
		state, err := s.turnState(ctx, tx, sessionID, turnID)
		if final != nil {
			if errors.Is(err, ErrNotFound) {
				return fmt.Errorf("%w: %w", ErrTurnNotRunning, err)
			}
			if err == nil && state != TurnRunning {
				return fmt.Errorf("%w: turn %s of %s is %s", ErrTurnNotRunning, turnID, sessionID, state)
			}
		}
		if err != nil || state != TurnRunning {
			return err
		}
		if id, err = s.finishTurn(ctx, tx, sessionID, turnID, TurnComplete, final, nil); err != nil {
			return err
		}
		if r != nil {
			if err := s.setOperationResult(ctx, tx, sessionID, turnID, *r); err != nil {
				return err
			}
		}
		// The touch adds the turn's usage to the session's totals: one statement.
		var in, out int
		if r != nil {
			in, out = r.InputTokens, r.OutputTokens
		}
		if _, err := s.exec(ctx, tx, qTouchAddUsage, ms(s.now()), in, out, sessionID); err != nil {
			return fmt.Errorf("store: ending turn %s of %s: %w", turnID, sessionID, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// InterruptTurn finishes a running turn that cannot go on because storing its
// progress failed (docs/protocol.md, "Storage failures"), as Recover does after a
// crash: in one transaction the checkpoints it did store join the visible transcript,
// then one marker row (RoleMarker, Interrupted) whose text is reason, and the turn is
// marked interrupted. The model context needs no change: the stored checkpoints are
// in it. A turn that has already ended changes nothing and returns nil, so a caller
// may retry after an error. ErrNotFound when there is no such turn.
func (s *Store) InterruptTurn(ctx context.Context, sessionID, turnID, reason string) error {
	return s.write(ctx, OpInterrupt, func(tx *sql.Tx) error {
		state, err := s.turnState(ctx, tx, sessionID, turnID)
		if err != nil || state != TurnRunning {
			return err
		}
		marker := Row{Role: RoleMarker, Text: reason, TurnID: turnID, Interrupted: true}
		_, err = s.finishTurn(ctx, tx, sessionID, turnID, TurnInterrupted, nil, []Row{marker})
		return err
	})
}

// finishTurn transcribes a running turn's checkpoints, then final (stored as its
// last checkpoint, whose id it returns; 0 without one), then the extra rows, sets
// its final state, and drops the checkpoints a snapshot already covers: Trim keeps
// those of running turns only until they reach the transcript. A checkpoint this
// Store committed and cached is not read back: ids are never reused (AUTOINCREMENT)
// and checkpoints never change, so the cached rows are its rows.
func (s *Store) finishTurn(ctx context.Context, tx *sql.Tx, sessionID, turnID, state string, final *finalMessage, extra []Row) (int64, error) {
	fail := func(err error) (int64, error) {
		return 0, fmt.Errorf("store: reading the checkpoints of turn %s of %s: %w", turnID, sessionID, err)
	}
	rows, err := s.query(ctx, tx, qTurnCheckpointIDs, sessionID, turnID)
	if err != nil {
		return fail(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fail(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Close(); err != nil {
		return fail(err)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	var visible []Row
	for _, id := range ids {
		if cached, ok := s.rows.take(id); ok {
			visible = append(visible, cached...)
			continue
		}
		var raw []byte
		if err := s.queryRow(ctx, tx, qCheckpointMessage, []any{id}, &raw); err != nil {
			return fail(err)
		}
		m, err := decodeMessage(raw)
		if err != nil {
			return 0, err
		}
		visible = append(visible, rowsOf(turnID, m)...)
	}
	var finalID int64
	if final != nil {
		if finalID, err = s.insertCheckpoint(ctx, tx, sessionID, turnID, final.raw); err != nil {
			return 0, err
		}
		visible = append(visible, rowsOf(turnID, final.m)...)
	}
	if err := s.appendRows(ctx, tx, sessionID, append(visible, extra...)); err != nil {
		return 0, err
	}
	if _, err := s.exec(ctx, tx, qSetTurnState,
		state, sessionID, turnID); err != nil {
		return 0, fmt.Errorf("store: ending turn %s of %s: %w", turnID, sessionID, err)
	}
	if _, err := s.exec(ctx, tx, qDropCoveredCheckpoints, sessionID, turnID); err != nil {
		return 0, fmt.Errorf("store: ending turn %s of %s: %w", turnID, sessionID, err)
	}
	return finalID, nil
}

// Recover finishes the turns a crash left running, oldest first, each in its own
// transaction: the turn's checkpoint progress is appended to the visible transcript,
// then one marker row (RoleMarker, Interrupted, InterruptedText), and the turn is
// marked interrupted. It returns how many turns it recovered; a second call finds
// none and adds nothing. The model context needs no change: the checkpoints are
// already in it, and Context answers any call left without a result.
//
// Call it only for a session no live turn is writing to (on restore). A session of
// another interaction surface is left untouched: ErrUnsupportedSurface.
func (s *Store) Recover(ctx context.Context, sessionID string) (int, error) {
	var surface string
	err := s.r.QueryRowContext(ctx, "SELECT interaction_surface FROM sessions WHERE id = ?", sessionID).Scan(&surface)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: session %s", ErrNotFound, sessionID)
	}
	if err != nil {
		return 0, fmt.Errorf("store: recovering %s: %w", sessionID, err)
	}
	if surface != SurfaceRPC {
		return 0, fmt.Errorf("%w: session %s was written by %q", ErrUnsupportedSurface, sessionID, surface)
	}
	turns, err := s.runningTurns(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	recovered := 0
	for _, turnID := range turns {
		finished := false
		err := s.write(ctx, OpRecover, func(tx *sql.Tx) error {
			state, err := s.turnState(ctx, tx, sessionID, turnID)
			if err != nil || state != TurnRunning {
				return err // ended since we looked: nothing to do
			}
			marker := Row{Role: RoleMarker, Text: InterruptedText, TurnID: turnID, Interrupted: true}
			finished = true
			if _, err := s.finishTurn(ctx, tx, sessionID, turnID, TurnInterrupted, nil, []Row{marker}); err != nil {
				return err
			}
			return s.setOperationResult(ctx, tx, sessionID, turnID, InterruptedResult)
		})
		if err != nil {
			return recovered, err
		}
		if finished {
			recovered++
		}
	}
	return recovered, nil
}

func (s *Store) runningTurns(ctx context.Context, sessionID string) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT turn_id FROM turns WHERE session_id = ?1 AND state = ?2 ORDER BY started_at,
		(SELECT min(c.id) FROM checkpoints c WHERE c.session_id = ?1 AND c.turn_id = turns.turn_id), turn_id`,
		sessionID, TurnRunning)
	if err != nil {
		return nil, fmt.Errorf("store: recovering %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: recovering %s: %w", sessionID, err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// rowCache keeps, for the checkpoints this Store committed and whose turn has not
// ended, the transcript rows they become, so that ending the turn need neither read
// back nor decode what it just encoded (a streamed turn's reply is tens of KB). An
// entry is made only once its checkpoint committed; any other checkpoint (one of
// before a restart, one whose entry was forgotten) is read and decoded.
type rowCache struct {
	mu sync.Mutex
	m  map[int64][]Row
}

// maxCachedRows bounds the cache: the checkpoints of turns that never end here
// (their session deleted, the process stopping) are forgotten once it fills.
const maxCachedRows = 256

// put records the committed checkpoint id, message m of turnID.
func (c *rowCache) put(id int64, turnID string, m llm.Message) {
	rows := rowsOf(turnID, m)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedRows {
		c.m = make(map[int64][]Row)
	}
	c.m[id] = rows
}

// take returns and forgets the rows of checkpoint id.
func (c *rowCache) take(id int64) ([]Row, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rows, ok := c.m[id]
	delete(c.m, id)
	return rows, ok
}
