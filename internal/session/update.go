package session

import (
	"encoding/json/jsontext"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// Update types of session/update: package protocol's names.
const (
	AgentMessageChunk = protocol.AgentMessageChunk
	AgentThoughtChunk = protocol.AgentThoughtChunk
	ToolCallUpdate    = protocol.ToolCall
	ToolResultUpdate  = protocol.ToolResult
	ApprovalRequest   = protocol.ApprovalRequest
	HistoryTrimmed    = protocol.HistoryTrimmed
	RequestResolved   = protocol.RequestResolved
	Plan              = protocol.Plan
	UserMessage       = protocol.UserMessage
	SessionInfo       = protocol.SessionInfo
	HistoryCompacted  = protocol.HistoryCompacted
	UsageUpdate       = protocol.Usage
	ToolProgress      = protocol.ToolProgress
)

// Update is the params of one session/update notification. Which fields are set
// depends on Type; the pointers are the members that a type always carries, even
// when false or empty.
type Update struct {
	SessionID   string         `json:"sessionId"`
	TurnID      string         `json:"turnId,omitzero"`
	Seq         uint64         `json:"seq"`
	Type        string         `json:"type"`
	Text        *string        `json:"text,omitzero"`
	ToolCallID  string         `json:"toolCallId,omitzero"`
	Name        string         `json:"name,omitzero"`
	RawInput    jsontext.Value `json:"rawInput,omitzero"`
	RawOutput   *string        `json:"rawOutput,omitzero"`
	IsError     *bool          `json:"isError,omitzero"`
	RequestID   string         `json:"requestId,omitzero"`
	TimeoutSecs int            `json:"timeoutSecs,omitzero"`
	Dropped     *int           `json:"droppedMessages,omitzero"`
	Kept        *int           `json:"keptMessages,omitzero"`
	// Locations are the places a file tool's tool_call touches (never nil for one).
	Locations []tool.Location `json:"locations,omitzero"`
	// Diff is the file a tool_result of write_file or edit_file changed.
	Diff *tool.Diff `json:"diff,omitzero"`
	// Entries is the plan of a plan update (never nil there).
	Entries []tool.PlanEntry `json:"entries,omitzero"`

	// session_info (all three always present).
	Mode  *string `json:"mode,omitzero"`
	Model *string `json:"model,omitzero"`
	Title *string `json:"title,omitzero"`
	// history_compacted: the retained context's size in characters.
	Before *int `json:"before,omitzero"`
	After  *int `json:"after,omitzero"`
	// usage of one model call.
	InputTokens       *int     `json:"inputTokens,omitzero"`
	OutputTokens      *int     `json:"outputTokens,omitzero"`
	CachedInputTokens int      `json:"cachedInputTokens,omitzero"`
	ContextTokens     *int     `json:"contextTokens,omitzero"`
	ContextWindow     int      `json:"contextWindow,omitzero"`
	Progress          *float64 `json:"progress,omitzero"`
	Total             *float64 `json:"total,omitzero"`
	Message           string   `json:"message,omitzero"`
}

// ElicitParams are the params of elicitation/create (docs/protocol.md,
// "elicitation/create"). RequestID names the question in request_resolved when
// another client answered first.
type ElicitParams struct {
	SessionID       string         `json:"sessionId"`
	Mode            string         `json:"mode"`
	Message         string         `json:"message"`
	RequestedSchema jsontext.Value `json:"requestedSchema"`
	RequestID       string         `json:"requestId"`
}

// ElicitResult is a client's answer to elicitation/create. A client that answered
// "result": null leaves Action empty.
type ElicitResult struct {
	Action  string         `json:"action"` // accept, decline, cancel
	Content map[string]any `json:"content,omitzero"`
}

// chunk reports whether u is a plain text chunk: nothing set but what a streamed
// chunk carries.
func (u *Update) chunk() bool {
	return (u.Type == AgentMessageChunk || u.Type == AgentThoughtChunk) && u.Text != nil &&
		u.ToolCallID == "" && u.Name == "" && u.RawInput == nil && u.RawOutput == nil && u.IsError == nil &&
		u.RequestID == "" && u.TimeoutSecs == 0 && u.Dropped == nil && u.Kept == nil &&
		u.Locations == nil && u.Diff == nil && u.Entries == nil &&
		u.Mode == nil && u.Model == nil && u.Title == nil && u.Before == nil && u.After == nil &&
		u.InputTokens == nil && u.OutputTokens == nil && u.ContextTokens == nil &&
		u.Progress == nil && u.Message == ""
}
