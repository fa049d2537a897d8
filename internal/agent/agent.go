// Package agent runs turns: the loop of one prompt, from the first model call through
// tool calls and approvals to the model's last word, the step limit, or a cancel.
// It owns no state between turns and knows nothing of sessions or JSON-RPC: the
// caller hands it the context so far and hooks that stream, approve and record.
package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// Stop reasons of a turn.
const (
	EndTurn   = "end_turn"
	Cancelled = "cancelled"
	MaxSteps  = "max_steps"
	Error     = "error"
)

// Hooks are how a turn reaches the outside world. Run calls them from its own
// goroutine, in the order things happen.
type Hooks interface {
	// Delta streams a piece of model output.
	Delta(d provider.Delta)
	// ToolCall announces a call the model made, before it runs.
	ToolCall(call llm.ToolCall)
	// ToolResult reports a call's result.
	ToolResult(call llm.ToolCall, r tool.Result)
	// Approve asks whether call may run. It blocks until a decision, its own timeout,
	// or ctx ends; reason says why when it returns false.
	Approve(ctx context.Context, call llm.ToolCall) (ok bool, reason string)
	// Message records a message as it joins the model context.
	Message(m llm.Message)
}

// Turn is everything one turn needs.
type Turn struct {
	Provider provider.Provider
	Model    string
	System   string
	Tools    map[string]tool.Tool
	Autonomy string // config.Supervised, config.Full or config.ReadOnly
	MaxSteps int    // model calls at most
	Env      tool.Env
	Context  []llm.Message // the model context before this turn; not modified
	Prompt   string
	Hooks    Hooks
	// ToolSet, when set, gives the tools before each model call instead of Tools
	// (an MCP server's list may change during a turn).
	ToolSet func() map[string]tool.Tool
	// Lookup, when set, finds a tool the model called that the set lacks (one of an
	// MCP server that has not listed its tools), or returns nil.
	Lookup func(name string) tool.Tool
	// CallID, when set, renames each tool call the model makes before anything sees
	// it: providers' ids are unique only within one model call or turn. The
	// provider's own id stays beside it (ToolCall.ProviderID): the model is sent
	// that one back (docs/protocol.md, "Remote providers").
	CallID func(providerID string) string
	// Controls, when set, is asked before every model call for the model and the
	// autonomy to use from that call on (session/set applies from the next model
	// call, docs/protocol.md, "Session controls"); else Model and Autonomy hold for
	// the whole turn.
	Controls func() (model, autonomy string)
	// Used, when set, is told each model call's usage as the call ends.
	Used func(u llm.Usage)
	// Observer, when set, is told of each model and tool call (metrics and
	// traces, telemetry.go).
	Observer TurnObserver
	// Steer, when set, is asked before every model call, and when the model answers
	// without tool calls, for the user messages that joined the turn meanwhile
	// (docs/protocol.md, "Steering"), already recorded by the caller: they join the
	// context in order before the next model call, and a turn the model would have
	// ended goes on to answer them. Hooks.Message is not called for them. ctx is
	// the turn's: once it ended, no steer joins it.
	Steer func(ctx context.Context) []llm.Message
	// Compact, when set, is given the context before every model call and returns
	// the one to send: the same, or a compacted one (docs/protocol.md, "Automatic
	// compaction"). It must keep the messages of the turn's last user message on.
	Compact func(ctx context.Context, msgs []llm.Message) []llm.Message
	// Recall, when set, is called once, before the first model call, for a block
	// to put in front of the prompt in every provider request of the turn, and
	// nowhere else: Hooks.Message and Outcome.Context carry the prompt as it is,
	// so the block never becomes history (docs/protocol.md, "Memory").
	Recall func(ctx context.Context) string
}

// Outcome is how a turn ended.
type Outcome struct {
	StopReason string
	// Text is what the turn streamed as visible text (every piece Hooks.Delta got,
	// the "\n\n" separators included), or why the turn failed (StopReason Error).
	Text    string
	Usage   llm.Usage
	Context []llm.Message // the model context after the turn
}

