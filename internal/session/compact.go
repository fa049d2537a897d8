package session

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// session/compact (docs/protocol.md, "session/compact"): the session's own model
// summarises the retained context, and the summary replaces it when it is smaller.

// Limits of a compaction.
const (
	SummaryMax      = 12000 // characters of the summary kept
	CompactDeadline = 180 * time.Second
)

// CompactRequest is the user message that asks for the summary, after the
// retained context; CompactedPrompt is the user message the summary answers in
// the new retained context.
const (
	CompactRequest = "Summarise our conversation so far for your own later use: the user's goals, " +
		"what was decided and done (files, commands, results), what is still open, and any facts " +
		"you will need to continue. Write only the summary, at most 12000 characters."
	CompactedPrompt = "Summarise our conversation so far."
	compactSystem   = "You are compacting a conversation: answer with a faithful summary of it and nothing else. Do not call tools."
)

// CompactResult is what session/compact answers: the retained context's size in
// characters before and after. Cancelled: session/cancel stopped the summary.
type CompactResult struct {
	SessionID string `json:"sessionId"`
	Compacted bool   `json:"compacted"`
	Before    int    `json:"before"`
	After     int    `json:"after"`
	Cancelled bool   `json:"cancelled,omitzero"`
}

// Compact is session/compact on the session id, restoring it when it is not live.
func (m *Manager) Compact(ctx context.Context, id string, c Caller, instructions, operationID string) (CompactResult, error) {
	s, err := m.Obtain(ctx, id, c)
	if err != nil {
		return CompactResult{}, err
	}
	return s.Compact(ctx, instructions, operationID)
}

// Compact summarises the retained context in the turn slot. A repeat of an
// operation id answers the first outcome. It runs to its end even when ctx ends
// (the caller went away): session/cancel, the deadline and the session's end stop it.
func (s *Session) Compact(ctx context.Context, instructions, operationID string) (CompactResult, error) {
	finish := func(*CompactResult) {}
	if operationID != "" {
		op, answered, err := s.claimOperation(ctx, operationID)
		if err != nil {
			return CompactResult{}, err
		}
		if answered != nil {
			if answered.compact == nil {
				return CompactResult{}, errOperationKind(operationID, "session/prompt")
			}
			return *answered.compact, nil
		}
		finish = func(r *CompactResult) {
			var o *outcome
			if r != nil {
				o = &outcome{compact: r}
			}
			s.finishOperation(operationID, op, o)
		}
	}
	if err := s.enqueue(ctx); err != nil {
		finish(nil)
		return CompactResult{}, err
	}
	defer func() { <-s.slot }()
	runCtx, cancel := context.WithCancelCause(s.mgr.life)
	defer cancel(nil)
	t := &runningTurn{id: randomID("turn_"), cancel: cancel, storage: context.WithoutCancel(runCtx), op: operationID}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		finish(nil)
		return CompactResult{}, errNotFound(s.ID)
	}
	s.setTurnLocked(t)
	s.mu.Unlock()
	s.mgr.turns.Add(1)
	defer s.mgr.turns.Done()
	defer func() {
		s.mu.Lock()
		s.setTurnLocked(nil) // idle now: an emptied tail keeps no block
		s.mu.Unlock()
	}()
	res, err := s.compact(runCtx, t, instructions)
	if err != nil {
		finish(nil)
		return CompactResult{}, err
	}
	finish(&res)
	return res, nil
}

