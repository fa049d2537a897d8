package rpc

import (
	"encoding/json/v2"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
)

// The native additions (docs/protocol.md, "Several clients on one session") that ACP
// editors (and several clients on one session) rely on.

func TestEveryTurnBeginsWithTheUserMessageAsReceived(t *testing.T) {
	h := sessionServer(t, session.Options{})
	a := h.peer(t, "")
	sid := a.newSession(`{"agentAlias":"default","sessionId":"asked-1"}`)
	file := a.must("file/attach", fmt.Sprintf(`{"session_id":%q,"files":[{"filename":"notes.txt","data_b64":"aGk="}]}`, sid))
	entry := file["files"].([]any)[0].(map[string]any)
	marker := entry["marker"].(string)
	attach, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	resp := a.start("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":"what is in it?","attachments":[%s]}`, sid, attach))
	res, err := a.await(resp)
	if err != nil {
		t.Fatal(err)
	}
	updates := a.drain()
	if len(updates) == 0 || updates[0]["type"] != "user_message" {
		t.Fatalf("first update = %v, want user_message", updates)
	}
	first := updates[0]
	text, _ := first["text"].(string)
	if !strings.HasPrefix(text, "what is in it?") || !strings.Contains(text, marker) {
		t.Errorf("user_message text %q: want the prompt with the marker %q", text, marker)
	}
	if first["turnId"] != res["turnId"] || first["seq"] == nil {
		t.Errorf("user_message %v: want this turn's turnId and a seq", first)
	}
	for _, u := range updates[1:] {
		if u["type"] == "user_message" {
			t.Errorf("a second user_message in one turn: %v", u)
		}
	}

	// It is in the replay log: a client attaching later sees what was asked.
	b := h.peer(t, "")
	b.must("session/attach", fmt.Sprintf(`{"sessionId":%q,"afterSeq":0}`, sid))
	replayed := b.drain()
	if len(replayed) == 0 || replayed[0]["type"] != "user_message" || replayed[0]["text"] != text {
		t.Fatalf("replay starts with %v, want the user_message %q", replayed, text)
	}
}

// The prompt's user_message carries the prompt as the client spelled it (the
// daemon copies the JSON string instead of encoding the text again): whatever
// escapes the client chose, every reader decodes the text the model got.
func TestAUserMessageShowsThePromptWhateverEscapesItCameWith(t *testing.T) {
	h := sessionServer(t, session.Options{})
	a := h.peer(t, "")
	sid := a.newSession("")
	const text = "café \"q\" a/b\tc\nline 2"
	res, err := a.await(a.start("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":"caf\u00e9 \"q\" a\/b\tc\nline \u0032"}`, sid)))
	if err != nil {
		t.Fatal(err)
	}
	if want := "echo: " + text; res["text"] != want {
		t.Errorf("answer %q, want %q", res["text"], want)
	}
	updates := a.drain()
	if len(updates) == 0 || updates[0]["type"] != "user_message" {
		t.Fatalf("first update = %v, want user_message", updates)
	}
	first := updates[0]
	delete(first, "_n") // the peer's count of what it read
	if first["text"] != text || first["turnId"] != res["turnId"] || first["sessionId"] != sid || first["seq"] == nil || len(first) != 5 {
		t.Errorf("user_message %v: want exactly sessionId, turnId, seq, type and the text %q", first, text)
	}
	b := h.peer(t, "")
	b.must("session/attach", fmt.Sprintf(`{"sessionId":%q,"afterSeq":0}`, sid))
	if replayed := b.drain(); len(replayed) == 0 || replayed[0]["text"] != text {
		t.Errorf("replay starts with %v, want the user_message %q", replayed, text)
	}
}

