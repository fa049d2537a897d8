package session

import "encoding/json/jsontext"

// Update types of session/update (SPEC §7, §14).
const (
	AgentMessageChunk = "agent_message_chunk"
	AgentThoughtChunk = "agent_thought_chunk"
	ToolCallUpdate    = "tool_call"
	ToolResultUpdate  = "tool_result"
	ApprovalRequest   = "approval_request"
	HistoryTrimmed    = "history_trimmed"
	RequestResolved   = "request_resolved"
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
}

// ElicitParams are the params of elicitation/create (SPEC §8). RequestID names the
// question in request_resolved when another client answered first.
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
