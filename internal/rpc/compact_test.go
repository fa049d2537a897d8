package rpc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeanthropic"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// modelFake is what the compaction tests need of either provider fake: a script
// of text answers (or a held one), the requests it got, as role:text lines.
type modelFake struct {
	kind    string
	url     string
	request func(t *testing.T, n int) (system string, msgs []string)
	count   func() int
}

// long is a text the summary is much shorter than.
var long = strings.Repeat("a detail worth keeping in mind ", 40)

func openaiFake(t *testing.T, answers ...string) modelFake {
	var script []fakeopenai.Answer
	for _, a := range answers {
		if a == "HOLD" {
			script = append(script, fakeopenai.Answer{Hold: true})
			continue
		}
		script = append(script, fakeopenai.Answer{Text: []string{a}})
	}
	f := fakeopenai.New(t, script...)
	return modelFake{kind: "openai", url: f.URL(), count: f.Count, request: func(t *testing.T, n int) (string, []string) {
		var system string
		var out []string
		for _, m := range fakeopenai.Messages(f.Request(t, n)) {
			if m["role"] == "system" {
				system = fmt.Sprint(m["content"])
				continue
			}
			out = append(out, fmt.Sprint(m["role"], ":", m["content"]))
		}
		return system, out
	}}
}

func anthropicFake(t *testing.T, answers ...string) modelFake {
	var script []fakeanthropic.Answer
	for _, a := range answers {
		if a == "HOLD" {
			script = append(script, fakeanthropic.Answer{Hold: true})
			continue
		}
		script = append(script, fakeanthropic.Answer{Text: []string{a}})
	}
	f := fakeanthropic.New(t, script...)
	return modelFake{kind: "anthropic", url: f.URL(), count: f.Count, request: func(t *testing.T, n int) (string, []string) {
		req := f.Request(t, n)
		system := ""
		switch s := req["system"].(type) {
		case string:
			system = s
		case []any:
			for _, b := range s {
				system += fmt.Sprint(b.(map[string]any)["text"])
			}
		}
		var out []string
		for _, m := range fakeanthropic.Messages(req) {
			var text []string
			for _, b := range fakeanthropic.Blocks(m) {
				text = append(text, fmt.Sprint(b["text"]))
			}
			out = append(out, fmt.Sprint(m["role"], ":", strings.Join(text, "")))
		}
		return system, out
	}}
}

func compactServer(t *testing.T, f modelFake) *harness {
	conf := agentsConfig()
	conf.Providers["fake"] = config.Provider{Kind: f.kind, BaseURL: f.url, Model: "m", APIKey: "k"}
	conf.Agents["fake"] = config.Agent{Provider: "fake", Autonomy: config.Full}
	return startServerWith(t, Config{}, conf, session.Options{})
}

func bothFakes(t *testing.T, run func(t *testing.T, make func(t *testing.T, answers ...string) modelFake)) {
	t.Run("openai", func(t *testing.T) { run(t, openaiFake) })
	t.Run("anthropic", func(t *testing.T) { run(t, anthropicFake) })
}

func TestCompactionReplacesTheContextWithTheModelsSummary(t *testing.T) {
	bothFakes(t, func(t *testing.T, mk func(t *testing.T, answers ...string) modelFake) {
		f := mk(t, long, "the short summary", "fine")
		h := compactServer(t, f)
		p, q := h.peer(t, ""), h.peer(t, "")
		sid := p.newSession(`{"agentAlias":"fake"}`)
		q.must("session/attach", fmt.Sprintf(`{"sessionId":%q}`, sid))
		p.must("session/prompt", prompt(sid, "tell me everything"))
		p.drain()

		res := p.must("session/compact", fmt.Sprintf(`{"sessionId":%q,"instructions":"keep the details"}`, sid))
		before, after := res["before"].(float64), res["after"].(float64)
		if res["compacted"] != true || after >= before ||
			before != float64(len("tell me everything")+len(long)) ||
			after != float64(len(session.CompactedPrompt)+len("the short summary")) {
			t.Fatalf("session/compact = %v", res)
		}
		t.Logf("%s: compacted %v -> %v characters", f.kind, before, after)
		// The model got the retained context, then the request with the instructions.
		system, msgs := f.request(t, 1)
		if len(msgs) != 3 || msgs[0] != "user:tell me everything" || msgs[1] != "assistant:"+long ||
			!strings.HasPrefix(msgs[2], "user:"+session.CompactRequest) || !strings.HasSuffix(msgs[2], "keep the details") {
			t.Errorf("the summary request's messages: %q", msgs)
		}
		if !strings.Contains(system, "summary") {
			t.Errorf("the summary request's system prompt: %q", system)
		}
		for name, c := range map[string]*peer{"caller": p, "other": q} {
			u := c.updateOf("history_compacted")
			if u["before"] != before || u["after"] != after || u["seq"] == nil {
				t.Errorf("%s: history_compacted = %v", name, u)
			}
			if _, has := u["turnId"]; has {
				t.Errorf("%s: history_compacted carries a turnId", name)
			}
		}
		if n := len(p.drain()); n != 0 {
			t.Errorf("the compaction streamed %d more updates", n)
		}
		// The next turn's context is the summary; the transcript keeps every row.
		p.must("session/prompt", prompt(sid, "go on"))
		_, msgs = f.request(t, 2)
		if strings.Join(msgs, " | ") != "user:"+session.CompactedPrompt+" | assistant:the short summary | user:go on" {
			t.Errorf("after compaction the model got %q", msgs)
		}
		if m := p.must("session/messages", fmt.Sprintf(`{"sessionId":%q}`, sid)); m["total"] != float64(4) {
			t.Errorf("the transcript after compaction has %v rows, want 4", m["total"])
		}
	})
}

