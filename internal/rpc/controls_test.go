package rpc

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// fakeAgentServer serves agent "fake" (supervised) on an openai provider backed by
// fake, with a context window of 1000.
func fakeAgentServer(t *testing.T, fake *fakeopenai.Server, opts session.Options) *harness {
	conf := agentsConfig()
	conf.Providers["fake"] = config.Provider{Kind: "openai", BaseURL: fake.URL(), Model: "m", ContextWindow: 1000}
	conf.Agents["fake"] = config.Agent{Provider: "fake", Autonomy: config.Supervised}
	return startServerWith(t, Config{}, conf, opts)
}

func TestSessionSetAppliesFromTheNextModelCallAndTellsEveryAttachedClient(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"ok"}}).SetModels(0, "m", "m2")
	h := fakeAgentServer(t, fake, session.Options{})
	p, q := h.peer(t, ""), h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	q.must("session/attach", fmt.Sprintf(`{"sessionId":%q}`, sid))

	res := p.must("session/set", fmt.Sprintf(`{"sessionId":%q,"model":"m2","mode":"readonly","title":"Refactor the parser"}`, sid))
	if res["model"] != "m2" || res["mode"] != "readonly" || res["title"] != "Refactor the parser" || res["sessionId"] != sid {
		t.Fatalf("session/set = %v", res)
	}
	for name, c := range map[string]*peer{"the caller": p, "the other client": q} {
		u := c.updateOf("session_info")
		if u["model"] != "m2" || u["mode"] != "readonly" || u["title"] != "Refactor the parser" || u["seq"] == nil {
			t.Errorf("%s got session_info %v", name, u)
		}
		if _, has := u["turnId"]; has {
			t.Errorf("%s: session_info carries a turnId: %v", name, u)
		}
	}

	// It is kept for replay: a client attaching later with afterSeq gets it.
	late := h.peer(t, "")
	late.must("session/attach", fmt.Sprintf(`{"sessionId":%q,"afterSeq":0}`, sid))
	if u := late.updateOf("session_info"); u["model"] != "m2" {
		t.Errorf("the replayed session_info = %v", u)
	}

	r := p.must("session/prompt", prompt(sid, "hello"))
	if got := fake.Request(t, 0)["model"]; got != "m2" {
		t.Errorf("the model call asked for %v, want m2", got)
	}
	if u := r["usage"].(map[string]any); u["inputTokens"] != float64(3) || u["outputTokens"] != float64(2) {
		t.Errorf("prompt usage = %v, want the fake's 3 in, 2 out", u)
	}
	usage := p.updateOf("usage")
	if usage["inputTokens"] != float64(3) || usage["outputTokens"] != float64(2) || usage["contextTokens"] != float64(5) ||
		usage["contextWindow"] != float64(1000) || usage["turnId"] != r["turnId"] {
		t.Errorf("usage update = %v", usage)
	}
	list := p.must("models/list", fmt.Sprintf(`{"sessionId":%q}`, sid))
	if list["source"] != "provider" || fmt.Sprint(list["models"]) != "[map[current:false id:m] map[current:true id:m2]]" {
		t.Errorf("models/list = %v", list)
	}
	entries := p.must("session/list", "")["sessions"].([]any)
	e := entries[0].(map[string]any)
	if e["title"] != "Refactor the parser" || fmt.Sprint(e["usage"]) != "map[inputTokens:3 outputTokens:2]" {
		t.Errorf("session/list entry = %v", e)
	}

	// Setting what is already set sends nothing; the next change does.
	p.must("session/set", fmt.Sprintf(`{"sessionId":%q,"model":"m2"}`, sid))
	p.must("session/set", fmt.Sprintf(`{"sessionId":%q,"mode":"supervised"}`, sid))
	if u := q.updateOf("session_info"); u["mode"] != "supervised" || u["model"] != "m2" {
		t.Errorf("the second session_info = %v", u)
	}
}

