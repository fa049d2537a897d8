//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// docs/protocol.md, "Memory", against the real binary: the memory tools under each
// autonomy, the recall of each turn in the provider request and nowhere else (not
// in session/messages, not after a kill -9 and a restore, not after a compaction),
// embeddings that work, fail and are reindexed, memories surviving kill -9.

// memoryHome writes a config with extra and returns the home.
func memoryHome(t *testing.T, conf string) string {
	t.Helper()
	h := home(t)
	os.MkdirAll(filepath.Join(h, ".zeroclaw"), 0o700)
	if err := os.WriteFile(filepath.Join(h, ".zeroclaw", "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// until reads messages until the response with id and returns the session/update
// params on the way, the $/progress params on the way, and the response.
func until(t *testing.T, c *rpcConn, id int) (updates, progress []map[string]any, resp map[string]any) {
	t.Helper()
	for {
		m := c.recv()
		p, _ := m["params"].(map[string]any)
		switch {
		case m["method"] == "session/update":
			updates = append(updates, p)
		case m["method"] == "$/progress":
			progress = append(progress, p)
		case m["id"] == float64(id):
			return updates, progress, m
		}
	}
}

// mcall calls method with params (JSON) and returns the result, failing on an error.
func mcall(t *testing.T, c *rpcConn, id int, method, params string) map[string]any {
	t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s,"id":%d}`, method, params, id))
	_, _, resp := until(t, c, id)
	res, ok := resp["result"].(map[string]any)
	if !ok {
		t.Fatalf("%s %s: %v", method, params, resp)
	}
	return res
}

func listMemories(t *testing.T, c *rpcConn, agent string) []map[string]any {
	t.Helper()
	res := mcall(t, c, 900, "memory/list", fmt.Sprintf(`{"agentAlias":%q}`, agent))
	var out []map[string]any
	for _, m := range res["memories"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

func ofType(updates []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, u := range updates {
		if u["type"] == typ {
			out = append(out, u)
		}
	}
	return out
}

func TestMemoryToolsUnderEachAutonomy(t *testing.T) {
	h := memoryHome(t, `
[agents.ro]
provider = "echo"
autonomy = "readonly"
[agents.sup]
provider = "echo"
autonomy = "supervised"
[agents.full]
provider = "echo"
autonomy = "full"
`)
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	id := 10
	prompt := func(sid, text string) ([]map[string]any, map[string]any) {
		id++
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":%q,"prompt":%q},"id":%d}`, sid, text, id))
		var ups []map[string]any
		for {
			m := c.recv()
			p, _ := m["params"].(map[string]any)
			if m["method"] == "session/update" {
				ups = append(ups, p)
				if p["type"] == "approval_request" {
					decision := "allow_once"
					if strings.Contains(fmt.Sprint(p["rawInput"]), "keep-me") {
						decision = "reject_once"
					}
					c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/approve","params":{"sessionId":%q,"requestId":%q,"decision":%q},"id":"a%d"}`,
						sid, p["requestId"], decision, id))
				}
				continue
			}
			if m["id"] == float64(id) {
				return ups, m["result"].(map[string]any)
			}
		}
	}
	newSession := func(agent string) string {
		return mcall(t, c, 2, "session/new", fmt.Sprintf(`{"agentAlias":%q,"keep_siblings":true}`, agent))["sessionId"].(string)
	}
	store := `/tool memory_store {"content":"the build host is fig-7","key":"host"}`

	// readonly: storing is refused, recalling needs no approval.
	ro := newSession("ro")
	ups, _ := prompt(ro, store)
	if r := ofType(ups, "tool_result"); len(r) != 1 || r[0]["isError"] != true || !strings.Contains(r[0]["rawOutput"].(string), "read-only") {
		t.Fatalf("readonly memory_store: %v", r)
	}
	if got := listMemories(t, c, "ro"); len(got) != 0 {
		t.Fatalf("readonly stored %v", got)
	}
	put := mcall(t, c, 3, "memory/put", `{"agentAlias":"ro","content":"the build host is fig-7"}`)
	ups, _ = prompt(ro, `/tool memory_recall {"query":"build host"}`)
	if len(ofType(ups, "approval_request")) != 0 {
		t.Fatal("memory_recall asked for approval")
	}
	if r := ofType(ups, "tool_result"); len(r) != 1 || r[0]["isError"] == true || !strings.Contains(r[0]["rawOutput"].(string), put["id"].(string)) {
		t.Fatalf("readonly memory_recall: %v", r)
	}

	// supervised: store and forget ask; an allowed store stores, a rejected forget
	// forgets nothing.
	sup := newSession("sup")
	ups, _ = prompt(sup, store)
	if len(ofType(ups, "approval_request")) != 1 {
		t.Fatalf("supervised memory_store asked %d times", len(ofType(ups, "approval_request")))
	}
	got := listMemories(t, c, "sup")
	if len(got) != 1 || got[0]["key"] != "host" {
		t.Fatalf("supervised, allowed: %v", got)
	}
	memID := got[0]["id"].(string)
	ups, _ = prompt(sup, fmt.Sprintf(`/tool memory_forget {"id":%q,"why":"keep-me"}`, memID))
	if r := ofType(ups, "tool_result"); len(ofType(ups, "approval_request")) != 1 || len(r) != 1 || r[0]["isError"] != true {
		t.Fatalf("supervised memory_forget, rejected: %v", ups)
	}
	if len(listMemories(t, c, "sup")) != 1 {
		t.Fatal("a rejected forget forgot")
	}
	ups, _ = prompt(sup, fmt.Sprintf(`/tool memory_forget {"id":%q}`, memID))
	if len(ofType(ups, "approval_request")) != 1 || len(listMemories(t, c, "sup")) != 0 {
		t.Fatalf("supervised memory_forget, allowed: %v", ups)
	}

	// full: no approval; the same key replaces.
	full := newSession("full")
	prompt(full, store)
	ups, _ = prompt(full, `/tool memory_store {"content":"the build host is plum-2","key":"host"}`)
	if len(ofType(ups, "approval_request")) != 0 {
		t.Fatal("full autonomy asked")
	}
	got = listMemories(t, c, "full")
	if len(got) != 1 || got[0]["content"] != "the build host is plum-2" {
		t.Fatalf("full, the same key twice: %v", got)
	}
	// Stored memories of one agent are not another's.
	if got := listMemories(t, c, "sup"); len(got) != 0 {
		t.Fatalf("agent sup lists %v", got)
	}
}

