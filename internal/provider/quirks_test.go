package provider_test

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/agent"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// docs/protocol.md, "Remote providers": the openai kind against the fake switched
// into each real server's quirk, strict as well: a turn of two parallel calls and a
// reply, then a second turn of one call and a reply. Every request passes the fake's
// checks (roles alternate, the ids are the server's own or made in Mistral's form,
// unique), and the deltas, calls and usage come out as they would from OpenAI.

// recording hooks keep what a turn streamed.
type recording struct {
	hooks
	text, thoughts strings.Builder
	calls          []provider.ToolCall
}

func (r *recording) Delta(d provider.Delta) {
	if d.Thought {
		r.thoughts.WriteString(d.Text)
	} else {
		r.text.WriteString(d.Text)
	}
}
func (r *recording) ToolCall(c provider.ToolCall) { r.calls = append(r.calls, c) }

// sessionIDs renames calls as a session does (docs/protocol.md, "session/update").
func sessionIDs(turn string) func(string) string {
	n := 0
	return func(string) string {
		n++
		return fmt.Sprintf("tc_%s_%d", turn, n)
	}
}

func TestEveryQuirkOfOpenAICompatibleServers(t *testing.T) {
	const args1, args2 = `{"path":"ä/b","n":[1,2]}`, `{}`
	var sets [][]fakeopenai.Quirk
	for _, q := range fakeopenai.Quirks {
		sets = append(sets, []fakeopenai.Quirk{q})
	}
	sets = append(sets,
		// Servers as they are: Mistral's API; Ollama; an old local server.
		[]fakeopenai.Quirk{fakeopenai.MistralIDs, fakeopenai.WholeCalls, fakeopenai.NullContent},
		[]fakeopenai.Quirk{fakeopenai.WholeCalls, fakeopenai.ObjectArgs, fakeopenai.StopWithCalls, fakeopenai.Reasoning, fakeopenai.UsageOnly},
		[]fakeopenai.Quirk{fakeopenai.NoIndex, fakeopenai.NoIDs, fakeopenai.StopWithCalls},
		[]fakeopenai.Quirk{fakeopenai.NoIndex, fakeopenai.RepeatedIDs, fakeopenai.CallZero})
	for _, set := range sets {
		var name []string
		quirk := map[fakeopenai.Quirk]bool{}
		for _, q := range set {
			name = append(name, string(q))
			quirk[q] = true
		}
		t.Run(strings.Join(name, "+"), func(t *testing.T) {
			f := fakeopenai.New(t,
				fakeopenai.Answer{Thoughts: []string{"Hm, ", "files."}, Text: []string{"Let me ", "look."},
					Calls: []fakeopenai.Call{{Name: "look", Args: args1}, {Name: "look", Args: args2}}},
				fakeopenai.Answer{Text: []string{"Seen."}},
				fakeopenai.Answer{Calls: []fakeopenai.Call{{Name: "look", Args: args2}}},
				fakeopenai.Answer{Text: []string{"Twice."}},
			).Strict().With(set...)
			p := newProvider(t, "openai", f.URL())
			var history []provider.Message
			for i, want := range []string{"Let me look.\n\nSeen.", "Twice."} {
				var rec recording
				tr := turn(p, history, fmt.Sprint("prompt ", i), 5, &rec)
				tr.CallID = sessionIDs(fmt.Sprint(i))
				out := agent.Run(context.Background(), tr)
				if out.StopReason != agent.EndTurn || out.Text != want || rec.text.String() != want {
					t.Fatalf("turn %d ended %s with %q (streamed %q), want %q", i, out.StopReason, out.Text, rec.text.String(), want)
				}
				if i == 0 {
					if got := rec.thoughts.String(); got != "Hm, files." {
						t.Errorf("thoughts %q", got)
					}
					if len(rec.calls) != 2 || !sameJSON(rec.calls[0].Arguments, args1) || !sameJSON(rec.calls[1].Arguments, args2) {
						t.Fatalf("calls %+v", rec.calls)
					}
				}
				for _, c := range rec.calls {
					if !strings.HasPrefix(c.ID, "tc_") {
						t.Errorf("the call %+v was not renamed for the session", c)
					}
					switch {
					case quirk[fakeopenai.NoIDs] && c.ProviderID != "":
						t.Errorf("the server gave no id, yet the call has %q", c.ProviderID)
					case !quirk[fakeopenai.NoIDs] && !f.Produced(c.ProviderID):
						t.Errorf("the provider's id %q of %+v is not the server's", c.ProviderID, c)
					}
				}
				if out.Usage.InputTokens != 6 || out.Usage.OutputTokens != 4 || out.Usage.CachedInputTokens != 2 {
					t.Errorf("usage %+v, want two calls' worth", out.Usage)
				}
				history = out.Context
			}
			if n := f.Count(); n != 4 || f.Refused() != 0 {
				t.Fatalf("%d requests, %d refused", n, f.Refused())
			}
			for n := range 4 {
				if err := f.Check(f.Request(t, n)); err != nil {
					t.Errorf("request %d: %v", n, err)
				}
			}
			// What the model is sent back: its own ids, else made ones.
			ids := wireCallIDs(f.Request(t, 3))
			if len(ids) != 3 {
				t.Fatalf("the last request has the calls %v", ids)
			}
			for i, id := range ids {
				own := !quirk[fakeopenai.NoIDs] && (!quirk[fakeopenai.CallZero] || i < 2)
				if own && !f.Produced(id) || !own && !provider.IsWireID(id) {
					t.Errorf("call %d goes back as %q (the server's own: %v)", i, id, own)
				}
			}
			if quirk[fakeopenai.CallZero] && (ids[0] != "call_0" || ids[1] != "call_1") {
				t.Errorf("the first answer's ids came back as %v", ids)
			}
		})
	}
}

