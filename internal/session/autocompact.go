package session

import (
	"context"
	"errors"
	"slices"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// Automatic compaction (docs/protocol.md, "Automatic compaction"): before a model
// call whose context would pass agents.<alias>.compact_at of the known context
// window, the daemon compacts it as session/compact does, keeping the turn's last
// user message and what followed it as they are (the model is answering them).
//
// The context's size is estimated from what the provider said: the last call's
// reported input tokens, plus one token per 4 bytes of every message added since;
// when no call of the current context reported any (after a restart, a trim, a
// compaction), one token per 4 bytes of the whole context. A compaction that saves
// less than a tenth is not tried again before the context grew by another tenth,
// so a context that will not shrink costs one summary, not one per model call.
// Without a known window (providers.<name>.context_window; the echo provider has
// one) or with compact_at = 0, nothing automatic happens.

// autoCompaction is what a session knows for automatic compaction; under s.mu.
type autoCompaction struct {
	known     bool // lastInput is of a call that was sent the first lastLen messages of the context
	lastInput int  // that call's reported input tokens
	lastLen   int
	sending   int // how many messages the model call in flight was sent
	// retryAt: no automatic compaction while the estimate is at most this (after
	// one that saved less than a tenth, or failed).
	retryAt int
}

// bytesPerToken is the estimate's ratio for what no provider counted yet.
const bytesPerToken = 4

// noteUsage records a model call's reported input tokens (agent.Turn.Used). A
// provider that reports the context's size itself (ContextTokens: echo, whose
// input count is the prompt's words on a turn's first call only) is taken at its
// word: the context before the call is that less the call's output.
func (s *Session) noteUsage(u llm.Usage) {
	input := u.InputTokens
	if u.ContextTokens > 0 {
		input = max(input, u.ContextTokens-u.OutputTokens)
	}
	if input <= 0 {
		return
	}
	s.mu.Lock()
	s.auto.known, s.auto.lastInput, s.auto.lastLen = true, input, s.auto.sending
	s.mu.Unlock()
}

// forgetUsage: the context changed under the last reported call (trim, compaction).
func (s *Session) forgetUsageLocked() {
	s.auto.known, s.auto.retryAt = false, 0
}

// estimate is the size of msgs in tokens, as the package comment says.
func (s *Session) estimate(msgs []llm.Message) int {
	s.mu.Lock()
	a := s.auto
	s.mu.Unlock()
	if a.known && a.lastLen <= len(msgs) {
		return a.lastInput + msgBytes(msgs[a.lastLen:])/bytesPerToken
	}
	return (len(s.Agent.System) + msgBytes(msgs)) / bytesPerToken
}

// msgBytes is the size of msgs in bytes: texts, names, tool calls' names and arguments.
func msgBytes(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Text) + len(m.Name) + len(m.ToolCallID)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	return n
}

// autoCompact is the turn's agent.Turn.Compact: msgs, or msgs compacted when the
// estimate passes the threshold.
func (h *hooks) autoCompact(ctx context.Context, msgs []llm.Message) []llm.Message {
	s := h.s
	out := msgs
	defer func() {
		s.mu.Lock()
		s.auto.sending = len(out)
		s.mu.Unlock()
	}()
	window, at := s.Agent.ContextWindow, s.Agent.CompactAt
	if window <= 0 || at <= 0 || h.turn.storageErr != nil || ctx.Err() != nil {
		return out
	}
	est := s.estimate(msgs)
	s.mu.Lock()
	retryAt := s.auto.retryAt
	s.mu.Unlock()
	if float64(est) <= float64(window)*at || est <= retryAt {
		return out
	}
	out = h.compactNow(ctx, msgs, est, window)
	return out
}

