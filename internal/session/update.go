package session

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"slices"
	"strconv"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
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
	// Plan is update_plan's plan, whole, each time the model updates it (SPEC §21).
	Plan = "plan"
	// UserMessage opens every turn with the prompt as the turn received it
	// (attachment markers included), so other clients see what was asked (SPEC §18).
	UserMessage = "user_message"
	// SessionInfo tells every attached client the session's mode, model and title
	// after session/set changed one; HistoryCompacted follows a session/compact that
	// replaced the retained context. Neither belongs to a turn (no turnId). Usage
	// follows every model call of a turn (SPEC §22).
	SessionInfo      = "session_info"
	HistoryCompacted = "history_compacted"
	UsageUpdate      = "usage"
	// ToolProgress is a running tool's progress (an MCP server's progress
	// notifications, SPEC §21).
	ToolProgress = "tool_progress"
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
	// history_compacted: the retained context's size in characters; Auto when the
	// daemon compacted on its own (docs/protocol.md, "Automatic compaction").
	Before *int `json:"before,omitzero"`
	After  *int `json:"after,omitzero"`
	Auto   bool `json:"auto,omitzero"`
	// Steered marks the user_message of a session/steer that joined a running turn.
	Steered bool `json:"steered,omitzero"`
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

// encoder writes the text chunks of one session, which a streamed reply sends by
// the thousand, by hand, byte for byte what json.Marshal writes, after a prefix
// (sessionId, turnId and the "seq" key) kept for as long as the turn lasts. The
// other types go through json.Marshal (Session.publish).
type encoder struct {
	prefix []byte       // {"sessionId":…,"turnId":…,"seq":
	turn   string       // the turnId prefix was made for
	shape  *store.Shape // of the chunks of type typ after prefix, or nil
	typ    string       // the type of shape
}

// chunk appends the JSON of a text chunk to b and returns it (reallocated when b
// has no room), with its Shape for the replay log when it was encoded by hand (the
// core is the quoted text), else nil.
func (e *encoder) chunk(b []byte, sessionID, turnID string, seq uint64, typ, text string) ([]byte, *store.Shape, error) {
	if e.prefix == nil || e.turn != turnID || !e.prefixOf(sessionID) {
		e.shape = nil
		p := append(e.prefix[:0], `{"sessionId":`...)
		p, err := jsontext.AppendQuote(p, sessionID)
		if err != nil {
			return marshalChunk(sessionID, turnID, seq, typ, text) // invalid UTF-8: let Marshal decide
		}
		if turnID != "" {
			p = append(p, `,"turnId":`...)
			if p, err = jsontext.AppendQuote(p, turnID); err != nil {
				return marshalChunk(sessionID, turnID, seq, typ, text)
			}
		}
		e.prefix, e.turn = append(p, `,"seq":`...), turnID
	}
	if e.shape == nil || e.typ != typ {
		// Its parts are copies: the prefix's buffer is written again for the next
		// turn, while the replay log may still hold updates of this shape.
		e.shape, e.typ = &store.Shape{
			Prefix: slices.Clone(e.prefix),
			Middle: []byte(`,"type":"` + typ + `","text":"`),
			Suffix: []byte(`"}`),
		}, typ
	}
	b = append(b, e.prefix...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"type":"`...)
	b = append(b, typ...)
	b = append(b, `","text":`...)
	if plainASCII(text) { // a word of a streamed reply, mostly: nothing to escape
		b = append(append(append(b, '"'), text...), '"', '}')
		return b, e.shape, nil
	}
	b, err := jsontext.AppendQuote(b, text)
	if err != nil {
		return marshalChunk(sessionID, turnID, seq, typ, text)
	}
	return append(b, '}'), e.shape, nil
}

// plainASCII reports whether s is printable ASCII with no quote or backslash: JSON
// quotes it as it is. The general quoting cost a chunk of a few letters as much as
// the rest of its encoding.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// marshalChunk is json.Marshal of a text chunk. It is a function of its own so
// that the chunk's text is copied to the heap only here: the chunks that encode by
// hand are published from the stack.
//
//go:noinline
func marshalChunk(sessionID, turnID string, seq uint64, typ, text string) ([]byte, *store.Shape, error) {
	b, err := json.Marshal(&Update{SessionID: sessionID, TurnID: turnID, Seq: seq, Type: typ, Text: &text})
	return b, nil, err
}

// prefixOf reports whether the kept prefix is the one of session id: it starts
// with id quoted, which a plain id (the daemon's own) always is.
func (e *encoder) prefixOf(id string) bool {
	const key = len(`{"sessionId":"`)
	return len(e.prefix) > key+len(id) && string(e.prefix[key:key+len(id)]) == id && e.prefix[key+len(id)] == '"'
}
