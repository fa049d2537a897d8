// Package protocol holds the wire types the daemon and its clients share
// (docs/protocol.md): the daemon's error codes beside JSON-RPC's own, the type
// names of session/update, the frame of a session/update notification, the
// status result and its sessions, and elicitation/create. The server
// (internal/rpc, internal/session, internal/feed) and the public client package
// both use these, so a name or a code is written once.
package protocol

// The daemon's error codes (docs/protocol.md, "Error codes"); JSON-RPC's own
// (-32700, -32600 to -32603) are package jsonrpc's.
const (
	CodeSessionNotFound = -32000
	CodeSessionLimit    = -32001
	CodeSessionBusy     = -32002
	CodeConnectionLimit = -32004
	CodeUnauthenticated = -32010
	CodeVersionMismatch = -32011
	CodeForbidden       = -32012
)

// Update types of session/update (docs/protocol.md, "session/update").
const (
	AgentMessageChunk = "agent_message_chunk"
	AgentThoughtChunk = "agent_thought_chunk"
	ToolCall          = "tool_call"
	ToolResult        = "tool_result"
	ApprovalRequest   = "approval_request"
	HistoryTrimmed    = "history_trimmed"
	RequestResolved   = "request_resolved"
	// UserMessage opens every turn with the prompt as the turn received it
	// (attachment markers included), so other clients see what was asked.
	UserMessage = "user_message"
	// Plan is update_plan's plan, whole, each time the model updates it.
	Plan = "plan"
	// SessionInfo follows a session/set that changed the mode, model or title;
	// HistoryCompacted a compaction that replaced the retained context. Neither
	// belongs to a turn (no turnId).
	SessionInfo      = "session_info"
	HistoryCompacted = "history_compacted"
	// Usage follows every model call of a turn.
	Usage = "usage"
	// ToolProgress is a running tool's progress (an MCP server's).
	ToolProgress = "tool_progress"
	// MemoryRecalled says which memories a turn's recall put in front of its user
	// message in the provider request (docs/protocol.md, "Memory").
	MemoryRecalled = "memory_recalled"
	// Lagged tells a connection it was detached from a session it fell behind on.
	Lagged = "lagged"
)

// The NDJSON frame of a session/update notification around its params, as a
// JSON-RPC notification is framed.
const (
	UpdateFramePrefix = `{"jsonrpc":"2.0","method":"session/update","params":`
	UpdateFrameSuffix = "}\n"
)

// FrameUpdate appends to dst the NDJSON frame of the session/update notification
// whose params are payload.
func FrameUpdate(dst, payload []byte) []byte {
	return append(append(append(dst, UpdateFramePrefix...), payload...), UpdateFrameSuffix...)
}

// LiveSession is a live session as status lists it.
type LiveSession struct {
	SessionID  string `json:"sessionId"`
	AgentAlias string `json:"agentAlias"`
	State      string `json:"state"` // idle, running
}

// Status is the result of status.
type Status struct {
	ServerVersion   string        `json:"serverVersion"`
	ProtocolVersion int           `json:"protocolVersion"`
	PID             int           `json:"pid"`
	UptimeMs        int64         `json:"uptimeMs"`
	DataDir         string        `json:"dataDir"`
	Endpoint        string        `json:"endpoint"`
	Connections     int           `json:"connections"`
	ActiveSessions  int           `json:"activeSessions"`
	Sessions        []LiveSession `json:"sessions"`
}
