package session

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// hooks connect a running turn to its session: model output and tool activity
// become updates, approvals and questions go to the attached clients.
type hooks struct {
	s    *Session
	turn *runningTurn
}

func (h *hooks) update(typ string) *Update {
	return &Update{TurnID: h.turn.id, Type: typ}
}

func (h *hooks) Delta(d provider.Delta) {
	typ := AgentMessageChunk
	if d.Thought {
		typ = AgentThoughtChunk
	}
	h.s.feed.PublishChunk(h.turn.id, typ, d.Text)
}

// ToolCall announces a call; a file tool's carries the places it touches.
func (h *hooks) ToolCall(call llm.ToolCall) {
	u := h.update(ToolCallUpdate)
	u.ToolCallID, u.Name, u.RawInput = call.ID, call.Name, args(call.Arguments)
	if l, ok := h.s.Agent.Tools[call.Name].(tool.Locator); ok {
		u.Locations = l.Locations(toolEnv(h.s, h.turn), call.Arguments)
	}
	h.s.publish(u)
}

// ToolResult reports a result, with the diff of a file it changed.
func (h *hooks) ToolResult(call llm.ToolCall, r tool.Result) {
	u := h.update(ToolResultUpdate)
	u.ToolCallID, u.Name = call.ID, call.Name
	u.RawOutput, u.IsError = r.Output, r.IsError
	u.Diff = r.Diff
	h.s.publish(u)
}

// Plan publishes update_plan's plan as a plan update of the turn.
func (h *hooks) Plan(entries []tool.PlanEntry) {
	u := h.update(Plan)
	if entries == nil {
		entries = []tool.PlanEntry{}
	}
	u.Entries = entries
	h.s.publish(u)
}

// Message records each message of the model context as it happens (docs/protocol.md,
// "Durable sessions"): the prompt opened the turn (beginTurn stored it before the
// model was called), every later message is a checkpoint event of its own, so a crash
// loses at most the one being written. An answer without tool calls ends the turn: it
// is held and stored with the turn's end, in the same write (commitTurn), unless
// another message follows it, which stores it first. A checkpoint that cannot be
// stored ends the turn (storage.go).
func (h *hooks) Message(m llm.Message) {
	if h.turn.promptStored { // the prompt: stored before the model was called
		h.turn.promptStored = false
		return
	}
	if h.turn.storageErr != nil {
		return // the turn is ending; what follows the failure is not stored
	}
	if f := h.turn.final; f != nil {
		h.turn.final = nil
		h.store(*f)
		if h.turn.storageErr != nil {
			return
		}
	}
	if m.Role == llm.RoleAssistant && len(m.ToolCalls) == 0 {
		h.turn.final = &m
		return
	}
	h.store(m)
}

// store appends m as a checkpoint of the turn.
func (h *hooks) store(m llm.Message) {
	s, ctx := h.s, h.turn.storage
	id, err := s.mgr.st.AppendCheckpoint(ctx, s.ID, h.turn.id, m)
	if s.deleted(err) {
		return // session/delete removed the turn with the session: nothing to keep
	}
	if err != nil {
		s.mgr.log.Error("storing a checkpoint failed; the turn ends", "session", s.ID, "turn", h.turn.id, "role", m.Role, "err", err)
		h.turn.failStorage(err)
		return
	}
	h.turn.stored(s, id)
}

