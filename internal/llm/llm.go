// Package llm is the model vocabulary every room shares: the messages of a model
// context and their roles, the tool calls a model makes, the tools it is offered,
// and what a call used. It does no I/O. The store keeps contexts in it, the tools
// and MCP servers describe themselves in it, the agent loop runs on it, and the
// provider adapters (internal/provider) translate it to each API; none of those
// imports another for these types.
package llm

import "encoding/json/jsontext"

// Role of a message in the model context.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // a tool result
)

// Message is one entry of the model context. System prompts are not messages: they
// travel in a provider request's System, so a retained context never contains them.
type Message struct {
	Role Role
	Text string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID, Name and IsError describe a tool result (RoleTool).
	ToolCallID string
	Name       string
	IsError    bool
}

// ToolCall is one complete call the model asked for.
//
// ID is what the call is known by in the daemon (updates, the transcript, approvals,
// the tool result's ToolCallID): the provider's id as a provider returns it, a
// session-unique id once the agent renamed it. ProviderID is the id the
// provider gave, exactly, "" when it gave none; what a model is sent back is built
// from it.
type ToolCall struct {
	ID         string
	ProviderID string
	Name       string
	Arguments  jsontext.Value // a JSON object; "{}" when the model gave none
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  jsontext.Value // JSON Schema of the arguments object
}

// Usage of one model call, in the provider's tokens (echo: whitespace-separated words).
// InputTokens counts the whole prompt, cached tokens included; CachedInputTokens is
// the part of it read from the provider's prompt cache (0 when it says nothing).
type Usage struct {
	InputTokens  int
	OutputTokens int
	// CachedInputTokens are input tokens the provider served from its prompt cache
	// (0 when it reports none).
	CachedInputTokens int
	// ContextTokens is how large the model context is after the call, when the
	// provider knows better than InputTokens+OutputTokens (echo, which counts the
	// prompt's words only on a turn's first call); 0 means that sum.
	ContextTokens int
}

// Context is the size of the model context after the call the usage is of.
func (u Usage) Context() int {
	if u.ContextTokens > 0 {
		return u.ContextTokens
	}
	return u.InputTokens + u.OutputTokens
}
