package session

import (
	"context"
	"encoding/json/jsontext"
	"sync"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/agent"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/stack"
)

// publishUsage sends the usage update of one model call of turn (docs/protocol.md,
// "Session controls").
func (s *Session) publishUsage(turnID string, u llm.Usage) {
	s.publish(&Update{TurnID: turnID, Type: UsageUpdate, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CachedInputTokens: u.CachedInputTokens, ContextTokens: u.Context(), ContextWindow: s.Agent.ContextWindow})
}

// PromptResult is the result of session/prompt.
type PromptResult struct {
	SessionID  string `json:"sessionId"`
	TurnID     string `json:"turnId"`
	StopReason string `json:"stopReason"`
	Text       string `json:"text"`
	Usage      Usage  `json:"usage"`

	// release lets the session's next turn start; see Queued.
	release func()
	// lastSeq is the session's last seq once the turn ended: its answer is sent
	// after the updates up to it (Session.WaitDelivered).
	lastSeq uint64
}

// Queued tells the session that this result is on its way to the client: queued on
// the prompting connection, ahead of anything sent there later. Until then (or
// until the prompting caller goes away, or the session closes) the session's next
// turn does not start, so on that connection the answer to a prompt always comes
// before any update of the next turn (docs/protocol.md, "Delivery"). jsonrpc calls it
// (jsonrpc.Queued).
func (r PromptResult) Queued() {
	if r.release != nil {
		r.release()
	}
}

// LastSeq is the session's last seq when the turn ended.
func (r PromptResult) LastSeq() uint64 { return r.lastSeq }

// Usage of a turn.
type Usage struct {
	InputTokens       int `json:"inputTokens"`
	OutputTokens      int `json:"outputTokens"`
	CachedInputTokens int `json:"cachedInputTokens,omitzero"`
}

// Prompt runs one turn once the turns before it are done. It waits at most QueueWait
// behind at most MaxQueued others. The turn runs on its own: if ctx ends (the
// prompting connection closed) Prompt returns, and the turn goes on for the session's
// other connections. A prompt repeating an operationID the session has seen runs no
// turn: it answers with that turn's result, waiting while it runs (docs/protocol.md,
// "session/prompt").
func (s *Session) Prompt(ctx context.Context, text, operationID string) (PromptResult, error) {
	return s.PromptQuoted(ctx, text, nil, operationID)
}

// PromptQuoted is Prompt for a caller that has text as a JSON string too, quoted,
// as its client sent it (nil when not): the prompt's user_message and its stored
// message embed quoted instead of encoding text again.
func (s *Session) PromptQuoted(ctx context.Context, text string, quoted jsontext.Value, operationID string) (PromptResult, error) {
	return s.prompt(ctx, text, quoted, operationID, false)
}

