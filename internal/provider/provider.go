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
	"errors"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// The model vocabulary is internal/llm's; these names stay for the adapters.
type (
	Role     = llm.Role
	Message  = llm.Message
	ToolCall = llm.ToolCall
	ToolSpec = llm.ToolSpec
	Usage    = llm.Usage
)

// Roles of a message (internal/llm).
const (
	RoleUser      = llm.RoleUser
	RoleAssistant = llm.RoleAssistant
	RoleTool      = llm.RoleTool
)

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
