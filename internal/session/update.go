package session

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"strconv"
)

// Update types of session/update (SPEC §7, §14).
const (
	AgentMessageChunk = "agent_message_chunk"
	AgentThoughtChunk = "agent_thought_chunk"
	ToolCallUpdate    = "tool_call"
	ToolResultUpdate  = "tool_result"
	ApprovalRequest   = "approval_request"
	HistoryTrimmed    = "history_trimmed"
	RequestResolved   = "request_resolved"
	// UserMessage opens every turn with the prompt as the turn received it
	// (attachment markers included), so other clients see what was asked (SPEC §18).
	UserMessage = "user_message"
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

// encode returns the JSON of u. The text chunks, which a streamed reply sends by
// the thousand, are appended by hand, byte for byte what json.Marshal writes; the
// other types go through json.Marshal.
func (u *Update) encode() ([]byte, error) {
	if (u.Type != AgentMessageChunk && u.Type != AgentThoughtChunk) || u.Text == nil ||
		u.ToolCallID != "" || u.Name != "" || u.RawInput != nil || u.RawOutput != nil || u.IsError != nil ||
		u.RequestID != "" || u.TimeoutSecs != 0 || u.Dropped != nil || u.Kept != nil {
		return json.Marshal(u)
	}
	b := make([]byte, 0, 96+len(u.SessionID)+len(u.TurnID)+len(*u.Text)+len(*u.Text)/8)
	b = append(b, `{"sessionId":`...)
	b, err := jsontext.AppendQuote(b, u.SessionID)
	if err != nil {
		return json.Marshal(u) // invalid UTF-8: let Marshal decide
	}
	if u.TurnID != "" {
		b = append(b, `,"turnId":`...)
		if b, err = jsontext.AppendQuote(b, u.TurnID); err != nil {
			return json.Marshal(u)
		}
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, u.Seq, 10)
	b = append(b, `,"type":"`...)
	b = append(b, u.Type...)
	b = append(b, `","text":`...)
	if b, err = jsontext.AppendQuote(b, *u.Text); err != nil {
		return json.Marshal(u)
	}
	return append(b, '}'), nil
}