// prompt is PromptQuoted; detached, it returns once the turn has begun (its prompt
// stored), with only the turn's id, and the turn's answer goes to nobody
// (session/steer starting a turn, steer.go).
func (s *Session) prompt(ctx context.Context, text string, quoted jsontext.Value, operationID string, detached bool) (PromptResult, error) {
	finish := func(*PromptResult) {}
	if operationID != "" {
		op, answered, err := s.claimOperation(ctx, operationID)
		if err != nil {
			return PromptResult{}, err
		}
		if answered != nil {
			if answered.prompt == nil {
				return PromptResult{}, errOperationKind(operationID, "session/compact")
			}
			return *answered.prompt, nil
		}
		finish = func(r *PromptResult) {
			var o *outcome
			if r != nil {
				o = &outcome{prompt: r}
			}
			s.finishOperation(operationID, op, o)
		}
	}
	if err := s.enqueue(ctx); err != nil {
		finish(nil)
		return PromptResult{}, err
	}
	turnCtx, cancel := context.WithCancelCause(s.mgr.life)
	// What the turn owes storage is written even once the turn is cancelled.
	t := &runningTurn{id: randomID("turn_"), cancel: cancel, storage: context.WithoutCancel(turnCtx), op: operationID,
		steers: &steerInbox{}}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel(errSessionClosed)
		<-s.slot
		finish(nil)
		return PromptResult{}, errNotFound(s.ID)
	}
	s.setTurnLocked(t)
	s.mu.Unlock()
	if err := s.beginTurn(t, text, quoted); err != nil { // before any model call (docs/protocol.md, "Storage failures")
		s.mu.Lock()
		s.setTurnLocked(nil)
		s.mu.Unlock()
		cancel(err)
		<-s.slot
		finish(nil)
		return PromptResult{}, err
	}
	s.mu.Lock()
	history, historyIDs := s.context, s.contextIDs
	s.mu.Unlock()

	result := make(chan PromptResult, 1)
	answered := make(chan struct{})
	release := sync.OnceFunc(func() { close(answered) })
	s.mgr.turns.Add(1)
	go func() {
		stack.Reserve() // the turn stores its checkpoints and its end
		defer s.mgr.turns.Done()
		defer func() { <-s.slot }()
		defer cancel(nil)
		toolSet, lookup := s.turnTools(turnCtx)
		h := &hooks{s: s, turn: t}
		runCtx, obs := s.observeTurn(turnCtx)
		out := agent.Run(runCtx, agent.Turn{
			Provider: s.Agent.Provider, Model: s.Agent.Model, System: s.Agent.System,
			Tools: s.Agent.Tools, Autonomy: s.Agent.Autonomy, MaxSteps: s.Agent.MaxSteps,
			ToolSet: toolSet, Lookup: lookup,
			Env:     toolEnv(s, t),
			Context: history, Prompt: text, Recall: s.recall(t, text),
			Hooks: h, CallID: t.callID,
			Controls: s.controls, Used: func(u llm.Usage) { s.publishUsage(t.id, u); s.noteUsage(u) },
			Steer: h.steered, Compact: h.autoCompact,
			Observer: obs,
		})
		s.closeSteers(t) // a steer from now on starts the next turn
		storageErr := s.commitTurn(t, out)
		s.mu.Lock()
		if storageErr == nil { // else repair reloads the context from the store
			s.context, s.contextIDs = out.Context, contextIDs(historyIDs, len(history), t.ids, len(out.Context))
			if t.compacted { // the context is no longer history then the turn's checkpoints
				s.contextIDs = make([]int64, len(out.Context))
			}
		}
		s.setTurnLocked(nil) // idle now: an emptied tail keeps no block
		s.mu.Unlock()
		if storageErr != nil {
			out = storageOutcome(out, storageErr)
		} else {
			s.trim(t)
		}
		turnEnded(obs, out.StopReason, out.Usage)
		s.mgr.log.Info("turn ended", "session", s.ID, "turn", t.id, "stopReason", out.StopReason,
			"cause", context.Cause(turnCtx))
		res := PromptResult{
			SessionID: s.ID, TurnID: t.id, StopReason: out.StopReason, Text: out.Text,
			Usage: Usage{InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens,
				CachedInputTokens: out.Usage.CachedInputTokens},
		}
		res.lastSeq = s.feed.Seq()
		stored := res // repeats of the operation id get this copy, without release
		finish(&stored)
		res.release = release
		result <- res
		select { // the slot is released (deferred) once the answer is on its way
		case <-answered:
		case <-s.done:
		}
	}()
	if detached {
		release() // nobody waits for this answer
		// The turn's user_message is published (beginTurn): the steer's answer
		// follows it on the steering connection.
		return PromptResult{SessionID: s.ID, TurnID: t.id, lastSeq: s.feed.Seq()}, nil
	}
	select {
	case r := <-result:
		return r, nil
	case <-ctx.Done():
		release() // nobody will answer: the next turn need not wait
		return PromptResult{}, ctx.Err()
	}
}

// contextIDs are the checkpoint ids of a turn's resulting context: those of the
// history it started from, then the turn's own checkpoints, one per message it
// added. When the counts do not agree, the new messages' ids are unknown (0), which
// only costs the next trim a snapshot.
func contextIDs(history []int64, historyLen int, turn []int64, total int) []int64 {
	if total < historyLen {
		return make([]int64, total)
	}
	ids := make([]int64, 0, total)
	if len(history) == historyLen {
		ids = append(ids, history...)
	} else {
		ids = append(ids, make([]int64, historyLen)...)
	}
	if historyLen+len(turn) == total {
		return append(ids, turn...)
	}
	return append(ids, make([]int64, total-historyLen)...)
}