// Approve asks the attached clients (docs/protocol.md, "Turns and session/update"):
// an approval_request update, then the first session/approve wins; after the timeout
// the call is rejected. Either way every client then learns the request is over
// through request_resolved.
func (h *hooks) Approve(ctx context.Context, call llm.ToolCall) (bool, string) {
	s := h.s
	s.mu.Lock()
	if s.always[call.Name] {
		s.mu.Unlock()
		return true, ""
	}
	id := randomID("apr_")
	decided := make(chan string, 1)
	s.approvals[id] = decided
	s.mu.Unlock()

	timeout := s.mgr.opts.ApprovalTimeout
	u := h.update(ApprovalRequest)
	u.RequestID, u.ToolCallID, u.Name, u.RawInput = id, call.ID, call.Name, args(call.Arguments)
	u.TimeoutSecs = int(timeout / time.Second)
	s.publish(u)

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var ok bool
	var reason string
	cancelled := false
	select {
	case d := <-decided:
		switch d {
		case AllowAlways:
			s.mu.Lock()
			s.always[call.Name] = true
			s.mu.Unlock()
			ok = true
		case AllowOnce:
			ok = true
		default:
			reason = "rejected by the user"
		}
	case <-timer.C:
		reason = fmt.Sprintf("no decision within %s", timeout)
	case <-ctx.Done():
		reason = "the turn was cancelled"
		cancelled = true
	}
	s.mu.Lock()
	delete(s.approvals, id)
	closed := s.closed
	s.mu.Unlock()
	if !cancelled || !closed { // a session that ended told its clients itself (shutdown)
		h.resolved(id)
	}
	return ok, reason
}

func (h *hooks) resolved(requestID string) {
	u := h.update(RequestResolved)
	u.RequestID = requestID
	h.s.publish(u)
}

// Ask implements ask_user through elicitation/create: the question goes to every
// attached client that declared form elicitation, the first answer wins, and the
// others are told through request_resolved. No capable client, a decline, a cancel,
// an empty answer or the timeout all mean no answer; a first answer that is an
// error object is a failure (ElicitError).
func (h *hooks) Ask(ctx context.Context, question string, choices []string) (string, bool, error) {
	subs := h.s.capableSubscribers()
	if len(subs) == 0 {
		return "", false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.s.mgr.opts.ElicitTimeout)
	defer cancel()
	p := ElicitParams{
		SessionID: h.s.ID, Mode: "form", Message: question,
		RequestedSchema: answerSchema(choices), RequestID: randomID("eli_"),
	}
	type reply struct {
		r   ElicitResult
		err error
	}
	replies := make(chan reply, len(subs))
	for _, sub := range subs {
		go func() {
			r, err := sub.Elicit(ctx, p)
			replies <- reply{r, err}
		}()
	}
	var answer string
	var ok bool
	var failed error
	for range subs {
		rep := <-replies
		if _, isAnswer := rep.err.(*ElicitError); isAnswer {
			failed = rep.err
			break
		}
		if rep.err != nil {
			continue // this client failed to answer; another may
		}
		if a, isStr := rep.r.Content["answer"].(string); rep.r.Action == "accept" && isStr && a != "" {
			answer, ok = a, true
		}
		break
	}
	cancel() // withdraw the question from the clients that did not answer first
	h.resolved(p.RequestID)
	return answer, ok, failed
}

func answerSchema(choices []string) jsontext.Value {
	answer := map[string]any{"type": "string", "title": "Answer"}
	if len(choices) > 0 {
		answer["enum"] = choices
	}
	b, _ := json.Marshal(map[string]any{
		"type":       "object",
		"properties": map[string]any{"answer": answer},
		"required":   []string{"answer"},
	}, json.Deterministic(true))
	return b
}

func args(v jsontext.Value) jsontext.Value {
	if len(v) == 0 {
		return jsontext.Value("{}")
	}
	return v
}

func toolEnv(s *Session, t *runningTurn) tool.Env {
	h := &hooks{s: s, turn: t}
	return tool.Env{Workspace: s.Workspace, Asker: h, Planner: h, Progress: h.progress}
}

// progress publishes a running call's progress as a tool_progress update of the
// turn (docs/protocol.md, "Tools from MCP servers").
func (h *hooks) progress(callID string, p tool.Progress) {
	u := h.update(ToolProgress)
	u.ToolCallID, u.Message = callID, p.Message
	u.Progress, u.Total = p.Progress, p.Total
	h.s.publish(u)
}
