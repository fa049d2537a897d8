package acp

import (
	"context"
	"encoding/json/jsontext"
	"strings"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// forward hands one native update to the editor as ACP (docs/protocol.md, "ACP"): text
// chunks as chunks, tool calls and results as tool_call (with locations) and
// tool_call_update (with a diff), plans as plan, approval requests as
// session/request_permission, session_info and usage as the updates of
// controls.go. history_trimmed, history_compacted, lagged and request_resolved are
// handled here and not forwarded; d is the connection the
// update came on. It runs on the client's update goroutine, in the daemon's order.
func (b *Bridge) forward(d *client.Client, u client.Update) {
	sid := u.SessionID
	b.mu.Lock()
	s := b.state(sid)
	if u.Seq != 0 {
		if u.Seq <= s.lastSeq { // replayed by a re-attach, and already forwarded
			b.mu.Unlock()
			return
		}
		s.lastSeq = u.Seq
	}
	var cancelNow bool
	if u.Type == client.UserMessage {
		// The user_message of the editor's own prompt is not echoed: the editor shows
		// what it sent. It marks the turn as begun, so a cancel may reach it.
		if t := s.turn; t != nil && !t.begun && strings.HasPrefix(u.Text, t.echo) {
			t.begun, t.turnID = true, u.TurnID
			cancelNow = t.cancelled.Load()
			b.mu.Unlock()
			if cancelNow {
				b.cancelOnDaemon(sid)
			}
			return
		}
	}
	b.mu.Unlock()

	switch u.Type {
	case client.UserMessage:
		b.notify(sid, contentChunk{SessionUpdate: "user_message_chunk", Content: text(u.Text)})
	case client.AgentMessageChunk:
		b.notify(sid, contentChunk{SessionUpdate: "agent_message_chunk", Content: text(u.Text)})
	case client.AgentThoughtChunk:
		b.notify(sid, contentChunk{SessionUpdate: "agent_thought_chunk", Content: text(u.Text)})
	case client.ToolCall:
		b.notify(sid, newToolCall(u.ToolCallID, u.Name, u.RawInput, u.Locations))
	case client.ToolResult:
		b.notify(sid, newToolResult(u.ToolCallID, u.RawOutput, u.IsError, u.Diff))
	case client.Plan:
		b.notify(sid, newPlan(u.Entries))
	case client.UpdateMemoryRecalled:
		b.recalled(sid, u)
	case client.ToolProgress:
		b.notify(sid, progressUpdate(u.ToolCallID, u.Message))
	case client.ApprovalRequest:
		b.mu.Lock()
		s := b.state(sid)
		s.asking.Add(1)
		b.mu.Unlock()
		go func() {
			defer s.asking.Done()
			b.permission(u)
		}()
	case client.RequestResolved:
		b.withdraw(sid, u.RequestID)
	case client.UpdateLagged:
		b.retire(d)
	case client.HistoryTrimmed:
		b.log.Info("the daemon trimmed a session's model context", "session", sid,
			"droppedMessages", u.Dropped, "keptMessages", u.Kept)
	case client.SessionInfoUpdate:
		b.controlsChanged(sid, u)
	case client.UsageUpdate:
		b.usage(sid, u)
	case client.HistoryCompacted:
		b.log.Info("the daemon compacted a session's model context", "session", sid, "before", u.Before, "after", u.After)
	default:
		b.log.Debug("ignored an update of an unknown type", "type", u.Type)
	}
}

// ask registers a question the daemon asked (an approval or an elicitation) under
// its request id, so that request_resolved can withdraw it from the editor. The
// returned context ends when it is withdrawn or after timeout (when > 0).
func (b *Bridge) ask(sid, requestID string, timeout time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancel(b.ctx)
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(b.ctx, timeout)
	}
	b.mu.Lock()
	b.state(sid).asks[requestID] = cancel
	b.mu.Unlock()
	return ctx, func() {
		cancel()
		b.mu.Lock()
		delete(b.state(sid).asks, requestID)
		b.mu.Unlock()
	}
}