func (s *Session) compact(runCtx context.Context, t *runningTurn, instructions string) (CompactResult, error) {
	if err := s.repair(t.storage); err != nil {
		return CompactResult{}, err
	}
	s.mu.Lock()
	history := s.context
	s.mu.Unlock()
	before := contextSize(history)
	res := CompactResult{SessionID: s.ID, Before: before, After: before}
	rec := store.Compaction{TurnID: t.id, OperationID: t.op, Before: before, After: before}

	if len(history) > 0 {
		summary, usage, err := s.summarise(runCtx, history, instructions)
		rec.Usage = store.Totals{InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens}
		switch {
		case errors.Is(context.Cause(runCtx), errCancelRequested):
			res.Cancelled, rec.Cancelled = true, true
		case runCtx.Err() != nil: // the session closed, the daemon stops
			return CompactResult{}, errNotFound(s.ID)
		case err != nil:
			return CompactResult{}, err
		default:
			snapshot := []llm.Message{
				{Role: llm.RoleUser, Text: CompactedPrompt},
				{Role: llm.RoleAssistant, Text: summary},
			}
			if after := contextSize(snapshot); after < before {
				res.Compacted, res.After = true, after
				rec.After, rec.Snapshot = after, snapshot
			}
		}
	}
	if err := s.mgr.st.Compact(t.storage, s.ID, rec); err != nil {
		s.mgr.log.Error("storing a compaction failed; the context stays as it was", "session", s.ID, "err", err)
		return CompactResult{}, errStorage(err)
	}
	s.mgr.log.Info("compaction", "session", s.ID, "compacted", res.Compacted, "before", res.Before, "after", res.After,
		"cancelled", res.Cancelled)
	if res.Compacted {
		s.mu.Lock()
		s.context, s.contextIDs = rec.Snapshot, make([]int64, len(rec.Snapshot))
		s.mu.Unlock()
		before, after := res.Before, res.After
		s.publish(&Update{Type: HistoryCompacted, Before: before, After: after})
	}
	return res, nil
}

// summarise asks the session's model for a summary of history, within the
// deadline, and returns it cut to SummaryMax characters.
func (s *Session) summarise(runCtx context.Context, history []llm.Message, instructions string) (string, llm.Usage, error) {
	ctx, cancel := context.WithTimeout(runCtx, CompactDeadline)
	defer cancel()
	ask := CompactRequest
	if instructions = strings.TrimSpace(instructions); instructions != "" {
		ask += "\n\nThe user's instructions for the summary: " + instructions
	}
	model, _ := s.controls()
	msgs := append(append(make([]llm.Message, 0, len(history)+1), history...),
		llm.Message{Role: llm.RoleUser, Text: ask})
	res, err := s.Agent.Provider.Stream(ctx, provider.Request{
		Model: model, System: compactSystem, Messages: msgs, Tools: toolSpecs(s),
	}, func(provider.Delta) {})
	if runCtx.Err() != nil {
		return "", res.Usage, runCtx.Err()
	}
	if err != nil {
		msg := "compaction failed: the model did not answer within " + CompactDeadline.String()
		if ctx.Err() == nil {
			var pe *provider.Error
			if errors.As(err, &pe) {
				msg = "compaction failed: " + pe.Error()
			} else {
				msg = "compaction failed: " + err.Error()
			}
		}
		return "", res.Usage, &Error{Kind: Failed, Msg: msg, Details: map[string]any{"reason": "model_failed"}, Err: err}
	}
	summary := strings.TrimSpace(res.Text)
	if summary == "" {
		return "", res.Usage, &Error{Kind: Failed, Msg: "compaction failed: the model answered no summary",
			Details: map[string]any{"reason": "empty_summary"}}
	}
	if utf8.RuneCountInString(summary) > SummaryMax {
		summary = string([]rune(summary)[:SummaryMax])
	}
	return summary, res.Usage, nil
}

// toolSpecs are the agent's tools as the model sees them: a context with tool calls
// needs them declared (Anthropic refuses it otherwise), though the summary calls none.
func toolSpecs(s *Session) []llm.ToolSpec {
	specs := make([]llm.ToolSpec, 0, len(s.Agent.Tools))
	for _, t := range s.Agent.Tools {
		specs = append(specs, t.Spec())
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs
}

// contextSize is the size of a model context in characters: every message's text,
// its tool calls' names and arguments, and tool results' names.
func contextSize(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += utf8.RuneCountInString(m.Text) + utf8.RuneCountInString(m.Name)
		for _, c := range m.ToolCalls {
			n += utf8.RuneCountInString(c.Name) + utf8.RuneCount(c.Arguments)
		}
	}
	return n
}