// Run runs the turn until the model stops, the step limit, ctx ends (cancelled), or
// the provider fails.
//
// The turn's text is everything it streams as visible text (docs/protocol.md,
// "session/prompt"): when a model call's text follows visible text of an earlier call
// of the turn, one "\n\n" piece goes between them, so text before a tool call is
// neither lost nor glued onto the next answer.
func Run(ctx context.Context, t Turn) Outcome {
	msgs := append(make([]llm.Message, 0, len(t.Context)+8), t.Context...)
	add := func(m llm.Message) {
		msgs = append(msgs, m)
		t.Hooks.Message(m)
	}
	add(llm.Message{Role: llm.RoleUser, Text: t.Prompt})
	promptAt := len(msgs) - 1
	var recalled string
	if t.Recall != nil {
		recalled = t.Recall(ctx)
	}
	var usage llm.Usage
	var said strings.Builder // the turn's visible text so far
	out := func(reason string) Outcome {
		return Outcome{StopReason: reason, Text: said.String(), Usage: usage, Context: msgs}
	}

	for step := 0; ; step++ {
		if step == t.MaxSteps {
			return out(MaxSteps)
		}
		if t.Steer != nil {
			msgs = append(msgs, t.Steer(ctx)...)
		}
		if t.Compact != nil {
			msgs, promptAt = compacted(msgs, t.Compact(ctx, msgs), promptAt)
		}
		if t.Controls != nil {
			t.Model, t.Autonomy = t.Controls()
		}
		tools := t.Tools
		if t.ToolSet != nil {
			tools = t.ToolSet()
		}
		specs := specsOf(tools)
		separate := said.Len() > 0
		// This call's visible text so far is said from shownFrom on (-1: none yet):
		// a reply is kept once, however long it streams.
		shownFrom := -1
		sent := msgs
		if recalled != "" {
			sent = slices.Clone(msgs)
			sent[promptAt].Text = recalled + sent[promptAt].Text
		}
		callCtx, obs := t.observeModelCall(ctx)
		first := obs != nil
		res, err := t.Provider.Stream(callCtx, provider.Request{
			Model: t.Model, System: t.System, Messages: sent, Tools: specs,
		}, func(d provider.Delta) {
			if first {
				first = false
				obs.FirstToken()
			}
			if !d.Thought && d.Text != "" {
				if separate {
					separate = false
					said.WriteString(paragraph)
					t.Hooks.Delta(provider.Delta{Text: paragraph})
				}
				if shownFrom < 0 {
					shownFrom = said.Len()
				}
				said.WriteString(d.Text)
			}
			t.Hooks.Delta(d)
		})
		if obs != nil {
			obs.End(res.Usage, err)
		}
		usage.InputTokens += res.Usage.InputTokens
		usage.OutputTokens += res.Usage.OutputTokens
		usage.CachedInputTokens += res.Usage.CachedInputTokens
		usage.ContextTokens = res.Usage.Context() // the last call's: the context as it now is
		if t.Used != nil && err == nil {
			t.Used(res.Usage)
		}
		if ctx.Err() != nil {
			// What the user saw of the answer stays the assistant's message
			// (docs/protocol.md, "Remote providers"),
			// so the next prompt follows it rather than merging into this one.
			if shownFrom >= 0 {
				add(llm.Message{Role: llm.RoleAssistant, Text: said.String()[shownFrom:]})
			}
			return out(Cancelled)
		}
		if err != nil {
			o := out(Error)
			o.Text = describe(err)
			return o
		}
		if t.CallID != nil {
			for i := range res.ToolCalls {
				res.ToolCalls[i].ID = t.CallID(res.ToolCalls[i].ProviderID)
			}
		}
		add(llm.Message{Role: llm.RoleAssistant, Text: res.Text, ToolCalls: res.ToolCalls})
		if len(res.ToolCalls) == 0 {
			if t.Steer != nil {
				if joined := t.Steer(ctx); len(joined) > 0 {
					msgs = append(msgs, joined...)
					continue
				}
			}
			return out(EndTurn)
		}
		for _, call := range res.ToolCalls {
			t.Hooks.ToolCall(call)
		}
		for i, call := range res.ToolCalls {
			r := t.call(ctx, call, tools)
			if ctx.Err() != nil {
				// Every announced call gets a result, so the context stays well formed.
				for _, c := range res.ToolCalls[i:] {
					t.result(c, tool.Result{Output: "cancelled", IsError: true}, add)
				}
				return out(Cancelled)
			}
			t.result(call, r, add)
		}
	}
}

