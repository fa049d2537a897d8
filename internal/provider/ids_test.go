package provider

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

func callTurn(prompt string, calls ...ToolCall) []Message {
	msgs := []Message{{Role: RoleUser, Text: prompt}, {Role: RoleAssistant, ToolCalls: calls}}
	for _, c := range calls {
		msgs = append(msgs, Message{Role: RoleTool, ToolCallID: c.ID, Name: c.Name, Text: "out of " + c.ID})
	}
	return append(msgs, Message{Role: RoleAssistant, Text: "done"})
}

// wirePairs lists each call's wire id and checks that the results right after it
// answer exactly those ids, in order.
func wirePairs(t *testing.T, msgs []Message) []string {
	t.Helper()
	var ids, pending []string
	for i, m := range msgs {
		switch m.Role {
		case RoleAssistant:
			if len(pending) > 0 {
				t.Fatalf("message %d: calls %v unanswered", i, pending)
			}
			for _, c := range m.ToolCalls {
				ids = append(ids, c.ID)
				pending = append(pending, c.ID)
			}
		case RoleTool:
			if len(pending) == 0 || pending[0] != m.ToolCallID {
				t.Fatalf("message %d answers %q, want %v", i, m.ToolCallID, pending)
			}
			pending = pending[1:]
		}
	}
	return ids
}

func TestWireIDsSendTheProvidersOwnIDsBack(t *testing.T) {
	msgs := slices.Concat(
		callTurn("one", ToolCall{ID: "tc_1_1", ProviderID: "call_abc", Name: "a"}, ToolCall{ID: "tc_1_2", ProviderID: "AbCdEf123", Name: "b"}),
		callTurn("two", ToolCall{ID: "tc_2_1", ProviderID: "toolu_01X", Name: "a"}))
	got := wirePairs(t, wireIDs(msgs, nil))
	if want := []string{"call_abc", "AbCdEf123", "toolu_01X"}; !reflect.DeepEqual(got, want) {
		t.Errorf("wire ids %v, want %v", got, want)
	}
}

func TestWireIDsMakeAnIDWhereThereIsNoneOrItRepeats(t *testing.T) {
	// Turn 1 and 2: a server numbering its calls call_0 every answer; turn 3: a
	// call without a provider id (the provider gave none, or a row from before
	// they were kept); turn 4: ids repeating the daemon's own (rows from before
	// the session-unique ids of docs/protocol.md, "session/update").
	msgs := slices.Concat(
		callTurn("one", ToolCall{ID: "tc_1_1", ProviderID: "call_0", Name: "a"}, ToolCall{ID: "tc_1_2", ProviderID: "call_1", Name: "a"}),
		callTurn("two", ToolCall{ID: "tc_2_1", ProviderID: "call_0", Name: "a"}, ToolCall{ID: "tc_2_2", ProviderID: "call_1", Name: "a"}),
		callTurn("three", ToolCall{ID: "tc_3_1", Name: "a"}),
		callTurn("four", ToolCall{ID: "call_1", Name: "a"}),
		callTurn("five", ToolCall{ID: "call_1", Name: "a"}))
	before := fmt.Sprint(msgs)
	out := wireIDs(msgs, nil)
	if fmt.Sprint(msgs) != before {
		t.Fatal("wireIDs modified its input")
	}
	got := wirePairs(t, out)
	if got[0] != "call_0" || got[1] != "call_1" {
		t.Errorf("the first call_0 and call_1 are not kept: %v", got)
	}
	seen := map[string]bool{}
	for i, id := range got {
		if seen[id] {
			t.Errorf("id %q repeats: %v", id, got)
		}
		seen[id] = true
		if i >= 2 && !IsWireID(id) {
			t.Errorf("made id %q is not 9 characters of [a-zA-Z0-9]", id)
		}
	}
	if again := wirePairs(t, wireIDs(msgs, nil)); !reflect.DeepEqual(again, got) {
		t.Errorf("the same context got other ids: %v, then %v", got, again)
	}
	// The texts and everything else ride along unchanged.
	for i := range out {
		if out[i].Role != msgs[i].Role || out[i].Text != msgs[i].Text || out[i].Name != msgs[i].Name {
			t.Errorf("message %d changed: %+v, was %+v", i, out[i], msgs[i])
		}
	}
}

func TestWireIDsReplaceAnIDTheAPIWouldRefuse(t *testing.T) {
	msgs := callTurn("one", ToolCall{ID: "tc_1_1", ProviderID: "call:0/x", Name: "a"}, ToolCall{ID: "tc_1_2", ProviderID: "toolu_ok", Name: "a"})
	got := wirePairs(t, wireIDs(msgs, anthropicID))
	if !IsWireID(got[0]) || got[1] != "toolu_ok" {
		t.Errorf("wire ids %v", got)
	}
}

func TestMadeWireIDsAreUniqueInALargeContext(t *testing.T) {
	var msgs []Message
	for i := range 2000 {
		msgs = append(msgs, callTurn("p", ToolCall{ID: "same", Name: "a"}, ToolCall{ID: fmt.Sprint("tc_", i), ProviderID: "call_0", Name: "b"})...)
	}
	got := wirePairs(t, wireIDs(msgs, nil))
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("id %q repeats", id)
		}
		seen[id] = true
	}
	if len(seen) != 4000 {
		t.Errorf("%d ids, want 4000", len(seen))
	}
}

func TestMakeWireID(t *testing.T) {
	for _, seed := range []string{"", "tc_1_1", "tc_1_2", "ünïcode"} {
		for n := range 3 {
			if id := MakeWireID(seed, n); !IsWireID(id) || id != MakeWireID(seed, n) {
				t.Errorf("MakeWireID(%q, %d) = %q", seed, n, id)
			}
		}
	}
	if MakeWireID("tc_1_1", 0) == MakeWireID("tc_1_1", 1) || MakeWireID("tc_1_1", 0) == MakeWireID("tc_1_2", 0) {
		t.Error("candidates repeat")
	}
	for _, tt := range []struct {
		id string
		ok bool
	}{{"abcDEF123", true}, {"abcDEF12", false}, {"abcDEF1234", false}, {"abc_EF123", false}, {"call_0", false}} {
		if IsWireID(tt.id) != tt.ok {
			t.Errorf("IsWireID(%q) = %v", tt.id, !tt.ok)
		}
	}
}

func TestMistralModelsGetMadeIDsForOtherProvidersIDs(t *testing.T) {
	msgs := callTurn("one", ToolCall{ID: "tc_1_1", ProviderID: "toolu_01AbC", Name: "a"}, ToolCall{ID: "tc_1_2", ProviderID: "Ab3dE5gH1", Name: "a"})
	for _, tt := range []struct {
		model, baseURL string
		rule           bool
	}{
		{"mistral-large-latest", "", true},
		{"m", "https://api.mistral.ai/v1", true},
		{"mistralai/Devstral-Small-2505", "http://localhost:8000/v1", true},
		{"gpt-4.1", "", false},
		{"llama3.1", "http://localhost:11434/v1", false},
	} {
		p := &openAI{r: &remote{baseURL: tt.baseURL}}
		got := wirePairs(t, wireIDs(msgs, p.idRule(tt.model)))
		if tt.rule && (!IsWireID(got[0]) || got[1] != "Ab3dE5gH1") || !tt.rule && (got[0] != "toolu_01AbC" || got[1] != "Ab3dE5gH1") {
			t.Errorf("%s at %q: ids %v", tt.model, tt.baseURL, got)
		}
	}
}
