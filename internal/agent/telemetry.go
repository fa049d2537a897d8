package agent

import (
	"context"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// Telemetry observes turns for metrics and traces (docs/protocol.md, "Metrics and
// traces"): internal/metrics implements it, and the session layer starts one turn
// with it per prompt. Its methods are called from the turn's goroutine and must
// never block, nor keep a prompt or an output.
type Telemetry interface {
	// StartTurn begins the turn of agent (an alias) on provider (a [providers]
	// name) and model; the returned ctx carries the turn's span.
	StartTurn(ctx context.Context, agent, provider, model string) (context.Context, TurnObserver)
}

// TurnObserver watches one turn: Run reports its model and tool calls, and the
// session its end.
type TurnObserver interface {
	// ModelCall begins a model call of model; the returned ctx carries its span.
	ModelCall(ctx context.Context, model string) (context.Context, ModelCallObserver)
	// ToolCall begins a run of tool ("" when the model named no known tool).
	ToolCall(ctx context.Context, tool string) (context.Context, ToolCallObserver)
	// End ends the turn with its stop reason and usage, once, when it has ended.
	End(stopReason string, u llm.Usage)
}

// ModelCallObserver watches one model call.
type ModelCallObserver interface {
	// FirstToken is called at the call's first streamed output.
	FirstToken()
	// End ends the call with its usage and error (nil: it succeeded).
	End(u llm.Usage, err error)
}

// ToolCallObserver watches one tool call.
type ToolCallObserver interface {
	// End ends the call: isError is its result's.
	End(isError bool)
}