// paragraph separates the visible text of two model calls of one turn.
const paragraph = "\n\n"

func (t Turn) result(call llm.ToolCall, r tool.Result, add func(llm.Message)) {
	t.Hooks.ToolResult(call, r)
	add(llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Name: call.Name, Text: r.Output, IsError: r.IsError})
}

// call runs one tool call after the autonomy check and, where needed, approval.
func (t Turn) call(ctx context.Context, call llm.ToolCall, tools map[string]tool.Tool) tool.Result {
	tl, ok := tools[call.Name]
	if !ok && t.Lookup != nil {
		if tl = t.Lookup(call.Name); tl != nil {
			ok = true
		}
	}
	if !ok {
		if t.Observer != nil {
			_, obs := t.Observer.ToolCall(ctx, "")
			obs.End(true)
		}
		return tool.Result{Output: fmt.Sprintf("unknown tool %q", call.Name), IsError: true}
	}
	if tl.Mutates() {
		switch t.Autonomy {
		case config.ReadOnly:
			return tool.Result{Output: fmt.Sprintf("refused: %s changes things and this agent is read-only", call.Name), IsError: true}
		case config.Full:
		default:
			if ok, reason := t.Hooks.Approve(ctx, call); !ok {
				return tool.Result{Output: "not approved: " + reason, IsError: true}
			}
		}
	}
	env := t.Env
	env.CallID = call.ID
	if t.Observer == nil {
		return tl.Run(ctx, env, call.Arguments)
	}
	ctx, obs := t.Observer.ToolCall(ctx, call.Name)
	r := tl.Run(ctx, env, call.Arguments)
	obs.End(r.IsError)
	return r
}

// observeModelCall begins the Observer's watch of a model call, if there is one.
func (t Turn) observeModelCall(ctx context.Context) (context.Context, ModelCallObserver) {
	if t.Observer == nil {
		return ctx, nil
	}
	return t.Observer.ModelCall(ctx, t.Model)
}

func specsOf(tools map[string]tool.Tool) []llm.ToolSpec {
	specs := make([]llm.ToolSpec, 0, len(tools))
	for _, tl := range tools {
		specs = append(specs, tl.Spec())
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs
}

func describe(err error) string {
	var pe *provider.Error
	if errors.As(err, &pe) {
		return pe.Error()
	}
	return "model call failed: " + err.Error()
}

// compacted is the prompt's index in next, the context Turn.Compact returned for
// msgs: a compaction keeps the messages from the last user message of msgs on, as
// the tail of next, after its summary. A prompt summarised away (steered messages
// followed it) leaves its place, in front of which the recalled memories go, to
// the first message kept: the last user message.
func compacted(msgs, next []llm.Message, promptAt int) ([]llm.Message, int) {
	if len(next) == len(msgs) && (len(next) == 0 || &next[0] == &msgs[0]) {
		return next, promptAt // not compacted
	}
	keep := len(msgs) - 1
	for keep > 0 && msgs[keep].Role != llm.RoleUser {
		keep--
	}
	shift := len(next) - len(msgs)
	return next, max(promptAt, keep) + shift
}
