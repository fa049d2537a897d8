package agent

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// step is one scripted model call: it streams deltas, then answers with calls (or
// fails with err). cancel, if set, cancels the turn after the deltas.
type step struct {
	deltas []provider.Delta
	calls  []string // tool names; ids are c<step>_<n>
	err    error
	cancel bool
}

// scripted is a Provider that plays steps in order; past the end it fails the test.
type scripted struct {
	t      *testing.T
	steps  []step
	cancel context.CancelFunc
	seen   []provider.Request
}

func (s *scripted) Stream(ctx context.Context, req provider.Request, emit func(provider.Delta)) (provider.Result, error) {
	n := len(s.seen)
	s.seen = append(s.seen, req)
	if n >= len(s.steps) {
		s.t.Fatalf("model call %d: the script has %d", n+1, len(s.steps))
	}
	st := s.steps[n]
	var res provider.Result
	for _, d := range st.deltas {
		emit(d)
		if !d.Thought {
			res.Text += d.Text
		}
	}
	if st.cancel {
		s.cancel()
		return provider.Result{}, ctx.Err()
	}
	if st.err != nil {
		return provider.Result{}, st.err
	}
	for i, name := range st.calls {
		id := fmt.Sprintf("c%d_%d", n+1, i+1)
		res.ToolCalls = append(res.ToolCalls, llm.ToolCall{ID: id, ProviderID: id, Name: name, Arguments: jsontext.Value(`{}`)})
	}
	res.Usage = llm.Usage{InputTokens: 1, OutputTokens: 1}
	return res, nil
}

// fakeTool records its runs; with cancel set, running it cancels the turn.
type fakeTool struct {
	name    string
	mutates bool
	runs    *[]string
	cancel  context.CancelFunc
}

func (f fakeTool) Spec() llm.ToolSpec { return llm.ToolSpec{Name: f.name} }
func (f fakeTool) Mutates() bool      { return f.mutates }
func (f fakeTool) Run(ctx context.Context, _ tool.Env, _ jsontext.Value) tool.Result {
	*f.runs = append(*f.runs, f.name)
	if f.cancel != nil {
		f.cancel()
		return tool.Result{Output: "killed", IsError: true}
	}
	return tool.Result{Output: f.name + " ran"}
}

// recorded is what the hooks saw.
type recorded struct {
	approve  bool
	deltas   []provider.Delta
	calls    []string // ids announced
	results  []string // "id=output"
	messages []llm.Message
	asked    []string
}

func (r *recorded) Delta(d provider.Delta)  { r.deltas = append(r.deltas, d) }
func (r *recorded) ToolCall(c llm.ToolCall) { r.calls = append(r.calls, c.ID) }
func (r *recorded) Message(m llm.Message)   { r.messages = append(r.messages, m) }
func (r *recorded) ToolResult(c llm.ToolCall, res tool.Result) {
	r.results = append(r.results, c.ID+"="+res.Output)
}
func (r *recorded) Approve(_ context.Context, c llm.ToolCall) (bool, string) {
	r.asked = append(r.asked, c.Name)
	return r.approve, "rejected by the user"
}

// chunks is the text of the visible deltas, each in brackets.
func (r *recorded) chunks() string {
	var b strings.Builder
	for _, d := range r.deltas {
		if !d.Thought {
			b.WriteString("[" + d.Text + "]")
		}
	}
	return b.String()
}

func text(s ...string) []provider.Delta {
	var out []provider.Delta
	for _, t := range s {
		out = append(out, provider.Delta{Text: t})
	}
	return out
}

func thought(s string) provider.Delta { return provider.Delta{Thought: true, Text: s} }

var errBoom = &provider.Error{Provider: "p", Status: 500, Message: "the provider failed (HTTP 500); try again"}