// fakeMemoryHome is a daemon home whose default agent runs on f, with [memory]
// as given.
func fakeMemoryHome(t *testing.T, f *fakeopenai.Server, memory string) string {
	return memoryHome(t, fmt.Sprintf("[providers.fake]\nkind = \"openai\"\nbase_url = %q\nmodel = \"m\"\napi_key = \"k\"\n\n"+
		"[agents.default]\nprovider = \"fake\"\nautonomy = \"full\"\n\n[memory]\n%s\n", f.URL(), memory))
}

// userTexts are the contents of a request's user messages.
func userTexts(req map[string]any) []string {
	var out []string
	for _, m := range fakeopenai.Messages(req) {
		if m["role"] == "user" {
			s, _ := m["content"].(string)
			out = append(out, s)
		}
	}
	return out
}

const memoryBlock = "[Memory context]"

func TestRecallIsInTheProviderRequestOnly(t *testing.T) {
	f := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"ok"}})
	h := fakeMemoryHome(t, f, "")
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	memID := mcall(t, c, 2, "memory/put", `{"agentAlias":"default","content":"The cat is named Miso","key":"cat","tags":["pets"]}`)["id"].(string)
	mcall(t, c, 3, "session/new", `{"agentAlias":"default","sessionId":"mem-s1"}`)

	const ask = "what is the cat called?"
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"mem-s1","prompt":"` + ask + `"},"id":4}`)
	ups, _, resp := until(t, c, 4)
	res := resp["result"].(map[string]any)
	want := memoryBlock + "\n- cat: The cat is named Miso\n[/Memory context]\n\n" + ask
	if got := userTexts(f.Request(t, 0)); len(got) != 1 || got[0] != want {
		t.Fatalf("the provider was sent %q, want %q", got, want)
	}
	rec := ofType(ups, "memory_recalled")
	if len(rec) != 1 || rec[0]["turnId"] != res["turnId"] {
		t.Fatalf("memory_recalled updates %v (turn %v)", rec, res["turnId"])
	}
	entries := rec[0]["entries"].([]any)
	if e := entries[0].(map[string]any); len(entries) != 1 || e["id"] != memID || e["key"] != "cat" || e["score"].(float64) <= 0 {
		t.Fatalf("entries %v", entries)
	}
	noBlock := func(where string, texts []string) {
		t.Helper()
		for _, s := range texts {
			if strings.Contains(s, memoryBlock) {
				t.Fatalf("%s holds the memory block: %q", where, s)
			}
		}
	}
	transcript := func() []string {
		m := mcall(t, c, 50, "session/messages", `{"sessionId":"mem-s1"}`)
		var texts []string
		for _, row := range m["messages"].([]any) {
			r := row.(map[string]any)
			texts = append(texts, fmt.Sprint(r["text"]))
		}
		return texts
	}
	if tr := transcript(); len(tr) < 1 || tr[0] != ask {
		t.Fatalf("the transcript starts %q, want the prompt as the user wrote it", tr)
	}
	noBlock("session/messages", transcript())

	// A turn that recalls nothing sends no update; the earlier prompt goes as written.
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"mem-s1","prompt":"and the weather?"},"id":5}`)
	ups, _, _ = until(t, c, 5)
	if len(ofType(ups, "memory_recalled")) != 0 {
		t.Fatalf("a turn that matched nothing: %v", ofType(ups, "memory_recalled"))
	}
	if got := userTexts(f.Request(t, 1)); len(got) != 2 || got[0] != ask || got[1] != "and the weather?" {
		t.Fatalf("second request's user messages %q", got)
	}

	// memory_recalled is kept for replay.
	c2 := dial(t, d.socket)
	c2.initialize()
	c2.send(`{"jsonrpc":"2.0","method":"session/attach","params":{"sessionId":"mem-s1","afterSeq":0},"id":6}`)
	ups, _, _ = until(t, c2, 6)
	if rec := ofType(ups, "memory_recalled"); len(rec) != 1 || rec[0]["turnId"] != res["turnId"] {
		t.Fatalf("replay has memory_recalled %v", rec)
	}
	c2.conn.Close()

	// kill -9, restart: the memory survives, the restored context has no block.
	kill9(t, d)
	d = startDaemon(t, h, nil)
	c = dial(t, d.socket)
	c.initialize()
	if got := listMemories(t, c, "default"); len(got) != 1 || got[0]["id"] != memID || got[0]["content"] != "The cat is named Miso" {
		t.Fatalf("after kill -9: %v", got)
	}
	mcall(t, c, 7, "session/new", `{"agentAlias":"default","sessionId":"mem-s1"}`)
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"mem-s1","prompt":"the cat again"},"id":8}`)
	until(t, c, 8)
	got := userTexts(f.Request(t, 2))
	if len(got) != 3 || got[0] != ask || got[2] != memoryBlock+"\n- cat: The cat is named Miso\n[/Memory context]\n\nthe cat again" {
		t.Fatalf("after the restore the provider was sent %q", got)
	}
	noBlock("the restored context", got[:2])
	noBlock("session/messages after the restore", transcript())

	// A compaction summarises the context without the block, and the context
	// after it has none either.
	mcall(t, c, 9, "session/compact", `{"sessionId":"mem-s1"}`)
	noBlock("the compaction request", userTexts(f.Request(t, 3)))
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"mem-s1","prompt":"hello"},"id":10}`)
	until(t, c, 10)
	noBlock("the context after the compaction", userTexts(f.Request(t, 4)))
}

