package tui

import "testing"

func TestMemoryPickerSearchesViewsAndForgets(t *testing.T) {
	u := newUI(t, 80, 24)
	u.b.answers["memory/list"] = func(p map[string]any) any {
		if p["query"] == "staging" {
			return map[string]any{"memories": []map[string]any{
				{"id": "mem_b", "key": "staging", "content": "The staging host is build-3", "tags": []string{}, "score": 0.91},
			}}
		}
		return map[string]any{"memories": []map[string]any{
			{"id": "mem_a", "content": "Tea, no sugar", "tags": []string{}},
			{"id": "mem_b", "key": "staging", "content": "The staging host is build-3", "tags": []string{}},
		}}
	}
	u.b.answers["memory/delete"] = map[string]any{"id": "mem_b"}
	u.typeText("/memory")
	u.press("enter")
	u.wantCall(`memory/list {"agentAlias":"default","limit":200}`)
	u.wantScreen("Tea, no sugar")
	u.press("/")
	u.typeText("staging")
	u.wantScreen("search: staging")
	u.press("enter")
	u.wantCall(`memory/list {"agentAlias":"default","query":"staging","limit":200}`)
	u.wantScreen("0.91 · The staging host is build-3")
	u.press("d")
	u.wantScreen(`delete "staging"? y deletes`)
	u.press("n")
	if u.b.called("memory/delete") {
		t.Fatal("forgot without y")
	}
	u.press("d")
	u.press("y")
	u.wantCall(`memory/delete {"id":"mem_b"}`)
	u.wantScreen("forgot memory mem_b")
	u.typeText("/memory")
	u.press("enter")
	u.press("enter") // views the first
	u.wantScreen("memory mem_a (mem_a):")
}
