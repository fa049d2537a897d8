package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/memory"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// memoryRoster: alice (4242) and carol (4545) may run sessions of agent "full"
// and hold memory:read and memory:write; dave (4646) holds memory:read only, bob
// (4343) nothing; boss (4444) is an admin.
const memoryRoster = `
[agents.full]
provider = "echo"
autonomy = "full"

[permission_profiles.rememberer]
grants = ["sessions:execute", "sessions:read", "memory:read", "memory:write"]
agents = ["full"]

[permission_profiles.reader]
grants = ["memory:read"]
agents = ["full"]

[permission_profiles.nothing]

[permission_profiles.admin]
admin = true

[users.alice]
uid = 4242
permission_profiles = ["rememberer"]

[users.carol]
uid = 4545
permission_profiles = ["rememberer"]

[users.dave]
uid = 4646
permission_profiles = ["reader"]

[users.bob]
uid = 4343
permission_profiles = ["nothing"]

[users.boss]
uid = 4444
permission_profiles = ["admin"]
`

func memoryIDs(res map[string]any) []string {
	var ids []string
	for _, m := range res["memories"].([]any) {
		ids = append(ids, m.(map[string]any)["id"].(string))
	}
	return ids
}

func TestMemoriesAreIsolatedBetweenPrincipals(t *testing.T) {
	s := newConfServer(t, memoryRoster)
	alice := s.as(4242).peer(t, "")
	carol := s.as(4545).peer(t, "")
	id := alice.must("memory/put", `{"agentAlias":"full","content":"alice's locker code is 7781","key":"locker"}`)["id"].(string)
	carolID := carol.must("memory/put", `{"agentAlias":"full","content":"carol parks on level two"}`)["id"].(string)

	// carol never sees, searches, recalls or forgets alice's memory.
	if ids := memoryIDs(carol.must("memory/list", `{"agentAlias":"full"}`)); len(ids) != 1 || ids[0] != carolID {
		t.Fatalf("carol lists %v", ids)
	}
	if ids := memoryIDs(carol.must("memory/list", `{"agentAlias":"full","query":"locker code"}`)); len(ids) != 0 {
		t.Fatalf("carol's search finds %v", ids)
	}
	_, err := carol.call("memory/delete", fmt.Sprintf(`{"id":%q}`, id))
	_, missingErr := carol.call("memory/delete", `{"id":"mem_nosuchmemory"}`)
	if e, m := wantCode(t, err, -32602), wantCode(t, missingErr, -32602); e.Message != m.Message || e.Data["reason"] != "not_found" {
		t.Fatalf("another's memory (%v) answers unlike a missing one (%v)", e, m)
	}
	sid := carol.newSession(`{"agentAlias":"full"}`)
	res := carol.must("session/prompt", prompt(sid, "what is the locker code?"))
	if strings.Contains(res["text"].(string), "7781") {
		t.Fatalf("carol's turn recalled alice's memory: %q", res["text"])
	}
	for _, u := range carol.drain() {
		if u["type"] == "memory_recalled" {
			t.Fatalf("carol's turn recalled %v", u)
		}
	}
	// carol's memory_forget of alice's id fails and forgets nothing.
	res = carol.must("session/prompt", prompt(sid, fmt.Sprintf(`/tool memory_forget {"id":%q}`, id)))
	if !strings.Contains(res["text"].(string), "no memory "+id) {
		t.Fatalf("carol's memory_forget: %q", res["text"])
	}
	// alice's own turn recalls it (the echo model repeats what it was sent).
	asid := alice.newSession(`{"agentAlias":"full"}`)
	if res := alice.must("session/prompt", prompt(asid, "what is the locker code?")); !strings.Contains(res["text"].(string), "- locker: alice's locker code is 7781") {
		t.Fatalf("alice's turn: %q", res["text"])
	}
	if u := alice.updateOf("memory_recalled"); u["entries"].([]any)[0].(map[string]any)["id"] != id {
		t.Fatalf("alice's memory_recalled %v", u)
	}

	// An admin sees every owner's, and may forget any.
	boss := s.as(4444).peer(t, "")
	if ids := memoryIDs(boss.must("memory/list", `{"agentAlias":"full"}`)); len(ids) != 2 {
		t.Fatalf("the admin lists %v", ids)
	}
	boss.must("memory/delete", fmt.Sprintf(`{"id":%q}`, carolID))
	if ids := memoryIDs(carol.must("memory/list", `{"agentAlias":"full"}`)); len(ids) != 0 {
		t.Fatalf("after the admin's delete carol lists %v", ids)
	}
	if ids := memoryIDs(alice.must("memory/list", `{"agentAlias":"full"}`)); len(ids) != 1 {
		t.Fatalf("alice lists %v", ids)
	}
}

func TestMemoryMethodsNeedTheirGrants(t *testing.T) {
	s := newConfServer(t, memoryRoster)
	bob := s.as(4343).peer(t, "")
	dave := s.as(4646).peer(t, "")
	for _, m := range []string{"memory/list", "memory/put", "memory/delete", "memory/reindex"} {
		_, err := bob.call(m, `{"agentAlias":"full","content":"x","id":"x"}`)
		if e := wantCode(t, err, -32012); !strings.Contains(e.Message, "memory:") {
			t.Errorf("bob's %s: %v", m, e)
		}
	}
	dave.must("memory/list", `{"agentAlias":"full"}`)
	_, err := dave.call("memory/put", `{"agentAlias":"full","content":"x"}`)
	if e := wantCode(t, err, -32012); e.Data["grant"] != "memory:write" {
		t.Errorf("dave's memory/put: %v", e)
	}
	// An agent outside the principal's profiles is refused like for sessions.
	_, err = dave.call("memory/list", `{"agentAlias":"default"}`)
	if e := wantCode(t, err, -32012); e.Data["reason"] != "agent_not_allowed" {
		t.Errorf("dave's memory/list of agent default: %v", e)
	}
}

