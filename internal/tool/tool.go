// Package tool holds the tools an agent may call: shell, read_file, write_file,
// edit_file, list_dir, search, glob, ask_user and update_plan. Each runs confined to
// the session's workspace. The package decides nothing about approvals or streaming:
// the agent loop does.
package tool

import (
	"context"
	"encoding/json/jsontext"
	"unicode/utf8"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// Tool is one callable tool. Run must honour ctx: when it ends, Run returns promptly
// (a shell command is killed with its children).
type Tool interface {
	// Spec describes the tool to the model.
	Spec() llm.ToolSpec
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
	// Planner receives the plans of update_plan; may be nil (then the plan reaches
	// only the model's own context).
	Planner Planner
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
	// Diff is the file a write_file or edit_file changed, before and after, for the
	// clients to review; nil for other tools, on failure, and past MaxDiffBytes. The
	// model does not see it.
	Diff *Diff
}

// Diff is a changed file as a whole, before and after (docs/protocol.md, "Tools"):
// package protocol's.
type Diff = protocol.Diff

// MaxDiffBytes bounds each side of a Diff: a bigger file gets none.
const MaxDiffBytes = 256 << 10

// newDiff is the Diff of path (absolute), or nil when a side is over MaxDiffBytes
// or not valid UTF-8 (which a JSON string cannot carry unchanged).
func newDiff(path string, oldText *string, newText string) *Diff {
	if len(newText) > MaxDiffBytes || !utf8.ValidString(newText) {
		return nil
	}
	if oldText != nil && (len(*oldText) > MaxDiffBytes || !utf8.ValidString(*oldText)) {
		return nil
	}
	return &Diff{Path: path, OldText: oldText, NewText: newText}
}

// Location is a place in a file a call reads or changes: an absolute path and,
// when known, a 1-based line (package protocol's).
type Location = protocol.Location

// Locator is implemented by the file tools: the places a call with these
// arguments touches, told before it runs (an editor follows along). It returns an
// empty, non-nil list when the arguments name no place inside the workspace.
type Locator interface {
	Locations(env Env, args jsontext.Value) []Location
}
