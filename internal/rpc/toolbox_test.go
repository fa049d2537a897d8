package rpc

import (
	"encoding/json/v2"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
)

// toolUpdate is the first update of type typ for tool name.
func toolUpdate(t *testing.T, updates []map[string]any, typ, name string) map[string]any {
	t.Helper()
	for _, u := range updates {
		if u["type"] == typ && u["name"] == name {
			return u
		}
	}
	t.Fatalf("no %s update of %s among %d updates", typ, name, len(updates))
	return nil
}

// jsonOf is v re-encoded, to compare decoded JSON by value.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEditFileUnderSupervisedAsksApprovalAndItsResultCarriesTheDiff(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	created := p.must("session/new", `{"agentAlias":"default"}`)
	sid, ws := created["sessionId"].(string), created["workspaceDir"].(string)
	file := filepath.Join(ws, "notes.txt")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resp := p.start("session/prompt", prompt(sid, `/tool read_file {"path":"notes.txt","offset":2,"limit":1}`+"\n"+
		`/tool edit_file {"path":"notes.txt","old_text":"beta","new_text":"BETA"}`+"\n"+
		`/tool search {"pattern":"BETA|gamma"}`+"\n"+
		`/tool write_file {"path":"sub/new.txt","content":"fresh\n"}`+"\nedit it"))

	approval, before := p.until("approval_request")
	if approval["name"] != "edit_file" {
		t.Fatalf("first approval_request is for %v, want edit_file (read_file needs none)", approval["name"])
	}
	p.must("session/approve", fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":"allow_once"}`, sid, approval["requestId"]))
	second, between := p.until("approval_request")
	if second["name"] != "write_file" {
		t.Fatalf("second approval_request is for %v", second["name"])
	}
	p.must("session/approve", fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":"allow_once"}`, sid, second["requestId"]))
	res, err := p.await(resp)
	if err != nil {
		t.Fatal(err)
	}
	updates := append(append(append(append(before, approval), between...), second), p.drain()...)

	// Every file tool's tool_call says where it goes, with absolute paths.
	for name, want := range map[string]string{
		"read_file":  fmt.Sprintf(`[{"line":2,"path":%q}]`, file),
		"edit_file":  fmt.Sprintf(`[{"line":2,"path":%q}]`, file),
		"search":     fmt.Sprintf(`[{"path":%q}]`, ws),
		"write_file": fmt.Sprintf(`[{"path":%q}]`, filepath.Join(ws, "sub", "new.txt")),
	} {
		if got := jsonOf(t, toolUpdate(t, updates, "tool_call", name)["locations"]); got != want {
			t.Errorf("%s tool_call locations %s, want %s", name, got, want)
		}
	}
	read := toolUpdate(t, updates, "tool_result", "read_file")
	if read["rawOutput"] != "beta\n[lines 2-2 shown; the file goes on: continue with offset 3]" || read["diff"] != nil {
		t.Errorf("read_file result %v", read)
	}
	edit := toolUpdate(t, updates, "tool_result", "edit_file")
	if edit["isError"] != false || !strings.Contains(edit["rawOutput"].(string), "replaced 1 occurrence at line 2") {
		t.Fatalf("edit_file result %v", edit)
	}
	wantDiff := fmt.Sprintf(`{"newText":"alpha\nBETA\ngamma\n","oldText":"alpha\nbeta\ngamma\n","path":%q}`, file)
	if got := jsonOf(t, edit["diff"]); got != wantDiff {
		t.Errorf("edit_file diff %s, want %s", got, wantDiff)
	}
	if got := toolUpdate(t, updates, "tool_result", "search")["rawOutput"]; got != "notes.txt:2: BETA\nnotes.txt:3: gamma" {
		t.Errorf("search found %q", got)
	}
	wantNew := fmt.Sprintf(`{"newText":"fresh\n","path":%q}`, filepath.Join(ws, "sub", "new.txt"))
	if got := jsonOf(t, toolUpdate(t, updates, "tool_result", "write_file")["diff"]); got != wantNew {
		t.Errorf("write_file diff of a new file %s, want %s (no oldText)", got, wantNew)
	}
	if b, _ := os.ReadFile(file); string(b) != "alpha\nBETA\ngamma\n" {
		t.Errorf("the file holds %q", b)
	}
	if !strings.Contains(res["text"].(string), "edit_file -> edited notes.txt") {
		t.Errorf("the model saw %q", res["text"])
	}

	// Read-only refuses the edit without asking.
	ro := p.newSession(`{"agentAlias":"ro"}`)
	p.must("session/prompt", prompt(ro, `/tool edit_file {"path":"notes.txt","old_text":"a","new_text":"b"}`))
	r := toolUpdate(t, p.drain(), "tool_result", "edit_file")
	if r["isError"] != true || !strings.Contains(r["rawOutput"].(string), "read-only") || r["diff"] != nil {
		t.Errorf("edit_file under readonly: %v", r)
	}
}

func TestPlanUpdateBelongsToTheTurnAndIsReplayedByAttach(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"default"}`) // supervised: update_plan needs no approval
	entries := `[{"content":"read the code","status":"completed","priority":"high"},{"content":"fix the bug","status":"in_progress"},{"content":"run the tests","status":"pending","priority":"low"}]`
	res := p.must("session/prompt", prompt(sid, `/tool update_plan {"entries":`+entries+`}`+"\nplanning"))
	updates := p.drain()
	var plan map[string]any
	for _, u := range updates {
		switch u["type"] {
		case "approval_request":
			t.Fatalf("update_plan asked for approval: %v", u)
		case "plan":
			if plan != nil {
				t.Fatalf("two plan updates: %v and %v", plan, u)
			}
			plan = u
		}
	}
	if plan == nil {
		t.Fatalf("no plan update among %v", updates)
	}
	if plan["turnId"] != res["turnId"] || plan["sessionId"] != sid || plan["seq"] == nil {
		t.Errorf("plan update %v: want this turn's turnId, the session and a seq", plan)
	}
	var want any
	if err := json.Unmarshal([]byte(entries), &want); err != nil {
		t.Fatal(err)
	}
	if jsonOf(t, plan["entries"]) != jsonOf(t, want) {
		t.Errorf("plan entries %s, want %s", jsonOf(t, plan["entries"]), entries)
	}
	// Its place: after the update_plan tool_call, before its tool_result.
	order := map[string]float64{}
	for _, u := range updates {
		order[fmt.Sprint(u["type"], u["name"])] = u["seq"].(float64)
	}
	if !(order["tool_callupdate_plan"] < plan["seq"].(float64) && plan["seq"].(float64) < order["tool_resultupdate_plan"]) {
		t.Errorf("plan seq %v not between its tool_call and tool_result: %v", plan["seq"], order)
	}
	if r := toolUpdate(t, updates, "tool_result", "update_plan"); r["rawOutput"] != "plan updated: 3 steps (1 completed, 1 in progress, 1 pending)" {
		t.Errorf("update_plan result %v", r)
	}
	if toolUpdate(t, updates, "tool_call", "update_plan")["locations"] != nil {
		t.Error("update_plan's tool_call carries locations: it is no file tool")
	}

	// Another client attaching later gets the same update from the replay log.
	b := h.peer(t, "")
	b.must("session/attach", fmt.Sprintf(`{"sessionId":%q,"afterSeq":0}`, sid))
	var replayed map[string]any
	for _, u := range b.drain() {
		if u["type"] == "plan" {
			replayed = u
		}
	}
	delete(replayed, "_n") // the arrival order the test peer adds
	delete(plan, "_n")
	if jsonOf(t, replayed) != jsonOf(t, plan) {
		t.Errorf("replayed plan %v, want %v", replayed, plan)
	}
}