func TestSessionSetRefusesBadValues(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"ok"}}).SetModels(0, "m", "m2")
	h := fakeAgentServer(t, fake, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	set := func(members string) error {
		_, err := p.call("session/set", fmt.Sprintf(`{"sessionId":%q,%s}`, sid, members))
		return err
	}
	e := wantCode(t, set(`"model":"gpt-nope"`), -32602)
	if fmt.Sprint(e.Data["models"]) != "[m m2]" || e.Data["param"] != "model" {
		t.Errorf("unknown model: %v", e)
	}
	for _, members := range []string{`"mode":"yolo"`, `"title":""`, `"title":"  "`, `"title":"two\nlines"`,
		`"title":` + quote(strings.Repeat("é", 201))} {
		wantCode(t, set(members), -32602)
	}
	if err := set(`"title":` + quote(strings.Repeat("é", 200))); err != nil {
		t.Errorf("a title of 200 characters: %v", err)
	}
	_, err := p.call("session/set", `{"sessionId":"no-such-session","mode":"full"}`)
	wantCode(t, err, -32000)
	_, err = p.call("session/set", `{"mode":"full"}`)
	wantCode(t, err, -32602)
}

func TestAModeMorePermissiveThanTheAgentNeedsAnAdmin(t *testing.T) {
	s := newConfServer(t, roster+`
[agents.sup]
provider = "echo"
autonomy = "supervised"

[permission_profiles.runner2]
grants = ["sessions:execute", "sessions:read"]
agents = ["sup"]

[users.carol]
uid = 4545
permission_profiles = ["runner2"]
`)
	carol := s.as(4545).peer(t, "")
	sid := carol.newSession(`{"agentAlias":"sup"}`)
	_, err := carol.call("session/set", fmt.Sprintf(`{"sessionId":%q,"mode":"full"}`, sid))
	if e := wantCode(t, err, -32012); e.Data["reason"] != "mode_not_allowed" {
		t.Errorf("escalation by a non-admin: %v", e)
	}
	if r := carol.must("session/set", fmt.Sprintf(`{"sessionId":%q,"mode":"readonly"}`, sid)); r["mode"] != "readonly" {
		t.Errorf("a less permissive mode: %v", r)
	}
	if r := carol.must("session/set", fmt.Sprintf(`{"sessionId":%q,"mode":"supervised"}`, sid)); r["mode"] != "supervised" {
		t.Errorf("back to the agent's own: %v", r)
	}
	// The operator (an admin) may choose full on carol's session; carol then runs with it.
	op := s.operator(t)
	if r := op.must("session/set", fmt.Sprintf(`{"sessionId":%q,"mode":"full"}`, sid)); r["mode"] != "full" {
		t.Errorf("the admin's escalation: %v", r)
	}

	// Another principal's session answers like a missing one, for every new method.
	opSID := op.newSession(`{"agentAlias":"sup","sessionId":"op-owned"}`)
	for _, call := range []struct{ method, params string }{
		{"session/set", fmt.Sprintf(`{"sessionId":%q,"title":"mine now"}`, opSID)},
		{"models/list", fmt.Sprintf(`{"sessionId":%q}`, opSID)},
		{"session/compact", fmt.Sprintf(`{"sessionId":%q}`, opSID)},
		{"session/fork", fmt.Sprintf(`{"sessionId":%q}`, opSID)},
	} {
		_, err := carol.call(call.method, call.params)
		_, missingErr := carol.call(call.method, strings.ReplaceAll(call.params, opSID, "no-such-session"))
		e, m := wantCode(t, err, -32000), wantCode(t, missingErr, -32000)
		if strings.ReplaceAll(e.Message, opSID, "ID") != strings.ReplaceAll(m.Message, "no-such-session", "ID") {
			t.Errorf("%s: another's session (%v) answers unlike a missing one (%v)", call.method, e, m)
		}
	}
	// models/list of an agent carol may not use.
	_, err = carol.call("models/list", `{"agentAlias":"full"}`)
	wantCode(t, err, -32012)
}

