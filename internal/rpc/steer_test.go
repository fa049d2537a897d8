package rpc

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/wait"
)

// steerServer serves agent "fake" (supervised: write_file waits for an approval)
// on a fake OpenAI endpoint with script.
func steerServer(t *testing.T, script ...fakeopenai.Answer) (*harness, *fakeopenai.Server) {
	f := fakeopenai.New(t, script...)
	conf := agentsConfig()
	conf.Providers["fake"] = config.Provider{Kind: "openai", BaseURL: f.URL(), Model: "m", APIKey: "k"}
	conf.Agents["fake"] = config.Agent{Provider: "fake"}
	return startServerWith(t, Config{}, conf, session.Options{}), f
}

func steer(sid, text, expected string) string {
	if expected == "" {
		return fmt.Sprintf(`{"sessionId":%q,"text":%s}`, sid, quote(text))
	}
	return fmt.Sprintf(`{"sessionId":%q,"text":%s,"expectedTurnId":%q}`, sid, quote(text), expected)
}

// waitSteerQueued polls, with a deadline, until n steers wait in the session's
// running turn.
func waitSteerQueued(t *testing.T, h *harness, sid string, n int) {
	t.Helper()
	s, err := h.srv.cfg.Sessions.Get(sid, session.Caller{Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	wait.For(t, fmt.Sprintf("%d steers waiting in the turn", n), 30*time.Second, func() bool { return s.SteersWaiting() >= n })
}

// reqLines is a request's messages as role:content lines.
func reqLines(req map[string]any) []string {
	var out []string
	for _, m := range fakeopenai.Messages(req) {
		if m["role"] == "system" {
			continue
		}
		out = append(out, fmt.Sprint(m["role"], ":", m["content"]))
	}
	return out
}

// withoutFiller leaves out the assistant message the openai adapter puts between
// tool results and a user message.
func withoutFiller(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l != "assistant:"+provider.StoppedReply && l != "assistant:"+provider.SteeredReply {
			out = append(out, l)
		}
	}
	return out
}

func TestASteerJoinsTheRunningTurnAfterTheToolResultBeforeTheNextModelCall(t *testing.T) {
	h, f := steerServer(t,
		fakeopenai.Answer{Calls: []fakeopenai.Call{{Name: "write_file", Args: `{"path":"a.txt","content":"x"}`}}},
		fakeopenai.Answer{Text: []string{"done, and also blue"}})
	p, q := h.peer(t, ""), h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	q.must("session/attach", fmt.Sprintf(`{"sessionId":%q}`, sid))
	done := p.start("session/prompt", prompt(sid, "write a.txt"))
	approval := p.updateOf("approval_request")
	turnID := approval["turnId"].(string)

	steered := q.start("session/steer", steer(sid, "make it blue", turnID))
	waitSteerQueued(t, h, sid, 1)
	approve(t, p, sid, approval["requestId"])
	res, err := q.await(steered)
	if err != nil || res["outcome"] != "injected" || res["turnId"] != turnID {
		t.Fatalf("session/steer = %v, %v", res, err)
	}
	pr, err := p.await(done)
	if err != nil || pr["stopReason"] != "end_turn" || pr["turnId"] != turnID {
		t.Fatalf("the prompt answered %v, %v", pr, err)
	}
	if n := f.Count(); n != 2 {
		t.Fatalf("the turn made %d model calls, want 2", n)
	}
	// The next request: the prompt, the call, its result, then the steer (with the
	// adapter's filler between a result and a user message, docs/protocol.md
	// "Remote providers").
	if all := reqLines(f.Request(t, 1)); len(all) != 5 || all[3] != "assistant:"+provider.SteeredReply {
		t.Errorf("between the tool result and the steer the model was sent %q, want the steered filler", all)
	}
	got := withoutFiller(reqLines(f.Request(t, 1)))
	if len(got) != 4 || got[0] != "user:write a.txt" || !strings.HasPrefix(got[2], "tool:") || got[3] != "user:make it blue" {
		t.Errorf("the model call after the tool result was sent %q", got)
	}
	// Every client saw the steer as a user_message of the turn, steered, after the
	// tool's result and before the answer.
	for name, c := range map[string]*peer{"prompter": p, "other": q} {
		_, before := c.until("agent_message_chunk")
		var order []string
		for _, u := range before {
			switch u["type"] {
			case "tool_result":
				order = append(order, "tool_result")
			case "user_message":
				if u["steered"] == true {
					if u["text"] != "make it blue" || u["turnId"] != turnID {
						t.Errorf("%s: steered user_message %v", name, u)
					}
					if c == q && u["_n"].(float64) > res["_n"].(float64) {
						t.Errorf("the steering connection got the answer before the steered user_message")
					}
					order = append(order, "steered")
				}
			}
		}
		if s := strings.Join(order, " "); s != "tool_result steered" {
			t.Errorf("%s saw %q before the answer", name, s)
		}
	}
	m := p.must("session/messages", fmt.Sprintf(`{"sessionId":%q}`, sid))
	var rows []string
	for _, r := range m["messages"].([]any) {
		row := r.(map[string]any)
		rows = append(rows, fmt.Sprint(row["role"], ":", row["text"]))
	}
	want := []string{"user:write a.txt", "tool_call:", "tool_result:", "user:make it blue", "assistant:done, and also blue"}
	if len(rows) != len(want) {
		t.Fatalf("transcript %q", rows)
	}
	for i, w := range want {
		if !strings.HasPrefix(rows[i], w) {
			t.Errorf("transcript row %d = %q, want %q…", i, rows[i], w)
		}
	}
	// The context keeps it in that order too.
	p.must("session/prompt", prompt(sid, "thanks"))
	got = withoutFiller(reqLines(f.Request(t, 2)))
	if len(got) != 6 || got[3] != "user:make it blue" || got[4] != "assistant:done, and also blue" || got[5] != "user:thanks" {
		t.Errorf("the next turn's context %q", got)
	}
}

func TestASteerWithNoTurnRunningStartsOne(t *testing.T) {
	h, f := steerServer(t, fakeopenai.Answer{Text: []string{"first answer"}})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	// No turn runs: the steer starts one, like session/prompt, and answers once it began.
	res := p.must("session/steer", steer(sid, "hello there", ""))
	if res["outcome"] != "startedTurn" || res["turnId"] == "" {
		t.Fatalf("session/steer with no turn = %v", res)
	}
	u := p.updateOf("user_message")
	if u["text"] != "hello there" || u["turnId"] != res["turnId"] || u["steered"] != nil {
		t.Errorf("the started turn's user_message %v", u)
	}
	waitIdle(t, p, sid)
	if got := reqLines(f.Request(t, 0)); len(got) != 1 || got[0] != "user:hello there" {
		t.Errorf("the started turn sent %q", got)
	}
}

// waitIdle polls session/list, with a deadline, until the session is idle.
func waitIdle(t *testing.T, p *peer, sid string) {
	t.Helper()
	wait.For(t, "the session to be idle", 30*time.Second, func() bool {
		for _, e := range p.must("session/list", "")["sessions"].([]any) {
			if e := e.(map[string]any); e["sessionId"] == sid && e["state"] == "idle" {
				return true
			}
		}
		return false
	})
}

func TestSteerRefusesBadInputAndStoresNothing(t *testing.T) {
	h, f := steerServer(t,
		fakeopenai.Answer{Calls: []fakeopenai.Call{{Name: "write_file", Args: `{"path":"a.txt","content":"x"}`}}},
		fakeopenai.Answer{Text: []string{"ok"}})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	for _, params := range []string{
		fmt.Sprintf(`{"sessionId":%q,"text":""}`, sid),
		fmt.Sprintf(`{"sessionId":%q,"text":"  \n"}`, sid),
		fmt.Sprintf(`{"sessionId":%q}`, sid),
	} {
		if _, err := p.call("session/steer", params); codeOf(err) != -32602 {
			t.Errorf("session/steer %s: %v, want -32602", params, err)
		}
	}
	if _, err := p.call("session/steer", steer("nosuchsession", "hi", "")); codeOf(err) != -32000 {
		t.Errorf("steer of an unknown session: %v, want -32000", err)
	}
	// A stale expectedTurnId while a turn runs: -32602 naming the running turn.
	done := p.start("session/prompt", prompt(sid, "write a.txt"))
	approval := p.updateOf("approval_request")
	_, err := p.call("session/steer", steer(sid, "late", "turn_stale"))
	e, _ := err.(*rpcError)
	if e == nil || e.Code != -32602 || e.Data["turnId"] != approval["turnId"] {
		t.Errorf("stale expectedTurnId: %v", err)
	}
	approve(t, p, sid, approval["requestId"])
	if _, err := p.await(done); err != nil {
		t.Fatal(err)
	}
	// Naming a turn that is over, with none running: refused, nothing started.
	_, err = p.call("session/steer", steer(sid, "too late", approval["turnId"].(string)))
	if e, _ := err.(*rpcError); e == nil || e.Code != -32602 || e.Data["reason"] != "stale_turn" || e.Data["turnId"] != nil {
		t.Errorf("expectedTurnId of an ended turn: %v", err)
	}
	if n := userRows(t, p, sid); n != 1 {
		t.Errorf("%d user rows after refused steers, want 1", n)
	}
	if got := reqLines(f.Request(t, 1)); len(got) != 3 {
		t.Errorf("a refused steer reached the model: %q", got)
	}
}

func TestSteerAndExportOfAnotherPrincipalsSessionAreNotFound(t *testing.T) {
	s := newConfServer(t, roster+`
[agents.sup]
provider = "echo"

[permission_profiles.runner2]
grants = ["sessions:execute", "sessions:read"]
agents = ["sup"]

[users.carol]
uid = 4545
permission_profiles = ["runner2"]
`)
	carol, op := s.as(4545).peer(t, ""), s.operator(t)
	sid := op.newSession(`{"agentAlias":"sup","sessionId":"op-owned"}`)
	for _, call := range []struct{ method, params string }{
		{"session/steer", steer(sid, "mine now", "")},
		{"session/export", fmt.Sprintf(`{"sessionId":%q,"format":"jsonl"}`, sid)},
	} {
		_, err := carol.call(call.method, call.params)
		_, missingErr := carol.call(call.method, strings.ReplaceAll(call.params, sid, "no-such-session"))
		e, m := wantCode(t, err, -32000), wantCode(t, missingErr, -32000)
		if strings.ReplaceAll(e.Message, sid, "ID") != strings.ReplaceAll(m.Message, "no-such-session", "ID") {
			t.Errorf("%s: another's session (%v) answers unlike a missing one (%v)", call.method, e, m)
		}
	}
	if n := userRows(t, op, sid); n != 0 {
		t.Errorf("another principal's steer stored %d user rows", n)
	}
	// The owner's own steer starts a turn.
	if r := op.must("session/steer", steer(sid, "mine", "")); r["outcome"] != "startedTurn" {
		t.Errorf("the owner's steer: %v", r)
	}
}

// A steer racing the end of a turn joins it or starts the next turn: never both,
// never lost. Echo turns end within a fraction of a millisecond, so the steers
// land on every side of the end.
func TestASteerRacingTheTurnsEndJoinsItOrStartsTheNext(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p, q := h.peer(t, ""), h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"full"}`)
	q.must("session/attach", fmt.Sprintf(`{"sessionId":%q}`, sid))
	outcomes := map[string]int{}
	for i := range 40 {
		text := fmt.Sprintf("steer number %d", i)
		done := p.start("session/prompt", prompt(sid, fmt.Sprintf("prompt number %d", i)))
		expected := ""
		if i%2 == 1 { // the turn has begun: the steer races its end
			u := q.updateOf("user_message")
			for u["text"] != fmt.Sprintf("prompt number %d", i) {
				u = q.updateOf("user_message")
			}
			if i%4 == 3 { // naming it: it joins it or is refused, and starts nothing
				expected = u["turnId"].(string)
			}
		}
		steered := q.start("session/steer", steer(sid, text, expected))
		pr, err := p.await(done)
		if err != nil {
			t.Fatal(err)
		}
		res, err := q.await(steered)
		want := 1 // the steer's rows in the transcript
		if e, _ := err.(*rpcError); expected != "" && e != nil && e.Code == -32602 && e.Data["reason"] == "stale_turn" {
			res, err, want = map[string]any{"outcome": "stale"}, nil, 0
		}
		if err != nil {
			t.Fatalf("steer %d: %v", i, err)
		}
		outcomes[res["outcome"].(string)]++
		switch res["outcome"] {
		case "stale":
		case "injected":
			if res["turnId"] != pr["turnId"] {
				t.Errorf("steer %d injected into %v, the prompt's turn was %v", i, res["turnId"], pr["turnId"])
			}
		case "startedTurn":
			if res["turnId"] == pr["turnId"] || expected != "" {
				t.Errorf("steer %d (expecting %q) started a turn: %v", i, expected, res)
			}
		default:
			t.Fatalf("steer %d: %v", i, res)
		}
		waitIdle(t, p, sid)
		m := p.must("session/messages", fmt.Sprintf(`{"sessionId":%q,"limit":10000}`, sid))
		n := 0
		for _, r := range m["messages"].([]any) {
			if row := r.(map[string]any); row["role"] == "user" && row["text"] == text {
				n++
			}
		}
		if n != want {
			t.Fatalf("steer %d (%v) is in the transcript %d times, want %d", i, res["outcome"], n, want)
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// A steer waiting in a turn that is cancelled is not lost: it starts the next turn.
func TestASteerWaitingInACancelledTurnStartsTheNext(t *testing.T) {
	h, f := steerServer(t,
		fakeopenai.Answer{Calls: []fakeopenai.Call{{Name: "write_file", Args: `{"path":"a.txt","content":"x"}`}}},
		fakeopenai.Answer{Text: []string{"ok"}})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	done := p.start("session/prompt", prompt(sid, "write a.txt"))
	approval := p.updateOf("approval_request")
	steered := p.start("session/steer", steer(sid, "actually, stop and say ok", ""))
	waitSteerQueued(t, h, sid, 1)
	p.must("session/cancel", fmt.Sprintf(`{"sessionId":%q}`, sid))
	pr, err := p.await(done)
	if err != nil || pr["stopReason"] != "cancelled" {
		t.Fatalf("the cancelled prompt: %v, %v", pr, err)
	}
	res, err := p.await(steered)
	if err != nil || res["outcome"] != "startedTurn" || res["turnId"] == approval["turnId"] {
		t.Fatalf("the steer of a cancelled turn: %v, %v", res, err)
	}
	waitIdle(t, p, sid)
	got := withoutFiller(reqLines(f.Request(t, 1)))
	if len(got) == 0 || got[len(got)-1] != "user:actually, stop and say ok" {
		t.Errorf("the next turn was sent %q", got)
	}
	if n := userRows(t, p, sid); n != 2 {
		t.Errorf("%d user rows, want 2", n)
	}
}
