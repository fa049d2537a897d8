package protocol

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
)

// Update is the params of one session/update notification (docs/protocol.md,
// "session/update"), as the daemon sends it and a client reads it. Which fields
// are set depends on Type. On the wire a type always carries its members, even
// when false, zero or empty (a tool_result's isError, a chunk's text), and
// nothing else that is zero (see MarshalJSONTo).
type Update struct {
	SessionID   string         `json:"sessionId"`
	TurnID      string         `json:"turnId"` // none for session_info, history_compacted
	Seq         uint64         `json:"seq"`
	Type        string         `json:"type"`
	Text        string         `json:"text"`       // agent_message_chunk, agent_thought_chunk, user_message
	ToolCallID  string         `json:"toolCallId"` // tool_call, tool_result, approval_request, tool_progress
	Name        string         `json:"name"`       // the tool
	RawInput    jsontext.Value `json:"rawInput"`   // tool_call, approval_request: the arguments
	RawOutput   string         `json:"rawOutput"`  // tool_result
	IsError     bool           `json:"isError"`    // tool_result
	RequestID   string         `json:"requestId"`  // approval_request, request_resolved
	TimeoutSecs int            `json:"timeoutSecs"`
	Dropped     int            `json:"droppedMessages"` // history_trimmed
	Kept        int            `json:"keptMessages"`    // history_trimmed
	AfterSeq    uint64         `json:"afterSeq"`        // lagged: every update up to this seq was delivered
	// Locations are the places a file tool's tool_call touches (never nil for one).
	Locations []Location `json:"locations"`
	// Diff is the file a tool_result of write_file or edit_file changed.
	Diff *Diff `json:"diff"`
	// Entries is the plan of a plan update (never nil there).
	Entries []PlanEntry `json:"-"`
	// Recalled are the memories a turn's recall put in front of its user message
	// in the provider request: a memory_recalled update's entries.
	Recalled []RecalledMemory `json:"-"`
	// session_info (no TurnID): the session's controls after session/set.
	Mode  string `json:"mode"`
	Model string `json:"model"`
	Title string `json:"title"`
	// history_compacted (no TurnID): the retained context's size in characters.
	Before int `json:"before"`
	After  int `json:"after"`
	// usage: one model call's tokens; ContextWindow is 0 when unknown.
	InputTokens       int      `json:"inputTokens"`
	OutputTokens      int      `json:"outputTokens"`
	CachedInputTokens int      `json:"cachedInputTokens"`
	ContextTokens     int      `json:"contextTokens"`
	ContextWindow     int      `json:"contextWindow"`
	Progress          float64  `json:"progress"` // tool_progress
	Total             *float64 `json:"total"`    // tool_progress, when known
	Message           string   `json:"message"`  // tool_progress
	// Raw is the notification's params exactly as received (a client's).
	Raw jsontext.Value `json:"-"`
}

// RecalledMemory is one memory a turn recalled, with its score; Key is "" for
// a memory stored without one.
type RecalledMemory struct {
	ID    string  `json:"id"`
	Key   string  `json:"key,omitzero"`
	Score float64 `json:"score"`
}

// Stamp gives u its session and seq, as the daemon's stream numbers it.
func (u *Update) Stamp(sessionID string, seq uint64) { u.SessionID, u.Seq = sessionID, seq }

// Location is a place in a file a call reads or changes: an absolute path and,
// when known, a 1-based line (0 when not).
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitzero"`
}

// Diff is a file a tool changed, whole, before and after. OldText is nil for a
// file the call created. The daemon sends none for files over 256 KiB.
type Diff struct {
	Path    string  `json:"path"`             // absolute
	OldText *string `json:"oldText,omitzero"` // nil for a file the call created
	NewText string  `json:"newText"`
}

// PlanEntry is one step of a plan: Status is pending, in_progress or completed;
// Priority high, medium, low or "" when the model gave none.
type PlanEntry struct {
	Content  string `json:"content"`
	Status   string `json:"status"`
	Priority string `json:"priority,omitzero"`
}

// member is a member of Update that a type carries even when zero.
type member uint32

const (
	mText member = 1 << iota
	mRawOutput
	mIsError
	mDropped
	mKept
	mAfterSeq
	mControls // mode, model, title
	mSizes    // before, after
	mTokens   // inputTokens, outputTokens, contextTokens
	mProgress
)

// members are the members each type carries even when zero; every other member
// goes out only when it is not zero.
var members = map[string]member{
	AgentMessageChunk: mText,
	AgentThoughtChunk: mText,
	UserMessage:       mText,
	ToolResult:        mRawOutput | mIsError,
	HistoryTrimmed:    mDropped | mKept,
	SessionInfo:       mControls,
	HistoryCompacted:  mSizes,
	Usage:             mTokens,
	ToolProgress:      mProgress,
	Lagged:            mAfterSeq,
}