func TestTurns(t *testing.T) {
	for _, tt := range []struct {
		name     string
		steps    []step
		autonomy string
		approve  bool
		maxSteps int
		cancelIn string // a tool that cancels the turn when it runs

		stop    string
		text    string // the result's text
		chunks  string // the visible pieces streamed, each in brackets
		runs    string // the tools that ran
		asked   string // the tools approval was asked for
		results string // the results reported, in order
	}{
		{name: "one answer", steps: []step{{deltas: text("Hello ", "there")}},
			stop: EndTurn, text: "Hello there", chunks: "[Hello ][there]"},
		{name: "text before a tool call is kept, with a blank line before the next call's text",
			steps: []step{{deltas: text("Let me look."), calls: []string{"look"}}, {deltas: text("Found ", "it.")}},
			stop:  EndTurn, text: "Let me look.\n\nFound it.", chunks: "[Let me look.][\n\n][Found ][it.]",
			runs: "look", results: "c1_1=look ran"},
		{name: "no separator when the earlier calls said nothing visible",
			steps: []step{{deltas: []provider.Delta{thought("hmm")}, calls: []string{"look"}}, {calls: []string{"look"}}, {deltas: text("Done.")}},
			stop:  EndTurn, text: "Done.", chunks: "[Done.]", runs: "look look", results: "c1_1=look ran c2_1=look ran"},
		{name: "one separator for each call that follows visible text, none for a silent one",
			steps: []step{{deltas: text("A."), calls: []string{"look"}}, {calls: []string{"look"}}, {deltas: text("B."), calls: []string{"look"}}, {deltas: text("C.")}},
			stop:  EndTurn, text: "A.\n\nB.\n\nC.", chunks: "[A.][\n\n][B.][\n\n][C.]", runs: "look look look",
			results: "c1_1=look ran c2_1=look ran c3_1=look ran"},
		{name: "the step limit stops the turn after its tools ran; the text is what streamed",
			steps: []step{{deltas: text("One."), calls: []string{"look"}}, {deltas: text("Two."), calls: []string{"look"}}}, maxSteps: 2,
			stop: MaxSteps, text: "One.\n\nTwo.", chunks: "[One.][\n\n][Two.]", runs: "look look", results: "c1_1=look ran c2_1=look ran"},
		{name: "a cancel between tool calls: every announced call still gets a result",
			steps:    []step{{deltas: text("Working."), calls: []string{"stopper", "look", "look"}}},
			cancelIn: "stopper", autonomy: config.Full,
			stop: Cancelled, text: "Working.", chunks: "[Working.]", runs: "stopper",
			results: "c1_1=cancelled c1_2=cancelled c1_3=cancelled"},
		{name: "a cancel while the model streams keeps what streamed as the text",
			steps: []step{{deltas: text("Let me look."), calls: []string{"look"}}, {deltas: text("Fou"), cancel: true}},
			stop:  Cancelled, text: "Let me look.\n\nFou", chunks: "[Let me look.][\n\n][Fou]", runs: "look", results: "c1_1=look ran"},
		{name: "read-only refuses a tool that changes things, without asking",
			steps:    []step{{calls: []string{"write", "look"}}, {deltas: text("ok")}},
			autonomy: config.ReadOnly,
			stop:     EndTurn, text: "ok", chunks: "[ok]", runs: "look",
			results: "c1_1=refused: write changes things and this agent is read-only c1_2=look ran"},
		{name: "supervised asks before a tool that changes things, and a rejection is a result",
			steps: []step{{calls: []string{"write", "look"}}, {deltas: text("ok")}},
			stop:  EndTurn, text: "ok", chunks: "[ok]", runs: "look", asked: "write",
			results: "c1_1=not approved: rejected by the user c1_2=look ran"},
		{name: "supervised runs an approved tool",
			steps: []step{{calls: []string{"write"}}, {deltas: text("ok")}}, approve: true,
			stop: EndTurn, text: "ok", chunks: "[ok]", runs: "write", asked: "write", results: "c1_1=write ran"},
		{name: "full autonomy runs it without asking",
			steps: []step{{calls: []string{"write"}}, {deltas: text("ok")}}, autonomy: config.Full,
			stop: EndTurn, text: "ok", chunks: "[ok]", runs: "write", results: "c1_1=write ran"},
		{name: "an unknown tool gets an error result",
			steps: []step{{calls: []string{"nope"}}, {deltas: text("ok")}},
			stop:  EndTurn, text: "ok", chunks: "[ok]", results: `c1_1=unknown tool "nope"`},
		{name: "a provider error says why",
			steps: []step{{deltas: text("Let me look."), calls: []string{"look"}}, {err: errBoom}},
			stop:  Error, text: errBoom.Error(), chunks: "[Let me look.]", runs: "look", results: "c1_1=look ran"},
		{name: "any other error says so too",
			steps: []step{{err: errors.New("no route")}},
			stop:  Error, text: "model call failed: no route"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := &scripted{t: t, steps: tt.steps, cancel: cancel}
			var runs []string
			tools := map[string]tool.Tool{
				"look":    fakeTool{name: "look", runs: &runs},
				"write":   fakeTool{name: "write", mutates: true, runs: &runs},
				"stopper": fakeTool{name: "stopper", runs: &runs, cancel: cancel},
			}
			h := &recorded{approve: tt.approve}
			maxSteps := tt.maxSteps
			if maxSteps == 0 {
				maxSteps = 25
			}
			out := Run(ctx, Turn{Provider: p, Tools: tools, Autonomy: tt.autonomy, MaxSteps: maxSteps,
				Context: []llm.Message{{Role: llm.RoleUser, Text: "before"}, {Role: llm.RoleAssistant, Text: "earlier"}},
				Prompt:  "now", Hooks: h})

			if out.StopReason != tt.stop || out.Text != tt.text {
				t.Errorf("stop %s text %q, want %s %q", out.StopReason, out.Text, tt.stop, tt.text)
			}
			if got := h.chunks(); got != tt.chunks {
				t.Errorf("streamed %s, want %s", got, tt.chunks)
			}
			if out.StopReason != Error {
				// docs/protocol.md, "session/prompt": the result's text is exactly
				// what streamed.
				var all strings.Builder
				for _, d := range h.deltas {
					if !d.Thought {
						all.WriteString(d.Text)
					}
				}
				if all.String() != out.Text {
					t.Errorf("the pieces %q do not make the text %q", all.String(), out.Text)
				}
			}
			if got := strings.Join(runs, " "); got != tt.runs {
				t.Errorf("ran %q, want %q", got, tt.runs)
			}
			if got := strings.Join(h.asked, " "); got != tt.asked {
				t.Errorf("asked for %q, want %q", got, tt.asked)
			}
			if got := strings.Join(h.results, " "); got != tt.results {
				t.Errorf("results %q, want %q", got, tt.results)
			}
			checkEveryCallAnswered(t, h, out)
			if len(p.seen) != len(tt.steps) {
				t.Errorf("%d model calls, want %d", len(p.seen), len(tt.steps))
			}
		})
	}
}

