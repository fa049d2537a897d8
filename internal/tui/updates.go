package tui

import (
	"encoding/json/v2"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// Update types this UI knows beyond the client package's constants (docs/protocol.md,
// "session/update").
const (
	updUsage            = "usage"
	updSessionInfo      = "session_info"
	updPlan             = "plan"
	updHistoryCompacted = "history_compacted"
	updToolProgress     = "tool_progress"
)

// planEntry is one entry of a plan update.
type planEntry struct {
	Content  string `json:"content"`
	Status   string `json:"status"` // pending, in_progress, completed
	Priority string `json:"priority"`
}

// extra holds the fields of updates that client.Update does not decode.
type extra struct {
	Diff          *fileDiff   `json:"diff"`
	Entries       []planEntry `json:"entries"`
	ContextTokens int         `json:"contextTokens"`
	ContextWindow int         `json:"contextWindow"`
	Mode          *string     `json:"mode"`
	Model         *string     `json:"model"`
	Title         *string     `json:"title"`
	Before        int         `json:"before"`
	After         int         `json:"after"`
	Message       string      `json:"message"`
}

func decodeExtra(u client.Update) extra {
	var x extra
	if len(u.Raw) > 0 {
		json.Unmarshal(u.Raw, &x) // fields that do not fit stay zero
	}
	return x
}

// applyUpdates applies updates of the current session in order.
func (m *Model) applyUpdates(us []client.Update) tea.Cmd {
	for _, u := range us {
		if u.SessionID != "" && u.SessionID != m.sid {
			continue
		}
		m.apply(u)
	}
	return m.tick()
}

func (m *Model) apply(u client.Update) {
	switch u.Type {
	case client.UserMessage:
		b := m.tr.add(&block{kind: blockUser, turnID: u.TurnID})
		b.text.WriteString(u.Text)
		m.tr.follow()
		m.streaming = true
		if m.title == "" { // the daemon's derived title (docs/protocol.md, "session/list")
			first, _, _ := strings.Cut(u.Text, "\n")
			m.title = clip(strings.TrimSpace(first), 80)
		}
	case client.AgentMessageChunk, client.AgentThoughtChunk:
		kind := blockAssistant
		if u.Type == client.AgentThoughtChunk {
			kind = blockThought
		}
		b := m.tr.last()
		if b == nil || b.kind != kind || b.turnID != u.TurnID {
			b = m.tr.add(&block{kind: kind, turnID: u.TurnID})
		}
		b.text.WriteString(u.Text)
		b.touch()
	case client.ToolCall:
		b := m.tr.add(&block{kind: blockTool, turnID: u.TurnID, tool: &toolCard{id: u.ToolCallID, name: u.Name, args: u.RawInput, state: toolRunning}})
		m.cards[u.ToolCallID] = b
	case client.ApprovalRequest:
		if b := m.card(u); b != nil {
			b.tool.state = toolApproval
			b.touch()
		}
		m.approvals = append(m.approvals, u)
	case client.RequestResolved:
		m.resolved(u.RequestID)
	case client.ToolResult:
		b := m.card(u)
		c := b.tool
		c.output, c.state, c.progress = u.RawOutput, toolDone, ""
		if u.IsError {
			c.state = toolFailed
			if isCancelledOutput(u.RawOutput) {
				c.state = toolCancelled
			}
		}
		c.diff = decodeExtra(u).Diff
		b.touch()
		m.resolvedTool(u.ToolCallID)
	case updToolProgress:
		if b := m.cards[u.ToolCallID]; b != nil {
			b.tool.progress = decodeExtra(u).Message
			b.touch()
		}
	case client.HistoryTrimmed:
		m.notice(fmt.Sprintf("history trimmed: %d older messages left the model's context, %d kept", u.Dropped, u.Kept), false)
	case updHistoryCompacted:
		x := decodeExtra(u)
		m.notice(fmt.Sprintf("context compacted: %d → %d characters", x.Before, x.After), false)
		if x.Before > 0 && x.After < x.Before && m.ctxTokens > 0 {
			// The daemon counts characters here and tokens after a model call: the
			// context's tokens shrink about as its characters did, until the next
			// usage update says.
			m.ctxTokens, m.ctxEstimated = max(1, m.ctxTokens*x.After/x.Before), true
		}
	case updUsage:
		x := decodeExtra(u)
		m.ctxTokens, m.ctxWindow, m.ctxEstimated = x.ContextTokens, x.ContextWindow, false
	case updSessionInfo:
		x := decodeExtra(u)
		if x.Mode != nil {
			m.mode = *x.Mode
		}
		if x.Model != nil {
			m.model = *x.Model
		}
		if x.Title != nil {
			m.title = *x.Title
		}
	case updPlan:
		m.plan = decodeExtra(u).Entries
	}
}

// card returns the card of a tool call, making one when the call was not seen (an
// attach that replayed only part of a turn).
func (m *Model) card(u client.Update) *block {
	if b := m.cards[u.ToolCallID]; b != nil {
		return b
	}
	b := m.tr.add(&block{kind: blockTool, turnID: u.TurnID, tool: &toolCard{id: u.ToolCallID, name: u.Name, args: u.RawInput, state: toolRunning}})
	m.cards[u.ToolCallID] = b
	return b
}

func isCancelledOutput(s string) bool {
	return len(s) < 200 && (strings.Contains(s, "cancelled") || strings.Contains(s, "canceled"))
}

// resolved closes the approval overlay of a request another client (or a timeout)
// answered.
func (m *Model) resolved(requestID string) {
	for i, a := range m.approvals {
		if a.RequestID == requestID {
			m.approvals = append(m.approvals[:i:i], m.approvals[i+1:]...)
			if b := m.cards[a.ToolCallID]; b != nil && b.tool.state == toolApproval {
				b.tool.state = toolRunning
				b.touch()
			}
			return
		}
	}
}

// resolvedTool drops approvals of a tool call that has its result.
func (m *Model) resolvedTool(toolCallID string) {
	for i, a := range m.approvals {
		if a.ToolCallID == toolCallID {
			m.approvals = append(m.approvals[:i:i], m.approvals[i+1:]...)
			return
		}
	}
}