func TestACompactionThatIsNotSmallerLeavesTheContext(t *testing.T) {
	bothFakes(t, func(t *testing.T, mk func(t *testing.T, answers ...string) modelFake) {
		f := mk(t, "short", long, "fine")
		h := compactServer(t, f)
		p := h.peer(t, "")
		sid := p.newSession(`{"agentAlias":"fake"}`)
		p.must("session/prompt", prompt(sid, "hi"))
		res := p.must("session/compact", fmt.Sprintf(`{"sessionId":%q}`, sid))
		if res["compacted"] != false || res["before"] != res["after"] || res["before"] != float64(len("hi")+len("short")) {
			t.Fatalf("session/compact = %v", res)
		}
		p.must("session/prompt", prompt(sid, "again"))
		_, msgs := f.request(t, 2)
		if strings.Join(msgs, " | ") != "user:hi | assistant:short | user:again" {
			t.Errorf("after an uncompacted compaction the model got %q", msgs)
		}
		for _, u := range p.drain() {
			if u["type"] == "history_compacted" {
				t.Errorf("history_compacted sent for a summary that was not smaller: %v", u)
			}
		}
	})
}

func TestCancelStopsACompactionMidSummary(t *testing.T) {
	bothFakes(t, func(t *testing.T, mk func(t *testing.T, answers ...string) modelFake) {
		f := mk(t, long, "HOLD", "fine")
		h := compactServer(t, f)
		p := h.peer(t, "")
		sid := p.newSession(`{"agentAlias":"fake"}`)
		p.must("session/prompt", prompt(sid, "hi"))
		done := p.start("session/compact", fmt.Sprintf(`{"sessionId":%q}`, sid))
		f.request(t, 1) // the summary is being asked for
		if r := p.must("session/cancel", fmt.Sprintf(`{"sessionId":%q}`, sid)); r["cancelled"] != true {
			t.Fatalf("session/cancel = %v", r)
		}
		res, err := p.await(done)
		if err != nil || res["compacted"] != false || res["cancelled"] != true || res["before"] != res["after"] {
			t.Fatalf("the cancelled compaction answered %v, %v", res, err)
		}
		p.must("session/prompt", prompt(sid, "again"))
		_, msgs := f.request(t, 2)
		if len(msgs) != 3 || msgs[0] != "user:hi" || msgs[2] != "user:again" {
			t.Errorf("after a cancelled compaction the model got %q", msgs)
		}
	})
}

func TestCompactionOperationIDsAreSharedWithPrompts(t *testing.T) {
	f := openaiFake(t, long, "sum", "fine")
	h := compactServer(t, f)
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	p.must("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":"hi","operationId":"p1"}`, sid))
	first := p.must("session/compact", fmt.Sprintf(`{"sessionId":%q,"operationId":"c1"}`, sid))
	again := p.must("session/compact", fmt.Sprintf(`{"sessionId":%q,"operationId":"c1"}`, sid))
	delete(first, "_n")
	delete(again, "_n")
	if fmt.Sprint(first) != fmt.Sprint(again) || first["compacted"] != true {
		t.Errorf("a repeated compaction answered %v, the first %v", again, first)
	}
	if n := f.count(); n != 2 {
		t.Errorf("the model was called %d times, want 2 (one prompt, one summary)", n)
	}
	_, err := p.call("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":"x","operationId":"c1"}`, sid))
	if e := wantCode(t, err, -32602); e.Data["reason"] != "operation_id_taken" {
		t.Errorf("a prompt with a compaction's id: %v", e)
	}
	_, err = p.call("session/compact", fmt.Sprintf(`{"sessionId":%q,"operationId":"p1"}`, sid))
	wantCode(t, err, -32602)
	_, err = p.call("session/compact", fmt.Sprintf(`{"sessionId":%q,"operationId":""}`, sid))
	wantCode(t, err, -32602)
}

func TestForkCopiesTheSessionAndGoesOnByItself(t *testing.T) {
	f := openaiFake(t, "one", "two", "three")
	h := compactServer(t, f)
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	p.must("session/prompt", prompt(sid, "first"))
	p.must("session/set", fmt.Sprintf(`{"sessionId":%q,"mode":"readonly"}`, sid))
	fork := p.must("session/fork", fmt.Sprintf(`{"sessionId":%q,"title":"the other way"}`, sid))["sessionId"].(string)
	if fork == sid || fork == "" {
		t.Fatalf("fork id %q", fork)
	}
	msgs := p.must("session/messages", fmt.Sprintf(`{"sessionId":%q}`, fork))
	if msgs["total"] != float64(2) {
		t.Errorf("the fork's transcript: %v", msgs)
	}
	r := p.must("session/set", fmt.Sprintf(`{"sessionId":%q}`, fork))
	if r["mode"] != "readonly" || r["title"] != "the other way" {
		t.Errorf("the fork's controls: %v", r)
	}
	p.must("session/prompt", prompt(fork, "second in the fork"))
	_, got := f.request(t, 1)
	if strings.Join(got, " | ") != "user:first | assistant:one | user:second in the fork" {
		t.Errorf("the fork's model call got %q", got)
	}
	p.must("session/prompt", prompt(sid, "second in the source"))
	_, got = f.request(t, 2)
	if strings.Join(got, " | ") != "user:first | assistant:one | user:second in the source" {
		t.Errorf("the source's model call got %q", got)
	}
	_, err := p.call("session/fork", fmt.Sprintf(`{"sessionId":%q,"title":""}`, sid))
	wantCode(t, err, -32602)
}
