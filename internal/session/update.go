package session

import (
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
	// MemoryRecalled says which memories a turn's recall put in front of its user
	// message in the provider request (docs/protocol.md, "Memory").
	MemoryRecalled = protocol.MemoryRecalled
)

// Update is the params of one session/update notification: package protocol's.
type Update = protocol.Update

// ElicitParams are the params of elicitation/create: package protocol's.
type ElicitParams = protocol.Elicitation

// ElicitResult is a client's answer to elicitation/create: package protocol's.
type ElicitResult = protocol.ElicitationResult

// isChunk reports whether u is a plain text chunk: nothing set but what a
// streamed chunk carries.
func isChunk(u *Update) bool {
	return (u.Type == AgentMessageChunk || u.Type == AgentThoughtChunk) &&
		u.ToolCallID == "" && u.Name == "" && u.RawInput == nil && u.RawOutput == "" && !u.IsError &&
		u.RequestID == "" && u.TimeoutSecs == 0 && u.Dropped == 0 && u.Kept == 0 && u.AfterSeq == 0 &&
		u.Locations == nil && u.Diff == nil && u.Entries == nil && u.Recalled == nil &&
		u.Mode == "" && u.Model == "" && u.Title == "" && u.Before == 0 && u.After == 0 &&
		u.InputTokens == 0 && u.OutputTokens == 0 && u.CachedInputTokens == 0 && u.ContextTokens == 0 &&
		u.ContextWindow == 0 && u.Progress == 0 && u.Total == nil && u.Message == "" && u.Raw == nil
}