func TestEmbeddingsWorkFailAndAreReindexed(t *testing.T) {
	f := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"ok"}})
	h := fakeMemoryHome(t, f, `embeddings_provider = "fake"`)
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	put := func(id int, content string) string {
		return mcall(t, c, id, "memory/put", fmt.Sprintf(`{"agentAlias":"default","content":%q}`, content))["id"].(string)
	}
	embedded := func() map[string]bool {
		out := map[string]bool{}
		for _, m := range listMemories(t, c, "default") {
			out[m["id"].(string)] = m["embedded"] == true
		}
		return out
	}
	a := put(2, "the database runs on postgres sixteen")
	f.FailEmbeddings(500)
	b := put(3, "deploys happen on thursdays")
	f.FailEmbeddings(0)
	f.WrongEmbeddingSize(true)
	cc := put(4, "the office plant is a fern")
	if e := embedded(); !e[a] || e[b] || e[cc] {
		t.Fatalf("embedded: %v (want only %s)", e, a)
	}
	// Still wrong: the reindex reports what is missing.
	if r := mcall(t, c, 5, "memory/reindex", `{"agentAlias":"default"}`); r["embedded"] != float64(0) || r["missing"] != float64(2) {
		t.Fatalf("reindex against wrong sizes: %v", r)
	}
	f.WrongEmbeddingSize(false)
	c.send(`{"jsonrpc":"2.0","method":"memory/reindex","params":{"agentAlias":"default","progressToken":"t1"},"id":6}`)
	_, progress, resp := until(t, c, 6)
	if r := resp["result"].(map[string]any); r["embedded"] != float64(2) || r["missing"] != float64(0) {
		t.Fatalf("reindex: %v", resp)
	}
	if len(progress) == 0 {
		t.Fatal("no $/progress")
	}
	if last := progress[len(progress)-1]; last["progressToken"] != "t1" || last["progress"] != float64(2) || last["total"] != float64(2) {
		t.Fatalf("last $/progress %v", last)
	}
	if e := embedded(); !e[a] || !e[b] || !e[cc] {
		t.Fatalf("after the reindex: %v", e)
	}
	// A search scores by vector and keyword.
	res := mcall(t, c, 7, "memory/list", `{"agentAlias":"default","query":"postgres database"}`)
	first := res["memories"].([]any)[0].(map[string]any)
	if first["id"] != a || first["score"].(float64) <= 0.3 {
		t.Fatalf("search: %v", res)
	}

	// An embeddings endpoint failing at recall time: the turn goes on by keyword.
	f.FailEmbeddings(503)
	mcall(t, c, 8, "session/new", `{"agentAlias":"default"}`)
	sid := mcall(t, c, 9, "session/new", `{"agentAlias":"default"}`)["sessionId"].(string)
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"which database?"},"id":10}`)
	ups, _, resp := until(t, c, 10)
	if resp["result"].(map[string]any)["stopReason"] != "end_turn" || len(ofType(ups, "memory_recalled")) != 1 {
		t.Fatalf("a turn with failing embeddings: %v, %v", resp, ofType(ups, "memory_recalled"))
	}
	if got := userTexts(f.Request(t, f.Count()-1)); !strings.Contains(got[len(got)-1], "postgres") {
		t.Fatalf("recalled by keyword: %q", got)
	}
	if !strings.Contains(d.stderr.String(), "embedding a memory query failed") {
		t.Error("the failed query embedding was not logged")
	}
}

func TestMemoryBadInputNamesTheField(t *testing.T) {
	h := memoryHome(t, "")
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	long := strings.Repeat("x", 8001)
	for i, tc := range []struct{ method, params, field, reason string }{
		{"memory/put", `{"agentAlias":"default","content":""}`, "content", "empty"},
		{"memory/put", `{"agentAlias":"default","content":"` + long + `"}`, "content", "too_long"},
		{"memory/put", `{"agentAlias":"ghost","content":"x"}`, "agentAlias", "unknown_agent"},
		{"memory/put", `{"agentAlias":"default","content":"x","tags":["a b"]}`, "tags", "bad_tag"},
		{"memory/put", `{"content":"x"}`, "agentAlias", ""},
		{"memory/list", `{"agentAlias":"default","limit":1000}`, "limit", "out_of_range"},
		{"memory/list", `{"agentAlias":"default","cursor":"zz"}`, "cursor", "bad_cursor"},
		{"memory/delete", `{"id":"mem_nope"}`, "id", "not_found"},
		{"memory/reindex", `{"agentAlias":"default"}`, "agentAlias", "embeddings_off"},
	} {
		id := 100 + i
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s,"id":%d}`, tc.method, tc.params, id))
		_, _, resp := until(t, c, id)
		e, _ := resp["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		if e == nil || e["code"] != float64(-32602) || data["param"] != tc.field || (tc.reason != "" && data["reason"] != tc.reason) {
			t.Errorf("%s %.60s: %v, want -32602 naming %s (%s)", tc.method, tc.params, resp, tc.field, tc.reason)
		}
	}
	// 8000 characters are accepted.
	mcall(t, c, 200, "memory/put", `{"agentAlias":"default","content":"`+long[:8000]+`"}`)
}

