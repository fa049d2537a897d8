package tool

import (
	"context"
	"encoding/json/jsontext"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// Statuses and priorities of a plan entry (docs/protocol.md, "Tools"; ACP's PlanEntry).
const (
	PlanPending    = "pending"
	PlanInProgress = "in_progress"
	PlanCompleted  = "completed"
)

// Limits of update_plan, so that a plan stays something a client can show.
const (
	MaxPlanEntries      = 100
	MaxPlanEntryContent = 2000 // bytes
)

// PlanEntry is one task of a plan. Priority is "high", "medium", "low" or empty
// (package protocol's).
type PlanEntry = protocol.PlanEntry

// Planner publishes the plan of an update_plan call: the whole plan, each time.
type Planner interface {
	Plan(entries []PlanEntry)
}

// UpdatePlan is the update_plan tool: the model shows its plan for the task, and
// keeps it current, for the user to follow. It changes nothing.
type UpdatePlan struct{}

func (UpdatePlan) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: NameUpdatePlan,
		Description: "Show the user your plan for the task as a list of steps, each pending, in_progress or " +
			"completed. Send the whole plan each time (it replaces the previous one) and update it as you " +
			"make progress; keep at most one step in_progress.",
		Parameters: jsontext.Value(`{
  "type": "object",
  "properties": {
    "entries": {
      "type": "array",
      "description": "The steps of the plan, in order.",
      "items": {
        "type": "object",
        "properties": {
          "content": {"type": "string", "description": "What the step does."},
          "status": {"type": "string", "enum": ["pending", "in_progress", "completed"], "description": "Where the step stands."},
          "priority": {"type": "string", "enum": ["high", "medium", "low"], "description": "How much the step matters. Default medium."}
        },
        "required": ["content", "status"]
      }
    }
  },
  "required": ["entries"]
}`),
	}
}

func (UpdatePlan) Mutates() bool { return false }

func (UpdatePlan) Run(ctx context.Context, env Env, args jsontext.Value) Result {
	var a struct {
		Entries *[]PlanEntry `json:"entries"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return failure("%v", err)
	}
	if a.Entries == nil {
		return failure("invalid arguments: entries is required")
	}
	entries := *a.Entries
	if len(entries) > MaxPlanEntries {
		return failure("invalid arguments: the plan has %d entries; at most %d are allowed", len(entries), MaxPlanEntries)
	}
	counts := map[string]int{}
	for i, e := range entries {
		switch {
		case strings.TrimSpace(e.Content) == "":
			return failure("invalid arguments: entries[%d].content is empty", i)
		case len(e.Content) > MaxPlanEntryContent:
			return failure("invalid arguments: entries[%d].content has %d bytes; at most %d are allowed", i, len(e.Content), MaxPlanEntryContent)
		case !utf8.ValidString(e.Content):
			return failure("invalid arguments: entries[%d].content is not valid UTF-8", i)
		}
		switch e.Status {
		case PlanPending, PlanInProgress, PlanCompleted:
		default:
			return failure("invalid arguments: entries[%d].status is %q; it must be pending, in_progress or completed", i, e.Status)
		}
		switch e.Priority {
		case "", "high", "medium", "low":
		default:
			return failure("invalid arguments: entries[%d].priority is %q; it must be high, medium or low", i, e.Priority)
		}
		counts[e.Status]++
	}
	if err := ctx.Err(); err != nil {
		return failure("cancelled")
	}
	if env.Planner != nil {
		env.Planner.Plan(append([]PlanEntry{}, entries...))
	}
	return Result{Output: fmt.Sprintf("plan updated: %d steps (%d completed, %d in progress, %d pending)",
		len(entries), counts[PlanCompleted], counts[PlanInProgress], counts[PlanPending])}
}
