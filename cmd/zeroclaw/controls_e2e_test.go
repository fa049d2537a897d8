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

// TestSessionControlsSurviveKill9: what session/set chose, the usage totals and a
// compaction are durable: after SIGKILL and a restart the session has its mode,
// model and title, session/list its title and totals, and the model is sent the
// compacted context with the chosen model.
func TestSessionControlsSurviveKill9(t *testing.T) {
	long := "a long answer with many details to keep in mind, repeated to take room. "
	fake := fakeopenai.New(t, fakeopenai.Answer{Text: []string{long, long, long}},
		fakeopenai.Answer{Text: []string{"the summary"}}, fakeopenai.Answer{Text: []string{"after"}}).SetModels(0, "m", "m-big")
	h := home(t)
	os.MkdirAll(filepath.Join(h, ".zeroclaw"), 0o700)
	conf := fmt.Sprintf("[providers.fake]\nkind = \"openai\"\nbase_url = %q\nmodel = \"m\"\n\n"+
		"[agents.default]\nprovider = \"fake\"\n", fake.URL())
	os.WriteFile(filepath.Join(h, ".zeroclaw", "config.toml"), []byte(conf), 0o600)

	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	c.must("session/new", `{"agentAlias":"default","sessionId":"ctl-e2e"}`)
	c.must("session/set", `{"sessionId":"ctl-e2e","mode":"readonly","model":"m-big","title":"Survives"}`)
	c.must("session/prompt", `{"sessionId":"ctl-e2e","prompt":"tell me"}`)
	r := c.must("session/compact", `{"sessionId":"ctl-e2e"}`)
	if r["compacted"] != true {
		t.Fatalf("session/compact = %v", r)
	}
	kill9(t, d)

	d2 := startDaemon(t, h, nil)
	c2 := dial(t, d2.socket)
	c2.initialize()
	list := c2.must("session/list", `{}`)["sessions"].([]any)
	e := list[0].(map[string]any)
	if e["title"] != "Survives" || fmt.Sprint(e["usage"]) != "map[inputTokens:6 outputTokens:4]" {
		t.Errorf("after kill -9 the list entry is %v (want the set title; 3+2 tokens per model call, two calls)", e)
	}
	got := c2.must("session/set", `{"sessionId":"ctl-e2e"}`)
	if got["mode"] != "readonly" || got["model"] != "m-big" || got["title"] != "Survives" {
		t.Errorf("after kill -9 the controls are %v", got)
	}
	c2.must("session/prompt", `{"sessionId":"ctl-e2e","prompt":"go on"}`)
	req := fake.Request(t, 2)
	if req["model"] != "m-big" {
		t.Errorf("after kill -9 the model call asked for %v", req["model"])
	}
	if got := roleContents(req); got != "user:Summarise our conversation so far. | assistant:the summary | user:go on" {
		t.Errorf("after kill -9 the model got %s", got)
	}
}

// TestRPCCommandServesTheSessionControls: `zeroclaw rpc` calls the new methods by
// name, results on stdout, errors (with their data) on stderr.
func TestRPCCommandServesTheSessionControls(t *testing.T) {
	h := home(t)
	startDaemon(t, h, nil)
	out, _, err := run(t, command(h, "rpc", "session/new", `{"agentAlias":"default","sessionId":"rpc-ctl"}`))
	if err != nil {
		t.Fatalf("session/new: %v\n%s", err, out)
	}
	for _, c := range []struct{ method, params, want string }{
		{"models/list", `{"agentAlias":"default"}`, `"source": "default"`},
		{"session/set", `{"sessionId":"rpc-ctl","mode":"readonly","title":"From the CLI"}`, `"title": "From the CLI"`},
		{"session/prompt", `{"sessionId":"rpc-ctl","prompt":"one two three four five six seven eight"}`, `"inputTokens": 8`},
		{"session/compact", `{"sessionId":"rpc-ctl","instructions":"short"}`, `"compacted": `},
		{"session/fork", `{"sessionId":"rpc-ctl"}`, `"sessionId": "`},
	} {
		out, errOut, err := run(t, command(h, "rpc", c.method, c.params))
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("rpc %s: %v\n%s%s", c.method, err, out, errOut)
		}
	}
	_, errOut, err := run(t, command(h, "rpc", "session/set", `{"sessionId":"rpc-ctl","model":"nope"}`))
	if exitCode(err) != 1 || !strings.Contains(errOut, `"code":-32602`) || !strings.Contains(errOut, `"models":["echo"]`) {
		t.Errorf("rpc session/set with an unknown model: exit %v, stderr %q", err, errOut)
	}
}