func TestToolCallIdsAreUniqueWithinASession(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession("")
	seen := map[string]bool{}
	for turn := range 3 {
		if _, err := p.call("session/prompt", prompt(sid, "/tool list_dir {\"path\":\".\"}\n/tool list_dir {\"path\":\".\"}\nlook")); err != nil {
			t.Fatal(err)
		}
		calls, results := 0, 0
		for _, u := range p.drain() {
			id, _ := u["toolCallId"].(string)
			switch u["type"] {
			case "tool_call":
				calls++
				if id == "" || seen[id] {
					t.Errorf("turn %d: tool call id %q repeats (seen %v)", turn, id, seen)
				}
				seen[id] = true
			case "tool_result":
				results++
				if !seen[id] {
					t.Errorf("turn %d: result for unknown call %q", turn, id)
				}
			}
		}
		if calls != 2 || results != 2 {
			t.Fatalf("turn %d: %d calls and %d results, want 2 and 2", turn, calls, results)
		}
	}
	// The transcript carries the same ids.
	msgs := p.must("session/messages", fmt.Sprintf(`{"sessionId":%q}`, sid))["messages"].([]any)
	inTranscript := map[string]bool{}
	for _, m := range msgs {
		row := m.(map[string]any)
		if row["role"] == "tool_call" {
			inTranscript[row["toolCallId"].(string)] = true
		}
	}
	if len(inTranscript) != 6 || len(seen) != 6 {
		t.Fatalf("transcript ids %v, update ids %v: want the same 6", inTranscript, seen)
	}
	for id := range seen {
		if !inTranscript[id] {
			t.Errorf("id %s of an update is not in the transcript", id)
		}
	}
}

func TestListCarriesWorkspaceDirAndTitle(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	fresh := p.must("session/new", `{"agentAlias":"default","sessionId":"fresh","keep_siblings":true}`)
	p.newSession(`{"agentAlias":"default","sessionId":"asked","keep_siblings":true}`)
	long := strings.Repeat("é", 90)
	p.must("session/prompt", prompt("asked", long+"\nsecond line"))
	p.must("session/prompt", prompt("asked", "a later prompt"))
	p.newSession(`{"agentAlias":"full","sessionId":"short","keep_siblings":true}`)
	p.must("session/prompt", prompt("short", "fix the build\nplease"))

	got := map[string]map[string]any{}
	for _, s := range p.must("session/list", "")["sessions"].([]any) {
		e := s.(map[string]any)
		got[e["sessionId"].(string)] = e
	}
	for id, want := range map[string]string{"fresh": "", "asked": strings.Repeat("é", 80), "short": "fix the build"} {
		e := got[id]
		if e == nil {
			t.Fatalf("session %s not listed: %v", id, got)
		}
		if e["title"] != want {
			t.Errorf("%s: title %q, want %q", id, e["title"], want)
		}
	}
	if got["fresh"]["workspaceDir"] != fresh["workspaceDir"] || got["fresh"]["workspaceDir"] == "" {
		t.Errorf("workspaceDir %v, want session/new's %v", got["fresh"]["workspaceDir"], fresh["workspaceDir"])
	}
	if w, _ := got["short"]["workspaceDir"].(string); !strings.HasSuffix(w, "full") {
		t.Errorf("the full agent's session lists workspaceDir %q", w)
	}
}

func TestAgentsListShowsTheAgentsTheCallerMayUse(t *testing.T) {
	s := newConfServer(t, roster+`
[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:1/v1"
model = "qwen3"

[agents.coder]
provider = "local"
autonomy = "readonly"

[agents.pinned]
provider = "local"
model = "llama3"
`)
	admin := s.as(os.Getuid()).peer(t, "")
	var names []string
	byAlias := map[string]map[string]any{}
	for _, a := range admin.must("agents/list", "")["agents"].([]any) {
		e := a.(map[string]any)
		names = append(names, e["alias"].(string))
		byAlias[e["alias"].(string)] = e
	}
	if strings.Join(names, " ") != "coder default full pinned" {
		t.Fatalf("admin sees %v, want every agent by alias", names)
	}
	for alias, want := range map[string][3]string{
		"default": {"echo", "", "supervised"},
		"full":    {"echo", "", "full"},
		"coder":   {"local", "qwen3", "readonly"},
		"pinned":  {"local", "llama3", "supervised"},
	} {
		e := byAlias[alias]
		if e["provider"] != want[0] || e["model"] != want[1] || e["autonomy"] != want[2] {
			t.Errorf("%s = %v, want provider %s model %q autonomy %s", alias, e, want[0], want[1], want[2])
		}
	}

	alice := s.as(4242).peer(t, "") // may use "full" only
	agents := alice.must("agents/list", "")["agents"].([]any)
	if len(agents) != 1 || agents[0].(map[string]any)["alias"] != "full" {
		t.Errorf("alice sees %v, want only full", agents)
	}
	bob := s.as(4343).peer(t, "") // no grant
	_, err := bob.call("agents/list", "")
	if e := wantCode(t, err, -32012); e.Data["grant"] != "sessions:read" {
		t.Errorf("bob: %v, want data.grant sessions:read", e)
	}
}