// compactNow summarises what comes before the last user message of msgs (trimmed
// from its oldest messages first when the summary request would not fit the
// window), commits the result like session/compact, and returns the new context.
// On any failure it returns msgs as they were.
func (h *hooks) compactNow(ctx context.Context, msgs []llm.Message, est, window int) []llm.Message {
	s, t := h.s, h.turn
	noRetry := func(tokens int) {
		s.mu.Lock()
		s.auto.retryAt = tokens + tokens/10
		s.mu.Unlock()
	}
	keep := lastPrompt(msgs)
	head := msgs[:max(keep, 0)]
	cut := fitCut(head, est, msgBytes(msgs), window)
	if cut < 0 { // nothing before the turn's request, or nothing of it fits
		noRetry(est)
		return msgs
	}
	summary, usage, err := s.summarise(ctx, head[cut:], "")
	if ctx.Err() != nil {
		return msgs
	}
	kept := contextSize(msgs[keep:]) // counted once: the turn's prompt may be most of it
	before := contextSize(msgs[:keep]) + kept
	rec := store.Compaction{TurnID: randomID("turn_"), Before: before, After: before,
		Usage: store.Totals{InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens}}
	var next []llm.Message
	if err == nil {
		next = append([]llm.Message{
			{Role: llm.RoleUser, Text: CompactedPrompt},
			{Role: llm.RoleAssistant, Text: summary},
		}, msgs[keep:]...)
		if after := contextSize(next[:2]) + kept; after < before {
			rec.After, rec.Snapshot, rec.Kept = after, next, keptIDs(msgs[keep:], t.ids)
		}
	} else {
		var se *Error
		if !errors.As(err, &se) {
			se = &Error{Msg: err.Error()}
		}
		s.mgr.log.Warn("automatic compaction failed; the context stays as it was", "session", s.ID, "turn", t.id, "err", se.Msg)
	}
	if serr := s.mgr.st.Compact(t.storage, s.ID, rec); serr != nil {
		s.mgr.log.Error("storing an automatic compaction failed; the context stays as it was", "session", s.ID, "err", serr)
		noRetry(est)
		return msgs
	}
	s.mgr.log.Info("automatic compaction", "session", s.ID, "turn", t.id, "compacted", rec.Snapshot != nil,
		"before", rec.Before, "after", rec.After, "trimmed", cut, "estimate", est, "window", window)
	if rec.Snapshot == nil {
		noRetry(est)
		return msgs
	}
	s.mu.Lock()
	s.forgetUsageLocked()
	s.mu.Unlock()
	if rec.After*10 > rec.Before*9 { // saved less than a tenth
		noRetry(est * rec.After / rec.Before)
	}
	t.compacted = true
	if cut > 0 {
		s.publish(&Update{TurnID: t.id, Type: HistoryTrimmed, Dropped: cut, Kept: len(head) - cut})
	}
	s.publish(&Update{Type: HistoryCompacted, Before: rec.Before, After: rec.After, Auto: true})
	return rec.Snapshot
}

// keptIDs are the checkpoint ids of kept, the tail of a turn's messages that a
// compaction keeps: the last of the turn's stored ids, one a message, since every
// message the turn added before a model call was stored, in order, when it was
// added (hooks.go, steer.go). nil when kept reaches back past the turn.
func keptIDs(kept []llm.Message, turn []int64) []int64 {
	if len(kept) == 0 || len(kept) > len(turn) {
		return nil
	}
	return slices.Clone(turn[len(turn)-len(kept):])
}

// lastPrompt is the index of the last user message of msgs, or -1.
func lastPrompt(msgs []llm.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return i
		}
	}
	return -1
}

// fitCut is where the summary request's messages start within head: 0 when the
// whole of head fits the window with the request and room for the summary, else
// the first user message from which the rest does (the oldest retained messages
// are trimmed first, and no tool result loses its call); -1 when head is empty or
// nothing of it fits. est tokens are the size of a context of total bytes: the
// part of head is counted at the same ratio.
func fitCut(head []llm.Message, est, total, window int) int {
	if len(head) == 0 {
		return -1
	}
	perByte := float64(est) / float64(max(total, 1))
	room := min(SummaryMax/bytesPerToken, window/4) // for the summary the model writes
	request := float64(len(CompactRequest)) / bytesPerToken
	fits := func(from int) bool {
		return float64(msgBytes(head[from:]))*perByte+request+float64(room) <= float64(window)
	}
	if fits(0) {
		return 0
	}
	for i := 1; i < len(head); i++ {
		if head[i].Role == llm.RoleUser && fits(i) {
			return i
		}
	}
	return -1
}
