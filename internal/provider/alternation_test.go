package provider_test

import (
	"context"
	"encoding/json/jsontext"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/agent"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeanthropic"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// The context builder, tested through what the fake servers receive: every way a
// turn can end, followed by a new prompt, gives a request that strictly alternates
// (docs/protocol.md, "Remote providers"), for each provider kind. The servers are
// strict: they answer 400 to anything else, so the second turn would fail.

// reply is what a fake answers, in either kind's script.
type reply struct {
	text   []string
	call   bool // one call of the tool "look"
	hold   bool // stream text, then stay open
	cut    bool // stream text, then drop the connection
	status int
}

// fake is one strict fake server of a kind.
type fake struct {
	url      string
	request  func(t testing.TB, n int) map[string]any
	check    func(req map[string]any) error
	lastUser func(req map[string]any) string // the text of the request's last user message
}

func newFake(t *testing.T, kind string, script ...reply) fake {
	switch kind {
	case "openai":
		var answers []fakeopenai.Answer
		for _, r := range script {
			a := fakeopenai.Answer{Text: r.text, Hold: r.hold, Cut: r.cut, Status: r.status, Message: "scripted failure"}
			if r.call {
				a.Calls = []fakeopenai.Call{{ID: "call_1", Name: "look", Args: `{}`}}
			}
			answers = append(answers, a)
		}
		f := fakeopenai.New(t, answers...).Strict()
		return fake{url: f.URL(), request: f.Request, check: fakeopenai.Alternates, lastUser: func(req map[string]any) string {
			msgs := fakeopenai.Messages(req)
			s, _ := msgs[len(msgs)-1]["content"].(string)
			return s
		}}
	default:
		var answers []fakeanthropic.Answer
		for _, r := range script {
			a := fakeanthropic.Answer{Text: r.text, Hold: r.hold, Cut: r.cut, Status: r.status, Message: "scripted failure"}
			if r.call {
				a.Calls = []fakeanthropic.Call{{ID: "toolu_1", Name: "look", Input: []string{`{}`}}}
			}
			answers = append(answers, a)
		}
		f := fakeanthropic.New(t, answers...).Strict()
		return fake{url: f.URL(), request: f.Request, check: fakeanthropic.Alternates, lastUser: func(req map[string]any) string {
			msgs := fakeanthropic.Messages(req)
			var texts []string
			for _, b := range fakeanthropic.Blocks(msgs[len(msgs)-1]) {
				if b["type"] == "text" {
					texts = append(texts, b["text"].(string))
				}
			}
			return strings.Join(texts, "|")
		}}
	}
}

func newProvider(t *testing.T, kind, url string) provider.Provider {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	p, err := provider.New(provider.Config{Name: "p", Kind: kind, BaseURL: url, Model: "m", APIKey: "k",
		HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// offTheTestGoroutine fails the test from another goroutine, which may not call
// FailNow: Fatalf reports and ends only that goroutine.
type offTheTestGoroutine struct{ testing.TB }

func (g offTheTestGoroutine) Fatalf(format string, args ...any) {
	g.Helper()
	g.Errorf(format, args...)
	runtime.Goexit()
}

// look is a tool that changes nothing.
type look struct{}

func (look) Spec() provider.ToolSpec {
	return provider.ToolSpec{Name: "look", Parameters: jsontext.Value(`{"type":"object","properties":{}}`)}
}
func (look) Mutates() bool { return false }
func (look) Run(context.Context, tool.Env, jsontext.Value) tool.Result {
	return tool.Result{Output: "seen"}
}

// hooks cancel the turn at the first delta when cancelAtDelta is set.
type hooks struct {
	cancelAtDelta context.CancelFunc
}

func (h hooks) Delta(provider.Delta) {
	if h.cancelAtDelta != nil {
		h.cancelAtDelta()
	}
}
func (hooks) ToolCall(provider.ToolCall)                                {}
func (hooks) ToolResult(provider.ToolCall, tool.Result)                 {}
func (hooks) Message(provider.Message)                                  {}
func (hooks) Approve(context.Context, provider.ToolCall) (bool, string) { return true, "" }

func turn(p provider.Provider, history []provider.Message, prompt string, maxSteps int, h agent.Hooks) agent.Turn {
	return agent.Turn{
		Provider: p, Tools: map[string]tool.Tool{"look": look{}}, Autonomy: config.Full, MaxSteps: maxSteps,
		Context: history, Prompt: prompt, Hooks: h,
	}
}

// crashed is the context a restart restores when the daemon died during a turn
// after recording msgs (the prompt "first" comes first): the recovery path's own
// store, written and read as the session package does.
func crashed(t *testing.T, msgs ...provider.Message) []provider.Message {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	now := time.Now()
	if err := st.CreateSession(ctx, store.Session{ID: "s", Owner: "operator", Agent: "default", Workspace: t.TempDir(),
		CreatedAt: now, LastActivity: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.BeginTurn(ctx, "s", "turn-1", provider.Message{Role: provider.RoleUser, Text: "first"}); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := st.AppendCheckpoint(ctx, "s", "turn-1", m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Recover(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	restored, err := st.Context(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	return restored
}

func TestEveryWayATurnEndsIsFollowedByAnAlternatingRequest(t *testing.T) {
	lookCall := provider.ToolCall{ID: "call_9", Name: "look", Arguments: jsontext.Value(`{}`)}
	for _, tt := range []struct {
		name  string
		first []reply // the first turn's answers
		// end runs the first turn (nil: an ordinary run); restored, if set, replaces
		// the turn by the context a restart restores instead.
		cancel   string // "", "at request" or "at delta"
		restored func(t *testing.T) []provider.Message
		steps    int
		stop     string // the first turn's stop reason
		prompt   string // the text of the second request's last user message
	}{
		{name: "end_turn", first: []reply{{text: []string{"hello"}}}, stop: agent.EndTurn, prompt: "next"},
		{name: "error before output", first: []reply{{status: 500}}, stop: agent.Error, prompt: "first\n\nnext"},
		{name: "error after output", first: []reply{{text: []string{"par", "tial"}, cut: true}}, stop: agent.Error, prompt: "first\n\nnext"},
		{name: "cancel before output", first: []reply{{hold: true}}, cancel: "at request", stop: agent.Cancelled, prompt: "first\n\nnext"},
		// docs/protocol.md, "Remote providers": what the user saw stays the
		// assistant's message; nothing merges.
		{name: "cancel after output", first: []reply{{text: []string{"partial"}, hold: true}}, cancel: "at delta", stop: agent.Cancelled, prompt: "next"},
		{name: "cancel after text and a tool call", first: []reply{{text: []string{"Let me look."}, call: true}, {text: []string{"partial"}, hold: true}},
			cancel: "at second delta", stop: agent.Cancelled},
		{name: "max_steps", first: []reply{{text: []string{"Let me look."}, call: true}}, steps: 1, stop: agent.MaxSteps},
		{name: "max_steps without text", first: []reply{{call: true}}, steps: 1, stop: agent.MaxSteps},
		{name: "crash before output", restored: func(t *testing.T) []provider.Message { return crashed(t) }, prompt: "first\n\nnext"},
		{name: "crash during a tool call", restored: func(t *testing.T) []provider.Message {
			return crashed(t, provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{lookCall}})
		}},
		{name: "crash after a tool result", restored: func(t *testing.T) []provider.Message {
			return crashed(t, provider.Message{Role: provider.RoleAssistant, Text: "Let me look.", ToolCalls: []provider.ToolCall{lookCall}},
				provider.Message{Role: provider.RoleTool, ToolCallID: lookCall.ID, Name: "look", Text: "seen"})
		}},
	} {
		for _, kind := range []string{"openai", "anthropic"} {
			t.Run(tt.name+"/"+kind, func(t *testing.T) {
				script := append(append([]reply(nil), tt.first...), reply{text: []string{"ok"}})
				if tt.restored != nil {
					script = []reply{{text: []string{"ok"}}}
				}
				f := newFake(t, kind, script...)
				p := newProvider(t, kind, f.url)
				steps := tt.steps
				if steps == 0 {
					steps = 5
				}

				var history []provider.Message
				requests := 0
				if tt.restored != nil {
					history = tt.restored(t)
				} else {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					var h hooks
					switch tt.cancel {
					case "at request":
						go func() {
							defer cancel()
							f.request(offTheTestGoroutine{t}, 0)
						}()
					case "at delta":
						h.cancelAtDelta = cancel
					case "at second delta":
						n := 0
						h.cancelAtDelta = func() {
							if n++; n == 2 {
								cancel()
							}
						}
					}
					out := agent.Run(ctx, turn(p, nil, "first", steps, h))
					if out.StopReason != tt.stop {
						t.Fatalf("the first turn ended %s (%q), want %s", out.StopReason, out.Text, tt.stop)
					}
					history = out.Context
					requests = len(tt.first)
				}

				out := agent.Run(context.Background(), turn(p, history, "next", 5, hooks{}))
				req := f.request(t, requests)
				if err := f.check(req); err != nil {
					t.Errorf("the request after the turn does not alternate: %v\n%v", err, req["messages"])
				}
				if out.StopReason != agent.EndTurn || out.Text != "ok" {
					t.Fatalf("the next turn ended %s: %q", out.StopReason, out.Text)
				}
				want := tt.prompt
				if want == "" {
					want = "next"
				}
				if got := f.lastUser(req); got != want {
					t.Errorf("the last user message says %q, want %q", got, want)
				}
			})
		}
	}
}