func TestModelsListSources(t *testing.T) {
	listing := fakeopenai.New(t).SetModels(0, "a", "b")
	failing := fakeopenai.New(t).SetModels(500)
	conf := agentsConfig()
	conf.Providers["listing"] = config.Provider{Kind: "openai", BaseURL: listing.URL(), Model: "a"}
	conf.Providers["failing"] = config.Provider{Kind: "openai", BaseURL: failing.URL(), Model: "solo"}
	conf.Providers["listed"] = config.Provider{Kind: "openai", BaseURL: failing.URL(), Model: "x", Models: []string{"x", "y"}}
	conf.Providers["lacking"] = config.Provider{Kind: "openai", BaseURL: listing.URL(), Model: "own"}
	for _, name := range []string{"listing", "failing", "listed", "lacking"} {
		conf.Agents[name] = config.Agent{Provider: name}
	}
	h := startServerWith(t, Config{}, conf, session.Options{})
	p := h.peer(t, "")
	for alias, want := range map[string]string{
		"default": "default: [map[current:true id:echo]]",
		"listing": "provider: [map[current:true id:a] map[current:false id:b]]",
		"failing": "default: [map[current:true id:solo]]",
		"listed":  "config: [map[current:true id:x] map[current:false id:y]]",
		// The provider's list lacks the agent's own model: it is added, first.
		"lacking": "provider: [map[current:true id:own] map[current:false id:a] map[current:false id:b]]",
	} {
		r := p.must("models/list", fmt.Sprintf(`{"agentAlias":%q}`, alias))
		if got := fmt.Sprintf("%v: %v", r["source"], r["models"]); got != want {
			t.Errorf("%s: %s, want %s", alias, got, want)
		}
	}
	p.must("models/list", `{"agentAlias":"listing"}`)
	if n := listing.ModelListings(); n != 2 { // one per provider entry ("listing", "lacking")
		t.Errorf("the provider was asked %d times, want once per provider entry (cached)", n)
	}
	if n := failing.ModelListings(); n != 1 {
		t.Errorf("the failing provider was asked %d times, want once (its failure is remembered)", n)
	}
	for _, params := range []string{`{}`, `{"agentAlias":"default","sessionId":"x"}`, `{"agentAlias":"nope"}`} {
		_, err := p.call("models/list", params)
		wantCode(t, err, -32602)
	}
}

func TestControlsAndUsageTotalsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	open := func() *store.Store {
		st, err := store.Open(dir+"/sessions.db", store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open()
	h := startServerWith(t, Config{}, agentsConfig(), session.Options{Store: st})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"full","sessionId":"ctl-1"}`)
	p.must("session/set", `{"sessionId":"ctl-1","mode":"readonly","title":"kept"}`)
	p.must("session/prompt", prompt(sid, "one two three"))
	p.conn.Close()
	h.stop(t)
	st.Close()

	st2 := open()
	defer st2.Close()
	h2 := startServerWith(t, Config{}, agentsConfig(), session.Options{Store: st2})
	q := h2.peer(t, "")
	e := q.must("session/list", "")["sessions"].([]any)[0].(map[string]any)
	if e["title"] != "kept" || fmt.Sprint(e["usage"]) != "map[inputTokens:3 outputTokens:4]" {
		t.Errorf("after the restart the entry is %v", e)
	}
	// The restored session runs read-only: a write is refused without asking.
	q.must("session/new", `{"agentAlias":"full","sessionId":"ctl-1"}`)
	q.must("session/prompt", prompt(sid, `/tool write_file {"path":"x","content":"y"}`))
	r := q.updateOf("tool_result")
	if !strings.Contains(fmt.Sprint(r["rawOutput"]), "read-only") {
		t.Errorf("the restored session's write: %v", r)
	}
	if _, err := os.Stat(dir + "/x"); err == nil {
		t.Error("the write ran")
	}
	if r := q.must("session/set", `{"sessionId":"ctl-1","title":"kept"}`); r["mode"] != "readonly" {
		t.Errorf("controls after the restart: %v", r)
	}
}
