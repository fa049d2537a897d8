package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// session/steer (docs/protocol.md, "Steering"): a text that joins the running turn
// as a user message before its next model call, or starts a turn when none runs.
//
// A steer waits in the running turn's inbox until the turn takes it, at its next
// model call (or when the model answers without tool calls, which then goes on):
// the turn stores it as a checkpoint of its own, after whatever the turn stored
// before (the tool results of the step), publishes its user_message (steered), and
// only then is the steer answered "injected". A turn that ends first closes its
// inbox under the session's lock and hands back what it did not take: those, and
// any steer that finds no open inbox, start a turn of their own, as session/prompt
// does. So a steer racing a turn's end joins that turn or starts the next one,
// never both, and is never lost.

// Outcomes of session/steer.
const (
	SteerInjected    = "injected"
	SteerStartedTurn = "startedTurn"
)

// SteerResult is what session/steer answers.
type SteerResult struct {
	Outcome string `json:"outcome"`
	TurnID  string `json:"turnId"`

	// lastSeq is the session's last seq once the steered user_message (or the
	// started turn's) was published: the answer follows it on the steering
	// connection (LastSeq).
	lastSeq uint64
}

// LastSeq is the seq the answer should follow (0: none).
func (r SteerResult) LastSeq() uint64 { return r.lastSeq }

// steerInbox holds the steers a running turn has not taken yet; under s.mu.
type steerInbox struct {
	pending []*steer
	closed  bool // the turn takes no more: the agent loop has returned
}

// steer is one session/steer waiting for the turn; done gets its fate once.
type steer struct {
	text string
	done chan steerFate // buffered: the turn never waits for the caller
}

type steerFate struct {
	injected bool
	seq      uint64 // the session's last seq once its user_message was published
	err      error
}

// Steer is session/steer on the session id, restoring it when it is not live.
func (m *Manager) Steer(ctx context.Context, id string, c Caller, text, expectedTurnID string) (SteerResult, error) {
	s, err := m.Obtain(ctx, id, c)
	if err != nil {
		return SteerResult{}, err
	}
	return s.Steer(ctx, text, expectedTurnID)
}

// Steer joins text to the running turn, or starts a turn with it when none runs.
// expectedTurnID, when not empty, must name the running turn: with none running,
// or when that turn ends before it took the text, the steer is refused (stale),
// and starts nothing.
// Once the steer is in a turn's inbox, the caller going away (ctx) does not take
// it out: it still joins the turn, or starts the next one.
func (s *Session) Steer(ctx context.Context, text, expectedTurnID string) (SteerResult, error) {
	if strings.TrimSpace(text) == "" {
		return SteerResult{}, errParam("text", "", "invalid params: text must not be empty")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return SteerResult{}, errNotFound(s.ID)
	}
	t := s.turn
	if t != nil && t.steers == nil {
		t = nil // a compaction in the turn slot: no turn a steer could join
	}
	if expectedTurnID != "" && (t == nil || expectedTurnID != t.id || t.steers.closed) {
		s.mu.Unlock()
		return SteerResult{}, errStaleTurn(expectedTurnID, t)
	}
	if t != nil && !t.steers.closed {
		st := &steer{text: text, done: make(chan steerFate, 1)}
		t.steers.pending = append(t.steers.pending, st)
		s.mu.Unlock()
		s.mgr.log.Info("steer waiting for the running turn", "session", s.ID, "turn", t.id)
		// The turn answers every steer it was given, at the latest as it ends
		// (closeSteers), also when the session closes.
		fate := <-st.done
		switch {
		case fate.err != nil:
			return SteerResult{}, fate.err
		case fate.injected:
			return SteerResult{Outcome: SteerInjected, TurnID: t.id, lastSeq: fate.seq}, nil
		}
		// The turn ended before it took the steer. One that named it is refused
		// (the caller decides); else it starts the next turn, also when the caller
		// has gone away meanwhile (the steer was accepted).
		if expectedTurnID != "" {
			return SteerResult{}, errStaleTurn(expectedTurnID, nil)
		}
		ctx = context.WithoutCancel(ctx)
	} else {
		s.mu.Unlock()
	}
	r, err := s.prompt(ctx, text, nil, "", true)
	if err != nil {
		return SteerResult{}, err
	}
	return SteerResult{Outcome: SteerStartedTurn, TurnID: r.TurnID, lastSeq: r.LastSeq()}, nil
}

// errStaleTurn refuses a steer whose expectedTurnId is not the running turn:
// data.turnId is the running turn's id, absent when none runs (or the running one
// is ending).
func errStaleTurn(expected string, running *runningTurn) *Error {
	d := map[string]any{"param": "expectedTurnId", "reason": "stale_turn"}
	msg := fmt.Sprintf("invalid params: expectedTurnId %s is not running; no turn is", expected)
	if running != nil && !running.steers.closed {
		d["turnId"] = running.id
		msg = fmt.Sprintf("invalid params: expectedTurnId %s is not the running turn, %s", expected, running.id)
	}
	return &Error{Kind: Invalid, Msg: msg, Details: d}
}

// closeSteers closes the turn's inbox and hands back the steers it did not take,
// which then start a turn of their own. The turn's goroutine calls it once the
// agent loop has returned.
func (s *Session) closeSteers(t *runningTurn) {
	s.mu.Lock()
	left := t.steers.pending
	t.steers.pending, t.steers.closed = nil, true
	s.mu.Unlock()
	for _, st := range left {
		st.done <- steerFate{}
	}
}

// steered is the turn's agent.Turn.Steer: it takes the steers waiting in the
// inbox, stores each as a checkpoint (after the answer the hook holds, if any),
// publishes its user_message with steered: true, answers it, and returns the
// messages that joined the context. A steer that cannot be stored fails with a
// Storage error, and the turn ends (storage.go). A turn that is cancelled (by
// session/cancel, or its session closing) takes none: they are handed back as it
// ends (closeSteers) and start a turn of their own, instead of joining one that
// calls the model no more.
func (h *hooks) steered(ctx context.Context) []llm.Message {
	s, t := h.s, h.turn
	if ctx.Err() != nil {
		return nil
	}
	s.mu.Lock()
	taken := t.steers.pending
	t.steers.pending = nil
	s.mu.Unlock()
	var joined []llm.Message
	for _, st := range taken {
		if t.storageErr != nil {
			st.done <- steerFate{err: errStorage(t.storageErr)}
			continue
		}
		if f := t.final; f != nil {
			t.final = nil
			h.store(*f)
			if t.storageErr != nil {
				st.done <- steerFate{err: errStorage(t.storageErr)}
				continue
			}
		}
		m := llm.Message{Role: llm.RoleUser, Text: st.text, Steered: true}
		id, err := s.mgr.st.AppendCheckpoint(t.storage, s.ID, t.id, m)
		if err != nil {
			if !s.deleted(err) {
				s.mgr.log.Error("storing a steered message failed; the turn ends", "session", s.ID, "turn", t.id, "err", err)
				t.failStorage(err)
				st.done <- steerFate{err: errStorage(err)}
			} else {
				st.done <- steerFate{err: errNotFound(s.ID)}
			}
			continue
		}
		t.stored(s, id)
		s.publish(&Update{TurnID: t.id, Type: UserMessage, Text: st.text, Steered: true})
		seq := s.LastSeq()
		joined = append(joined, m)
		st.done <- steerFate{injected: true, seq: seq}
	}
	return joined
}

// SteersWaiting is how many steers wait for the running turn to take them.
func (s *Session) SteersWaiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn == nil || s.turn.steers == nil {
		return 0
	}
	return len(s.turn.steers.pending)
}