func TestMemoryCommand(t *testing.T) {
	h := memoryHome(t, "")
	startDaemon(t, h, nil)
	out, errOut, code := zeroclaw(t, h, "memory", "add", "The staging host is build-3", "--key", "staging", "--tag", "infra")
	id := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(id, "mem_") {
		t.Fatalf("memory add: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, code := zeroclaw(t, h, "memory", "list"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "staging") || !strings.Contains(out, "infra") {
		t.Fatalf("memory list: exit %d\n%s", code, out)
	}
	if out, _, code := zeroclaw(t, h, "memory", "search", "staging host"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "1.00") {
		t.Fatalf("memory search: exit %d\n%s", code, out)
	}
	// Piped chat: the echo model was sent the recalled block.
	chat := command(h, "chat")
	chat.Stdin = strings.NewReader("where is staging?")
	chat.Env = append(chat.Env, "GORACE=atexit_sleep_ms=0")
	out, errOut, err := run(t, chat)
	if exitCode(err) != 0 || !strings.Contains(out, "staging: The staging host is build-3") {
		t.Fatalf("chat: %v\n%q\n%s", err, out, errOut)
	}
	if out, _, code := zeroclaw(t, h, "memory", "forget", id); code != 0 || !strings.Contains(out, "forgot "+id) {
		t.Fatalf("memory forget: exit %d\n%s", code, out)
	}
	if out, _, _ := zeroclaw(t, h, "memory", "list"); strings.TrimSpace(out) != "no memories" {
		t.Fatalf("memory list after forget: %q", out)
	}
	if _, errOut, code := zeroclaw(t, h, "memory", "forget", id); code == 0 || !strings.Contains(errOut, "-32602") {
		t.Fatalf("forgetting again: exit %d, %s", code, errOut)
	}
}

func TestATrimNeverTurnsTheRecallIntoHistory(t *testing.T) {
	f := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"ok"}})
	h := memoryHome(t, fmt.Sprintf("[providers.fake]\nkind = \"openai\"\nbase_url = %q\nmodel = \"m\"\napi_key = \"k\"\n\n"+
		"[agents.default]\nprovider = \"fake\"\nautonomy = \"full\"\nmax_context_messages = 4\n", f.URL()))
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	mcall(t, c, 2, "memory/put", `{"agentAlias":"default","content":"the kiwi crate is in bay four","key":"kiwi"}`)
	sid := mcall(t, c, 3, "session/new", `{"agentAlias":"default"}`)["sessionId"].(string)
	trimmed := 0
	for i := range 6 {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":%q,"prompt":"kiwi question %d"},"id":%d}`, sid, i, 10+i))
		ups, _, _ := until(t, c, 10+i)
		trimmed += len(ofType(ups, "history_trimmed"))
		if len(ofType(ups, "memory_recalled")) != 1 {
			t.Fatalf("turn %d recalled %v", i, ofType(ups, "memory_recalled"))
		}
	}
	if trimmed == 0 {
		t.Fatal("no trim happened")
	}
	for n := range f.Count() {
		users := userTexts(f.Request(t, n))
		for j, u := range users {
			if last := j == len(users)-1; strings.Contains(u, memoryBlock) != last {
				t.Fatalf("request %d, user message %d of %d: %q", n, j+1, len(users), u)
			}
		}
	}
}