// withdraw ends the editor's request for a question that was resolved elsewhere.
func (b *Bridge) withdraw(sid, requestID string) {
	b.mu.Lock()
	cancel := b.state(sid).asks[requestID]
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// callEditor sends a request to the editor. When ctx ends first (the question was
// withdrawn or timed out) the request is withdrawn with $/cancel_request and
// withdrawn reports true.
func (b *Bridge) callEditor(ctx context.Context, method string, params, result any) (withdrawn bool, err error) {
	var id jsonrpc.ID
	err = b.editor.CallSent(ctx, method, params, result, func(sent jsonrpc.ID) { id = sent })
	if err != nil && ctx.Err() != nil && id != nil {
		b.send("$/cancel_request", map[string]any{"requestId": id})
		return true, err
	}
	return false, err
}

// permission asks the editor about an approval_request and answers the daemon with
// the option chosen. An outcome of "cancelled" sends no decision; a request
// resolved elsewhere or timed out is withdrawn from the editor.
func (b *Bridge) permission(u client.Update) {
	ctx, done := b.ask(u.SessionID, u.RequestID, time.Duration(u.TimeoutSecs)*time.Second)
	defer done()
	tc := newToolCall(u.ToolCallID, u.Name, u.RawInput, nil)
	tc.SessionUpdate = ""
	var res struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	withdrawn, err := b.callEditor(ctx, "session/request_permission", map[string]any{
		"sessionId": u.SessionID, "toolCall": tc, "options": permissionOptions(u.Name),
	}, &res)
	if withdrawn {
		return
	}
	decision := ""
	switch {
	case err != nil:
		// An editor that cannot ask (or failed to) refuses rather than leaving the
		// turn waiting for the daemon's timeout.
		b.log.Info("the editor did not answer a permission request; rejecting", "err", err)
		decision = client.RejectOnce
	case res.Outcome.Outcome == "cancelled":
		return
	case res.Outcome.Outcome == "selected":
		switch res.Outcome.OptionID {
		case client.AllowOnce, client.AllowAlways, client.RejectOnce:
			decision = res.Outcome.OptionID
		default:
			b.log.Info("the editor chose an unknown permission option; rejecting", "optionId", res.Outcome.OptionID)
			decision = client.RejectOnce
		}
	default:
		b.log.Info("the editor answered an unknown permission outcome; rejecting", "outcome", res.Outcome.Outcome)
		decision = client.RejectOnce
	}
	d := b.live()
	if d == nil {
		return
	}
	actx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if _, err := d.Approve(actx, u.SessionID, u.RequestID, decision); err != nil {
		b.log.Info("sending a decision to the daemon failed", "err", err)
	}
}

// elicitation forwards the daemon's elicitation/create to the editor (only set when
// the editor declared form elicitation). A question resolved elsewhere is withdrawn.
func (b *Bridge) elicitation(ctx context.Context, e client.Elicitation) (client.ElicitationResult, error) {
	b.mu.Lock()
	s := b.state(e.SessionID)
	s.asking.Add(1)
	b.mu.Unlock()
	defer s.asking.Done()
	actx, done := b.ask(e.SessionID, e.RequestID, 0)
	defer done()
	stop := context.AfterFunc(ctx, done)
	defer stop()
	schema := e.RequestedSchema
	if len(schema) == 0 {
		schema = jsontext.Value(`{"type":"object","properties":{}}`)
	}
	var res client.ElicitationResult
	withdrawn, err := b.callEditor(actx, "elicitation/create", map[string]any{
		"sessionId": e.SessionID, "mode": "form", "message": e.Message, "requestedSchema": schema,
	}, &res)
	if withdrawn {
		return client.ElicitationResult{Action: "cancel"}, nil
	}
	if err != nil {
		return client.ElicitationResult{}, err
	}
	return res, nil
}
