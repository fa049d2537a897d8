package session

import (
	"bytes"
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io/fs"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/agent"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/feed"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// What a turn does when a write it owes storage fails (docs/protocol.md,
// "Storage failures"): it fails, visibly, and never reports success.
//
//   - The prompt is stored (BeginTurn) before the model is called; when that fails the
//     prompt answers a Storage error and nothing else happens.
//   - A checkpoint that fails mid-turn cancels the turn at once (cause: the storage
//     error), so no further model call or tool runs on a history the store does not
//     have; a commit (EndTurn) that fails fails the turn too. Either way the turn ends
//     with stopReason "error" and a text starting "storage failed:".
//   - What the failed turn did store is finished as interrupted (its stored progress
//     plus a marker row, store.InterruptTurn) right away, or, while storage still
//     fails, before the session's next turn. The live model context is then reloaded
//     from the store, so memory and disk agree again; until both steps succeed every
//     new prompt fails with a Storage error before the model is called. Once space
//     returns the next prompt repairs and runs, without a restart.

// StorageFailedPrefix starts the text of a turn that ended because storage failed.
const StorageFailedPrefix = "storage failed: "

// storageMarker is the text of the marker row of a turn that storage failed.
const storageMarker = "turn interrupted: storing its progress failed"

// beginTurn makes the session consistent with the store after a failed turn
// (repair), then stores the prompt as the turn's first checkpoint, with the
// user_message update that shows it, and shows that. It runs holding the turn
// slot, before the model is called.
func (s *Session) beginTurn(t *runningTurn, text string, quoted jsontext.Value) error {
	if err := s.repair(t.storage); err != nil {
		return err
	}
	// The prompt's user_message is stored with the prompt, in its transaction, and
	// shown once that commits: it needs no group commit of its own (the first
	// update of a turn reached its client after two commits), and a prompt that
	// cannot be stored shows none.
	prompt := llm.Message{Role: llm.RoleUser, Text: text}
	var id int64
	err := s.feed.PublishStored(func(seq uint64, behind bool) ([]byte, bool, error) {
		raw, err := s.userMessage(t.id, seq, text, quoted)
		if err != nil {
			return nil, false, err
		}
		if behind {
			// An earlier update of the session still waits for the replay log:
			// committing seq with the prompt would show that one before it is
			// stored. The user_message goes the usual way, behind it.
			id, err = s.mgr.st.BeginTurnFor(t.storage, s.ID, t.id, t.op, prompt)
		} else {
			id, err = s.mgr.st.BeginTurnShownQuoted(t.storage, s.ID, t.id, t.op, prompt, quoted, store.Update{SessionID: s.ID, Seq: seq, Payload: raw})
		}
		if err != nil {
			s.mgr.log.Error("storing the prompt failed; the model was not called", "session", s.ID, "turn", t.id, "err", err)
			return nil, false, errStorage(err)
		}
		return raw, !behind, nil
	})
	if errors.Is(err, feed.ErrReserve) {
		s.mgr.log.Error("reserving seqs failed; the model was not called", "session", s.ID, "turn", t.id, "err", err)
		return errStorage(err)
	}
	if err != nil {
		return err
	}
	t.begun, t.promptStored = true, true
	t.ids = append(t.ids, id)
	s.mu.Lock()
	s.checkpoint = id
	s.mu.Unlock()
	return nil
}

// userMessage returns the params of the user_message update seq of turnID showing
// text: marshalled, or, when quoted (text as a JSON string) is not nil, marshalled
// with an empty text, which quoted then replaces (text is the last member it has).
func (s *Session) userMessage(turnID string, seq uint64, text string, quoted jsontext.Value) ([]byte, error) {
	u := &Update{SessionID: s.ID, TurnID: turnID, Seq: seq, Type: UserMessage}
	if quoted == nil || text == "" {
		u.Text = text
		return json.Marshal(u)
	}
	head, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	const empty = `,"text":""}`
	if !bytes.HasSuffix(head, []byte(empty)) {
		return nil, fmt.Errorf("user_message %s does not end with its text", head)
	}
	out := make([]byte, 0, len(head)+len(quoted))
	out = append(out, head[:len(head)-len(empty)+len(`,"text":`)]...)
	return append(append(out, quoted...), '}'), nil
}

// deleted reports whether err is the store's answer for a turn of a session that
// session/delete removed while the turn ran: not a storage failure, since there is
// nothing left to store (docs/protocol.md, "Durable sessions": delete cancels, then
// removes).
func (s *Session) deleted(err error) bool {
	if !errors.Is(err, store.ErrNotFound) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// failStorage records the first storage failure of the turn and cancels it, so it
// goes no further. Only the turn's goroutine calls it.
func (t *runningTurn) failStorage(err error) {
	if t.storageErr == nil {
		t.storageErr = err
		t.cancel(err)
	}
}

// commitTurn ends the turn in the store (EndTurnWith, or EndTurnWithMessage with the
// answer the hook held back; either with its outcome as the answer
// of its operation id), or, when a write of the turn failed, finishes it as
// interrupted. It returns the turn's storage failure, nil when everything it owed
// was stored. It runs holding the turn slot.
func (s *Session) commitTurn(t *runningTurn, out agent.Outcome) error {
	f := t.final
	t.final = nil
	// The turn's updates are stored first. The commit would wait for the writer
	// anyway while the replay log stores what the turn published last; this way
	// those updates are stored, and delivered, while the commit is written,
	// instead of after it (BenchmarkUpdateStream's client read a streamed turn's
	// last update 0.46 ms sooner, docs/BENCHMARKS.md).
	s.mgr.feeds.Flush()
	if t.storageErr == nil {
		r := store.TurnResult{
			StopReason: out.StopReason, Text: out.Text,
			InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens,
		}
		var err error
		if f != nil {
			var id int64
			if id, err = s.mgr.st.EndTurnWithMessage(t.storage, s.ID, t.id, *f, r); err == nil {
				t.stored(s, id)
			}
		} else {
			err = s.mgr.st.EndTurnWith(t.storage, s.ID, t.id, r)
		}
		if err == nil || s.deleted(err) {
			return nil
		}
		s.mgr.log.Error("committing a turn to the transcript failed", "session", s.ID, "turn", t.id, "err", err)
		t.storageErr = err
	}
	if f != nil {
		// The answer came before the failure: it is kept as the turn's progress if
		// it can be stored alone, as when it was a checkpoint of its own.
		if id, err := s.mgr.st.AppendCheckpoint(t.storage, s.ID, t.id, *f); err == nil {
			t.stored(s, id)
		}
	}
	s.mu.Lock()
	s.stale = true
	s.mu.Unlock()
	if t.begun {
		s.mu.Lock()
		s.unfinished = t.id
		s.mu.Unlock()
	}
	if err := s.repair(t.storage); err != nil {
		s.mgr.log.Warn("a failed turn stays unfinished in storage until the next prompt", "session", s.ID, "turn", t.id)
	}
	return t.storageErr
}

// repair finishes the turn a storage failure left unfinished and reloads the model
// context from the store, when a turn failed in storage; else it does nothing.
func (s *Session) repair(ctx context.Context) error {
	s.mu.Lock()
	stale, unfinished := s.stale, s.unfinished
	s.mu.Unlock()
	if !stale {
		return nil
	}
	if unfinished != "" {
		if err := s.mgr.st.InterruptTurn(ctx, s.ID, unfinished, storageMarker); err != nil {
			s.mgr.log.Error("finishing a turn that failed in storage failed", "session", s.ID, "turn", unfinished, "err", err)
			return errStorage(err)
		}
		s.mu.Lock()
		s.unfinished = ""
		s.mu.Unlock()
	}
	history, historyIDs, err := s.mgr.st.ContextIDs(ctx, s.ID)
	if err != nil {
		s.mgr.log.Error("reloading the model context after a storage failure failed", "session", s.ID, "err", err)
		return errStorage(err)
	}
	s.mu.Lock()
	s.context, s.contextIDs, s.stale = history, historyIDs, false
	s.mu.Unlock()
	return nil
}

// storageOutcome is how a turn whose storage failed ends: stopReason "error" and a
// text that says so. The text names the storage error (SQLite's "database or disk is
// full", the system's "no space left on device") but never a path.
func storageOutcome(out agent.Outcome, err error) agent.Outcome {
	for {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
			continue
		}
		inner := errors.Unwrap(err)
		if inner == nil {
			break
		}
		err = inner
	}
	out.StopReason = agent.Error
	out.Text = StorageFailedPrefix + err.Error() + "; the turn's progress up to the failure is kept"
	return out
}