func TestRecallLimitsOverTheSocket(t *testing.T) {
	f := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"ok"}})
	d := startDaemon(t, fakeMemoryHome(t, f, "recall_limit = 2"), nil)
	c := dial(t, d.socket)
	c.initialize()
	long := strings.Repeat("y", 1500)
	for i := range 4 {
		mcall(t, c, 2+i, "memory/put", fmt.Sprintf(`{"agentAlias":"default","content":"mango note %d %s","key":"m%d"}`, i, long, i))
	}
	sid := mcall(t, c, 9, "session/new", `{"agentAlias":"default"}`)["sessionId"].(string)
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"mango"},"id":10}`)
	ups, _, _ := until(t, c, 10)
	rec := ofType(ups, "memory_recalled")
	if len(rec) != 1 || len(rec[0]["entries"].([]any)) != 2 {
		t.Fatalf("recalled %v, want 2 entries", rec)
	}
	users := userTexts(f.Request(t, 0))
	block, prompt, _ := strings.Cut(users[0], "[/Memory context]\n\n")
	lines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(block, memoryBlock+"\n"), "\n"), "\n")
	if prompt != "mango" || len(lines) != 2 {
		t.Fatalf("the request's user message: %d lines, prompt %q", len(lines), prompt)
	}
	for _, l := range lines {
		_, content, _ := strings.Cut(l, ": ")
		if n := len([]rune(content)); n != 800 {
			t.Errorf("a recalled memory of %d characters, want it cut to 800", n)
		}
	}
}

// TestMemoriesOfOnePrincipalAreNotAnothers: two users, each over WSS with a
// pairing token of their own, and the operator on the local socket.
func TestMemoriesOfOnePrincipalAreNotAnothers(t *testing.T) {
	h := home(t)
	port := freePort(t)
	writeConfig(t, h, fmt.Sprintf(`[wss]