// checkEveryCallAnswered checks that every announced call got exactly one result,
// in the order announced, and that the model context says the same: the prompt
// after the earlier context, each assistant message followed by a result for each
// of its calls, and every message the hooks were given.
func checkEveryCallAnswered(t *testing.T, h *recorded, out Outcome) {
	t.Helper()
	var answered []string
	for _, r := range h.results {
		id, _, _ := strings.Cut(r, "=")
		answered = append(answered, id)
	}
	if !reflect.DeepEqual(answered, h.calls) {
		t.Errorf("announced %v, answered %v", h.calls, answered)
	}
	if len(out.Context) < 3 || out.Context[2].Role != llm.RoleUser || out.Context[2].Text != "now" {
		t.Fatalf("context %v does not continue with the prompt", out.Context)
	}
	if !reflect.DeepEqual(out.Context[2:], h.messages) {
		t.Errorf("the hooks recorded %v, the context holds %v", h.messages, out.Context[2:])
	}
	var pending []string
	for _, m := range out.Context[2:] {
		switch m.Role {
		case llm.RoleTool:
			if len(pending) == 0 || pending[0] != m.ToolCallID {
				t.Errorf("result %s where %v are due", m.ToolCallID, pending)
				continue
			}
			pending = pending[1:]
		default:
			if len(pending) > 0 {
				t.Errorf("%s message before the results of %v", m.Role, pending)
			}
			for _, c := range m.ToolCalls {
				pending = append(pending, c.ID)
			}
		}
	}
	if len(pending) > 0 {
		t.Errorf("calls %v have no result in the context", pending)
	}
}