// wire is Update as it is written: a pointer is a member its type carries.
type wire struct {
	SessionID         string         `json:"sessionId"`
	TurnID            string         `json:"turnId,omitzero"`
	Seq               uint64         `json:"seq"`
	Type              string         `json:"type"`
	Text              *string        `json:"text,omitzero"`
	ToolCallID        string         `json:"toolCallId,omitzero"`
	Name              string         `json:"name,omitzero"`
	RawInput          jsontext.Value `json:"rawInput,omitzero"`
	RawOutput         *string        `json:"rawOutput,omitzero"`
	IsError           *bool          `json:"isError,omitzero"`
	RequestID         string         `json:"requestId,omitzero"`
	TimeoutSecs       int            `json:"timeoutSecs,omitzero"`
	Dropped           *int           `json:"droppedMessages,omitzero"`
	Kept              *int           `json:"keptMessages,omitzero"`
	AfterSeq          *uint64        `json:"afterSeq,omitzero"`
	Locations         []Location     `json:"locations,omitzero"`
	Diff              *Diff          `json:"diff,omitzero"`
	Entries           any            `json:"entries,omitzero"` // plan's or memory_recalled's, when set
	Mode              *string        `json:"mode,omitzero"`
	Model             *string        `json:"model,omitzero"`
	Title             *string        `json:"title,omitzero"`
	Before            *int           `json:"before,omitzero"`
	After             *int           `json:"after,omitzero"`
	InputTokens       *int           `json:"inputTokens,omitzero"`
	OutputTokens      *int           `json:"outputTokens,omitzero"`
	CachedInputTokens int            `json:"cachedInputTokens,omitzero"`
	ContextTokens     *int           `json:"contextTokens,omitzero"`
	ContextWindow     int            `json:"contextWindow,omitzero"`
	Progress          *float64       `json:"progress,omitzero"`
	Total             *float64       `json:"total,omitzero"`
	Message           string         `json:"message,omitzero"`
}

// carried is &v when the type carries the member m or v is not zero, else nil.
func carried[T comparable](has member, m member, v *T) *T {
	var zero T
	if has&m != 0 || *v != zero {
		return v
	}
	return nil
}

// MarshalJSONTo writes u as the daemon sends it: the members u's type carries,
// and the others only when not zero.
func (u *Update) MarshalJSONTo(enc *jsontext.Encoder) error {
	has := members[u.Type]
	w := wire{
		SessionID: u.SessionID, TurnID: u.TurnID, Seq: u.Seq, Type: u.Type,
		Text:       carried(has, mText, &u.Text),
		ToolCallID: u.ToolCallID, Name: u.Name, RawInput: u.RawInput,
		RawOutput: carried(has, mRawOutput, &u.RawOutput),
		IsError:   carried(has, mIsError, &u.IsError),
		RequestID: u.RequestID, TimeoutSecs: u.TimeoutSecs,
		Dropped:   carried(has, mDropped, &u.Dropped),
		Kept:      carried(has, mKept, &u.Kept),
		AfterSeq:  carried(has, mAfterSeq, &u.AfterSeq),
		Locations: u.Locations, Diff: u.Diff,
		Mode:              carried(has, mControls, &u.Mode),
		Model:             carried(has, mControls, &u.Model),
		Title:             carried(has, mControls, &u.Title),
		Before:            carried(has, mSizes, &u.Before),
		After:             carried(has, mSizes, &u.After),
		InputTokens:       carried(has, mTokens, &u.InputTokens),
		OutputTokens:      carried(has, mTokens, &u.OutputTokens),
		CachedInputTokens: u.CachedInputTokens,
		ContextTokens:     carried(has, mTokens, &u.ContextTokens),
		ContextWindow:     u.ContextWindow,
		Progress:          carried(has, mProgress, &u.Progress),
		Total:             u.Total, Message: u.Message,
	}
	switch {
	case u.Type == MemoryRecalled && u.Recalled != nil:
		w.Entries = u.Recalled
	case u.Entries != nil:
		w.Entries = u.Entries
	}
	return json.MarshalEncode(enc, &w)
}

// UnmarshalJSONFrom reads an update: entries go to Recalled for a
// memory_recalled update, to Entries for any other.
func (u *Update) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	type fields Update // Update's members without its methods
	var in struct {
		fields
		Entries jsontext.Value `json:"entries"`
	}
	if err := json.UnmarshalDecode(dec, &in); err != nil {
		return err
	}
	*u = Update(in.fields)
	if len(in.Entries) == 0 || string(in.Entries) == "null" {
		return nil
	}
	if u.Type == MemoryRecalled {
		return json.Unmarshal(in.Entries, &u.Recalled)
	}
	return json.Unmarshal(in.Entries, &u.Entries)
}

// Elicitation is the params of elicitation/create (docs/protocol.md,
// "elicitation/create"): a question from the ask_user tool. RequestedSchema is a
// JSON Schema object with one string property, "answer", whose "enum" lists the
// choices when there are any. RequestID names the question in request_resolved
// when another client answered first.
type Elicitation struct {
	SessionID       string         `json:"sessionId"`
	Mode            string         `json:"mode"`
	Message         string         `json:"message"`
	RequestedSchema jsontext.Value `json:"requestedSchema"`
	RequestID       string         `json:"requestId"`
}

// ElicitationResult answers an Elicitation. Action is "accept" (with Content,
// e.g. {"answer": "blue"}), "decline" or "cancel"; a client that answered
// "result": null leaves it empty.
type ElicitationResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitzero"`
}
