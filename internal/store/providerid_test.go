package store

import (
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// docs/protocol.md, "Remote providers": each checkpoint keeps the provider's id of a
// call beside the daemon's, through the checkpoints, a snapshot and a reopened store;
// rows stored before it was kept read back without one.
func TestTheProvidersCallIDsAreKeptBesideTheDaemons(t *testing.T) {
	path := t.TempDir() + "/s.db"
	s := openAt(t, path)
	create(t, s, "s1")
	c1 := llm.ToolCall{ID: "tc_a_1", ProviderID: "call_0", Name: "shell", Arguments: []byte(`{}`)}
	c2 := llm.ToolCall{ID: "tc_a_2", Name: "list_dir", Arguments: []byte(`{}`)} // the provider gave none
	turn(t, s, "s1", "turn_a", user("go"), assistant("", c1, c2),
		result("tc_a_1", "shell", "x"), result("tc_a_2", "list_dir", "y"), assistant("done"))
	check := func(ms []llm.Message, where string) {
		t.Helper()
		got := ms[1].ToolCalls
		if len(got) != 2 || got[0].ID != "tc_a_1" || got[0].ProviderID != "call_0" || got[1].ID != "tc_a_2" || got[1].ProviderID != "" {
			t.Errorf("%s: calls %+v", where, got)
		}
	}
	check(mustContext(t, s, "s1"), "checkpoints")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path)
	msgs := mustContext(t, s, "s1")
	check(msgs, "after reopening")
	if err := s.Trim(ctx, "s1", msgs, 5); err != nil {
		t.Fatal(err)
	}
	check(mustContext(t, s, "s1"), "snapshot")
}

func TestARowFromBeforeProviderIDsHasNone(t *testing.T) {
	m, err := decodeMessage([]byte(`{"role":"assistant","tool_calls":[{"id":"tc_x_1","name":"shell","arguments":"{}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c := m.ToolCalls[0]; c.ID != "tc_x_1" || c.ProviderID != "" {
		t.Errorf("call %+v", c)
	}
	b, _ := encodeMessage(llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "tc_x_1", Name: "shell"}}})
	if want := `{"role":"assistant","tool_calls":[{"id":"tc_x_1","name":"shell","arguments":""}]}`; string(b) != want {
		t.Errorf("a call without a provider id encodes as %s, want %s (as before)", b, want)
	}
}
