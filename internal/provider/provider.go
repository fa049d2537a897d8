// Package provider talks to language models. A Provider runs one model call: it
// streams text and thought deltas as they arrive and returns the complete assistant
// message, with its tool calls reassembled, and the call's usage. Kinds: echo (no
// network, deterministic, the default), openai (any OpenAI-compatible chat
// completions endpoint) and anthropic (the Messages API).
//
// The package knows nothing of sessions, JSON-RPC or tools' behaviour: the agent
// loop (internal/agent) decides what to do with a result.
package provider

import (
	"context"
	"encoding/json/jsontext"
	"errors"
)

// Role of a message in the model context.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // a tool result
)

// Message is one entry of the model context. System prompts are not messages: they
// travel in Request.System, so a retained context never contains them.
type Message struct {
	Role Role
	Text string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID, Name and IsError describe a tool result (RoleTool).
	ToolCallID string
	Name       string
	IsError    bool
	// Steered marks a user message that joined a running turn (session/steer):
	// after tool results, it is no sign that the turn stopped.
	Steered bool
}

// ToolCall is one complete call the model asked for.
//
// ID is what the call is known by in the daemon (updates, the transcript, approvals,
// the tool result's ToolCallID): the provider's id as a provider returns it, a
// session-unique id once the agent renamed it (SPEC §18). ProviderID is the id the
// provider gave, exactly, "" when it gave none; what a model is sent back is built
// from it (wireIDs, SPEC §23).
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

// Request is one model call.
type Request struct {
	Model     string
	System    string
	Messages  []Message // oldest first; the last user message is the turn's prompt
	Tools     []ToolSpec
	MaxTokens int // 0 means the provider's default
}

// Delta is a piece of streamed output.
type Delta struct {
	Thought bool // hidden reasoning (agent_thought_chunk), else visible text (agent_message_chunk)
	Text    string
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

// Result is the outcome of one model call.
type Result struct {
	Text      string     // the visible text, the concatenation of the non-thought deltas
	ToolCalls []ToolCall // complete calls, in the order the model made them
	Usage     Usage
}

// Provider runs model calls. Stream calls emit for each delta, in order, from the
// calling goroutine, and returns when the model's answer is complete, ctx ends, or
// the call fails. Implementations are safe for concurrent use.
type Provider interface {
	Stream(ctx context.Context, req Request, emit func(Delta)) (Result, error)
}

// Error is a failed model call described for the user: what happened and, where
// known, what to do about it. Status is the HTTP status (0 when none).
type Error struct {
	Provider string // the provider's configured name
	Status   int
	Message  string
	Err      error

	// connection marks a failure to reach the server or a stream cut off: worth
	// another attempt when nothing was streamed yet.
	connection bool
}

func (e *Error) Error() string { return e.Provider + ": " + e.Message }
func (e *Error) Unwrap() error { return e.Err }

// ErrUnknownKind is returned by New for a kind it does not know.
var ErrUnknownKind = errors.New("unknown provider kind")
