package client

import (
	"context"

	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// Update types of session/update (docs/protocol.md, "session/update"): package
// protocol's names.
const (
	AgentMessageChunk = protocol.AgentMessageChunk
	AgentThoughtChunk = protocol.AgentThoughtChunk
	ToolCall          = protocol.ToolCall
	ToolResult        = protocol.ToolResult
	ApprovalRequest   = protocol.ApprovalRequest
	HistoryTrimmed    = protocol.HistoryTrimmed
	RequestResolved   = protocol.RequestResolved
	UserMessage       = protocol.UserMessage      // the prompt that opened a turn (Text)
	Plan              = protocol.Plan             // update_plan's plan, whole (Entries)
	SessionInfoUpdate = protocol.SessionInfo      // Mode, Model, Title changed (no TurnID)
	HistoryCompacted  = protocol.HistoryCompacted // Before, After (no TurnID)
	UsageUpdate       = protocol.Usage            // after every model call of a turn
	ToolProgress      = protocol.ToolProgress     // ToolCallID, Progress, Total, Message
)

// Update is one session/update notification (package protocol's). Which fields
// are set depends on Type; Raw is the notification's params exactly as received.
type Update = protocol.Update

// Location is a place a file tool touches: an absolute path and, when known, a
// 1-based line (0 when not).
type Location = protocol.Location

// Diff is a file a tool changed, whole, before and after. OldText is nil for a
// file the call created. The daemon sends none for files over 256 KiB.
type Diff = protocol.Diff

// PlanEntry is one step of a plan: Status is pending, in_progress or completed;
// Priority high, medium, low or "" when the model gave none.
type PlanEntry = protocol.PlanEntry

// Decisions for Approve.
const (
	AllowOnce   = "allow_once"
	AllowAlways = "allow_always" // this tool, for the rest of the session
	RejectOnce  = "reject_once"
)

// Stop reasons of a turn.
const (
	StopEndTurn   = "end_turn"
	StopCancelled = "cancelled"
	StopMaxSteps  = "max_steps"
	StopError     = "error"
)

// Elicitation is the daemon's elicitation/create request: a question from the
// ask_user tool (package protocol's; see Choices).
type Elicitation = protocol.Elicitation

// ElicitationResult answers an Elicitation: Action "accept" (with Content, e.g.
// {"answer": "blue"}), "decline" or "cancel".
type ElicitationResult = protocol.ElicitationResult

// ElicitationHandler answers elicitation/create. It runs on a goroutine of its own and
// may block until the user answers; ctx ends when the connection closes. An error
// answers {"action":"cancel"}.
type ElicitationHandler func(ctx context.Context, e Elicitation) (ElicitationResult, error)

// Principal is who the daemon took the client for.
type Principal struct {
	ID    string `json:"id"`
	Admin bool   `json:"admin"`
}

// InitializeResult is the result of initialize.
type InitializeResult struct {
	ProtocolVersion int       `json:"protocolVersion"`
	ServerVersion   string    `json:"serverVersion"`
	ServerPID       int       `json:"serverPid"`
	InstanceID      string    `json:"instanceId"` // random per daemon start: a restart changes it
	Principal       Principal `json:"principal"`
	Methods         []string  `json:"methods"`
}

// SessionInfo is a live session as status lists it.
type SessionInfo = protocol.LiveSession

// Status is the result of status.
type Status = protocol.Status

// NewSessionParams are the params of session/new. AgentAlias is required.
type NewSessionParams struct {
	AgentAlias string `json:"agentAlias"`
	Cwd        string `json:"cwd,omitzero"`
	// SessionID resumes (or restores) that session, or names the new one.
	SessionID string `json:"sessionId,omitzero"`
	// KeepSiblings keeps the caller's other idle sessions of the agent open.
	KeepSiblings bool `json:"keep_siblings,omitzero"`
	// ClientTools are tools this connection serves for the session (SetToolHandler
	// runs them). The daemon forgets them when the connection closes; the client
	// declares them again when it re-attaches after a reconnect.
	ClientTools []ClientTool `json:"clientTools,omitzero"`
}

// Session is the result of session/new.
type Session struct {
	SessionID    string `json:"sessionId"`
	AgentAlias   string `json:"agentAlias"`
	WorkspaceDir string `json:"workspaceDir"`
	MessageCount int    `json:"messageCount"`
	Resumed      bool   `json:"resumed"`
}

// Usage counts a turn's tokens.
type Usage struct {
	InputTokens       int `json:"inputTokens"`
	OutputTokens      int `json:"outputTokens"`
	CachedInputTokens int `json:"cachedInputTokens"` // prompt results only; 0 when the provider reports none
}

// PromptResult is the result of session/prompt.
type PromptResult struct {
	SessionID  string `json:"sessionId"`
	TurnID     string `json:"turnId"`
	StopReason string `json:"stopReason"` // end_turn, cancelled, max_steps, error
	Text       string `json:"text"`
	Usage      Usage  `json:"usage"`
	// Restarted (WithReconnect): the daemon restarted while the prompt waited for
	// its answer; the answer is what the new start recovered of the turn
	// (stopReason "cancelled" for a turn the restart interrupted).
	Restarted bool `json:"-"`
}

// AttachResult is the result of session/attach.
type AttachResult struct {
	SessionID string `json:"sessionId"`
	LastSeq   uint64 `json:"lastSeq"`
	Replayed  int    `json:"replayed"`
}

// ListedSession is one entry of session/list.
type ListedSession struct {
	SessionID    string `json:"sessionId"`
	AgentAlias   string `json:"agentAlias"`
	CreatedAt    string `json:"createdAt"`
	LastActivity string `json:"lastActivity"`
	MessageCount int    `json:"messageCount"`
	State        string `json:"state"` // running, idle, closed, killed
	WorkspaceDir string `json:"workspaceDir"`
	Title        string `json:"title"` // set by SetSession, else the first line of the first user message ("" before any)
	Usage        Usage  `json:"usage"` // the session's token totals
}

// FileEntry is a stored file: the result of file/upload/commit, and what
// session/prompt takes as an attachment.
type FileEntry struct {
	RefID         string `json:"ref_id"`
	Marker        string `json:"marker"`
	WorkspacePath string `json:"workspace_path"`
	SizeBytes     int64  `json:"size_bytes"`
	Deduplicated  bool   `json:"deduplicated"`
}