func TestToolsListShowsTheMemoryTools(t *testing.T) {
	s := newConfServer(t, memoryRoster)
	alice := s.as(4242).peer(t, "")
	readOnly := map[string]any{}
	for _, e := range alice.must("tools/list", `{"agentAlias":"full"}`)["tools"].([]any) {
		m := e.(map[string]any)
		if strings.HasPrefix(m["name"].(string), "memory_") {
			readOnly[m["name"].(string)] = m["readOnly"]
		}
	}
	if readOnly["memory_store"] != false || readOnly["memory_forget"] != false || readOnly["memory_recall"] != true {
		t.Fatalf("memory tools in tools/list: %v", readOnly)
	}
}

func TestAMemoryWriteTheStoreFailsIsAnErrorAndChangesNothing(t *testing.T) {
	var failing atomic.Bool
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{FailWrites: func(op string) error {
		if failing.Load() && strings.HasPrefix(op, "memory_") {
			return errors.New("disk full (test)")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mem := memory.New(memory.Options{Store: st, Config: config.Default, Logger: slog.New(slog.DiscardHandler)})
	if err := mem.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := startServerWith(t, Config{Memory: mem}, config.Default(), session.Options{Store: st, Memory: mem})
	p := h.peer(t, "")
	kept := p.must("memory/put", `{"agentAlias":"default","content":"kept fact"}`)["id"].(string)
	failing.Store(true)
	_, err = p.call("memory/put", `{"agentAlias":"default","content":"lost fact"}`)
	wantCode(t, err, -32603)
	_, err = p.call("memory/delete", fmt.Sprintf(`{"id":%q}`, kept))
	wantCode(t, err, -32603)
	if ids := memoryIDs(p.must("memory/list", `{"agentAlias":"default"}`)); len(ids) != 1 || ids[0] != kept {
		t.Fatalf("after the failed writes: %v", ids)
	}
	// Once the store works again, so does memory, without a restart.
	failing.Store(false)
	p.must("memory/put", `{"agentAlias":"default","content":"a later fact"}`)
	p.must("memory/delete", fmt.Sprintf(`{"id":%q}`, kept))
	if ids := memoryIDs(p.must("memory/list", `{"agentAlias":"default"}`)); len(ids) != 1 || ids[0] == kept {
		t.Fatalf("after recovery: %v", ids)
	}
}

func TestAnAgentsToolsListPicksItsMemoryTools(t *testing.T) {
	s := newConfServer(t, memoryRoster+`
[agents.picky]
provider = "echo"
tools = ["read_file", "memory_recall"]

[agents.mem_only]
provider = "echo"
tools = ["memory_store"]
`)
	op := s.operator(t)
	names := func(agent string) string {
		var out []string
		for _, e := range op.must("tools/list", fmt.Sprintf(`{"agentAlias":%q}`, agent))["tools"].([]any) {
			out = append(out, e.(map[string]any)["name"].(string))
		}
		return strings.Join(out, ",")
	}
	if got := names("picky"); got != "memory_recall,read_file" {
		t.Errorf("picky's tools: %s", got)
	}
	if got := names("mem_only"); got != "memory_store" {
		t.Errorf("mem_only's tools: %s", got)
	}
	// In a turn too: memory_store is not among picky's tools.
	sid := op.newSession(`{"agentAlias":"picky"}`)
	if res := op.must("session/prompt", prompt(sid, `/tool memory_store {"content":"x"}`)); !strings.Contains(res["text"].(string), `unknown tool`) {
		t.Errorf("picky's memory_store: %q", res["text"])
	}
}

// failingRecall is memory whose every recall fails, as a store or embeddings
// endpoint may.
type failingRecall struct{ calls atomic.Int64 }

func (*failingRecall) Enabled() bool                                  { return true }
func (*failingRecall) Tools(agent, owner string) map[string]tool.Tool { return nil }
func (f *failingRecall) Recall(ctx context.Context, agent, owner, message string) (memory.Recalled, error) {
	f.calls.Add(1)
	return memory.Recalled{}, errors.New("store: searching memories: disk I/O error (test)")
}

func TestAFailedRecallIsLoggedAndTheTurnGoesOn(t *testing.T) {
	logs := &lockedBuffer{}
	fr := &failingRecall{}
	h := startServerWith(t, Config{Logger: slog.New(slog.NewTextHandler(logs, nil))}, config.Default(), session.Options{Memory: fr})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"default"}`)
	res := p.must("session/prompt", prompt(sid, "hello"))
	if res["stopReason"] != "end_turn" || res["text"] != "echo: hello" || fr.calls.Load() != 1 {
		t.Fatalf("the turn: %v (recalls %d)", res, fr.calls.Load())
	}
	for _, u := range p.drain() {
		if u["type"] == "memory_recalled" {
			t.Fatalf("a failed recall published %v", u)
		}
	}
	if !strings.Contains(logs.String(), "recalling memories failed; the turn goes on without them") {
		t.Fatalf("not logged:\n%s", logs.String())
	}
}
