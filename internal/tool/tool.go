// Package tool holds the tools an agent may call: shell, read_file, write_file,
// list_dir and ask_user. Each runs confined to the session's workspace. The package
// decides nothing about approvals or streaming: the agent loop does.
package tool

import (
	"context"
	"encoding/json/jsontext"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
)

// Tool is one callable tool. Run must honour ctx: when it ends, Run returns promptly
// (a shell command is killed with its children).
type Tool interface {
	// Spec describes the tool to the model.
	Spec() provider.ToolSpec
	// Mutates reports whether the tool changes things (files, processes), which makes
	// it need approval under autonomy "supervised" and refused under "readonly".
	Mutates() bool
	// Run executes one call with the given JSON object arguments.
	Run(ctx context.Context, env Env, args jsontext.Value) Result
}

// Env is what a tool call may use.
type Env struct {
	Workspace string // absolute, existing directory: every path is confined to it
	Asker     Asker  // answers ask_user; may be nil (then ask_user gets "no answer")
	// CallID is the id of the call being run (the agent sets it for each call).
	CallID string
	// Progress, when set, reports a running call's progress (MCP progress
	// notifications); the session publishes it as a tool_progress update.
	Progress func(callID string, p Progress)
}

// Progress is how far a running call got.
type Progress struct {
	Progress float64
	Total    *float64 // nil: unknown
	Message  string
}

// Asker asks the user a question through an attached client (elicitation/create).
// ok is false when nobody answered: no capable client, decline, cancel or timeout.
// err is set when the client that answered reported a failure instead (an error
// object): the tool then fails.
type Asker interface {
	Ask(ctx context.Context, question string, choices []string) (answer string, ok bool, err error)
}

// Result is a tool's output as the model and the client see it.
type Result struct {
	Output    string
	IsError   bool
	Truncated bool // Output was cut to the tool's cap, and says so at its end
}