// sameJSON reports whether a and b are the same JSON value (a server that sends
// arguments as an object may order its members otherwise).
func sameJSON(a jsontext.Value, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// wireCallIDs lists a request's tool-call ids, in order.
func wireCallIDs(req map[string]any) []string {
	var ids []string
	for _, m := range fakeopenai.Messages(req) {
		calls, _ := m["tool_calls"].([]any)
		for _, c := range calls {
			id, _ := c.(map[string]any)["id"].(string)
			ids = append(ids, id)
		}
	}
	return ids
}

func TestMistralRefusesTheDaemonsOwnIDsWithItsWords(t *testing.T) {
	f := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"never"}}).With(fakeopenai.MistralIDs)
	p := newProvider(t, "openai", f.URL())
	// A call as a provider that ignored the rule would have it (a session switched
	// from another server): the daemon's own id stands in for a provider id only
	// where there is none, so this one goes out as it is and is refused.
	bad := provider.ToolCall{ID: "tc_1_1", ProviderID: "call_abc", Name: "look"}
	msgs := []provider.Message{
		{Role: provider.RoleUser, Text: "one"},
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{bad}},
		{Role: provider.RoleTool, ToolCallID: "tc_1_1", Name: "look", Text: "x"},
		{Role: provider.RoleAssistant, Text: "ok"},
		{Role: provider.RoleUser, Text: "two"},
	}
	_, err := p.Stream(context.Background(), provider.Request{Messages: msgs}, func(provider.Delta) {})
	want := "(HTTP 400): Tool call id was call_abc but must be a-z, A-Z, 0-9, with a length of 9"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v, want it to carry %q", err, want)
	}
	// Without a provider id the made one passes.
	msgs[1].ToolCalls = []provider.ToolCall{{ID: "tc_1_1", Name: "look"}}
	if _, err := p.Stream(context.Background(), provider.Request{Messages: slices.Clone(msgs)}, func(provider.Delta) {}); err != nil {
		t.Fatal(err)
	}
}