func TestEveryModelCallSeesTheWholeContextSoFar(t *testing.T) {
	var runs []string
	p := &scripted{t: t, steps: []step{{deltas: text("Let me look."), calls: []string{"look"}}, {deltas: text("Found it.")}}}
	out := Run(context.Background(), Turn{Provider: p, Model: "m", System: "be brief", MaxSteps: 5,
		Tools:   map[string]tool.Tool{"look": fakeTool{name: "look", runs: &runs}},
		Context: []llm.Message{{Role: llm.RoleUser, Text: "before"}}, Prompt: "now", Hooks: &recorded{}})
	if out.StopReason != EndTurn || len(p.seen) != 2 {
		t.Fatalf("%s after %d calls", out.StopReason, len(p.seen))
	}
	second := p.seen[1]
	if second.Model != "m" || second.System != "be brief" || len(second.Tools) != 1 || second.Tools[0].Name != "look" {
		t.Errorf("request %+v", second)
	}
	var roles []string
	for _, m := range second.Messages {
		roles = append(roles, string(m.Role)+":"+m.Text)
	}
	// The assistant message keeps its own text: the "\n\n" is for the client only.
	if got := strings.Join(roles, " | "); got != "user:before | user:now | assistant:Let me look. | tool:look ran" {
		t.Errorf("the second call was given %s", got)
	}
	if out.Usage != (llm.Usage{InputTokens: 2, OutputTokens: 2, ContextTokens: 2}) {
		t.Errorf("usage %+v, want the sum of both calls", out.Usage)
	}
}

// docs/protocol.md, "Remote providers": a turn cancelled after visible output keeps
// what streamed of the cancelled call as the assistant's message, recorded like any
// other; thoughts alone leave none.
func TestACancelAfterOutputKeepsItAsTheAssistantsMessage(t *testing.T) {
	for _, tt := range []struct {
		name   string
		deltas []provider.Delta
		want   string // the last message of the context: role and text
	}{
		{"visible text", []provider.Delta{thought("hm"), {Text: "Part"}, {Text: "ial"}}, "assistant Partial"},
		{"thoughts only", []provider.Delta{thought("hm")}, "user now"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := &scripted{t: t, steps: []step{{deltas: tt.deltas, cancel: true}}, cancel: cancel}
			h := &recorded{}
			out := Run(ctx, Turn{Provider: p, MaxSteps: 5, Prompt: "now", Hooks: h})
			last := out.Context[len(out.Context)-1]
			if out.StopReason != Cancelled || fmt.Sprint(last.Role, " ", last.Text) != tt.want {
				t.Fatalf("stop %s, last message %+v, want %s", out.StopReason, last, tt.want)
			}
			if len(h.messages) != len(out.Context) {
				t.Errorf("the hooks recorded %d messages of %d", len(h.messages), len(out.Context))
			}
		})
	}
}

// CallID renames a call for the session from the provider's id, which stays beside
// the new one.
func TestCallIDKeepsTheProvidersID(t *testing.T) {
	p := &scripted{t: t, steps: []step{{calls: []string{"look"}}, {deltas: text("ok")}}}
	var got []string
	out := Run(context.Background(), Turn{Provider: p, MaxSteps: 5, Prompt: "now", Hooks: &recorded{},
		Tools:  map[string]tool.Tool{"look": fakeTool{name: "look", runs: new([]string)}},
		CallID: func(id string) string { got = append(got, id); return "tc_x_1" }})
	c := out.Context[1].ToolCalls[0]
	if c.ID != "tc_x_1" || c.ProviderID != "c1_1" || fmt.Sprint(got) != "[c1_1]" || out.Context[2].ToolCallID != "tc_x_1" {
		t.Errorf("call %+v, CallID given %v, result for %q", c, got, out.Context[2].ToolCallID)
	}
}

func TestControlsApplyFromTheNextModelCallAndUsedHearsEachCall(t *testing.T) {
	var runs []string
	p := &scripted{t: t, steps: []step{{deltas: text("Let me look."), calls: []string{"look"}}, {deltas: text("Found it.")}}}
	models := []string{"m1", "m2"}
	var used []llm.Usage
	calls := 0
	out := Run(context.Background(), Turn{Provider: p, Model: "m", MaxSteps: 5, Autonomy: "full",
		Tools: map[string]tool.Tool{"look": fakeTool{name: "look", runs: &runs}}, Prompt: "now", Hooks: &recorded{},
		Controls: func() (string, string) { calls++; return models[calls-1], "full" },
		Used:     func(u llm.Usage) { used = append(used, u) }})
	if out.StopReason != EndTurn || len(p.seen) != 2 {
		t.Fatalf("%s after %d calls", out.StopReason, len(p.seen))
	}
	if p.seen[0].Model != "m1" || p.seen[1].Model != "m2" {
		t.Errorf("models %q, %q; want m1 then m2", p.seen[0].Model, p.seen[1].Model)
	}
	if len(used) != 2 {
		t.Errorf("Used heard %d calls, want 2", len(used))
	}
}