enabled = true
port = %d

[permission_profiles.rememberer]
grants = ["sessions:execute", "sessions:read", "memory:read", "memory:write"]
agents = ["default"]

[users.alice]
uid = 50001
permission_profiles = ["rememberer"]

[users.carol]
uid = 50002
permission_profiles = ["rememberer"]
`, port))
	startDaemon(t, h, nil)
	_, fp := pairToken(t, h)
	url := fmt.Sprintf("wss://127.0.0.1:%d", port)
	tokenOf := func(user string) string {
		out, errOut, code := zeroclaw(t, h, "pair", "--user", user)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || !strings.HasPrefix(lines[len(lines)-1], "zc_") {
			t.Fatalf("pair --user %s: exit %d\n%s%s", user, code, out, errOut)
		}
		return lines[len(lines)-1]
	}
	as := func(token string, args ...string) (string, string, int) {
		return zeroclaw(t, h, append(append([]string{}, args...), "--url", url, "--token", token, "--fingerprint", fp)...)
	}
	alice, carol := tokenOf("alice"), tokenOf("carol")
	out, errOut, code := as(alice, "memory", "add", "alice's locker code is 7781", "--key", "locker")
	id := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(id, "mem_") {
		t.Fatalf("alice's memory add: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, code := as(carol, "memory", "list"); code != 0 || strings.TrimSpace(out) != "no memories" {
		t.Fatalf("carol lists: exit %d\n%s", code, out)
	}
	if out, _, code := as(carol, "memory", "search", "locker code"); code != 0 || strings.TrimSpace(out) != "no memories" {
		t.Fatalf("carol searches: exit %d\n%s", code, out)
	}
	if _, errOut, code := as(carol, "memory", "forget", id); code == 0 || !strings.Contains(errOut, "not_found") {
		t.Fatalf("carol forgets alice's: exit %d\n%s", code, errOut)
	}
	// carol's turn recalls nothing of alice's (the echo model repeats what it is sent).
	chat := command(h, "chat", "--url", url, "--token", carol, "--fingerprint", fp)
	chat.Stdin = strings.NewReader("what is the locker code?")
	chat.Env = append(chat.Env, "GORACE=atexit_sleep_ms=0")
	out, errOut, err := run(t, chat)
	if exitCode(err) != 0 || strings.Contains(out, "7781") {
		t.Fatalf("carol's chat: %v\n%q\n%s", err, out, errOut)
	}
	chat = command(h, "chat", "--url", url, "--token", alice, "--fingerprint", fp)
	chat.Stdin = strings.NewReader("what is the locker code?")
	chat.Env = append(chat.Env, "GORACE=atexit_sleep_ms=0")
	if out, errOut, err := run(t, chat); exitCode(err) != 0 || !strings.Contains(out, "- locker: alice's locker code is 7781") {
		t.Fatalf("alice's chat: %v\n%q\n%s", err, out, errOut)
	}
	// The operator (an admin, on the local socket) sees it, with its owner.
	if out, _, code := zeroclaw(t, h, "rpc", "memory/list", `{"agentAlias":"default"}`); code != 0 || !strings.Contains(out, `"owner": "user:alice"`) {
		t.Fatalf("the operator's memory/list: exit %d\n%s", code, out)
	}
}
