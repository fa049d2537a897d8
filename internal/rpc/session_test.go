package rpc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
)

// agentsConfig has the default agent (supervised) plus "full" and "ro" on echo.
func agentsConfig() config.Config {
	c := config.Default()
	c.Agents["full"] = config.Agent{Provider: "echo", Autonomy: config.Full}
	c.Agents["ro"] = config.Agent{Provider: "echo", Autonomy: config.ReadOnly}
	return c
}

func sessionServer(t *testing.T, opts session.Options) *harness {
	return startServerWith(t, Config{}, agentsConfig(), opts)
}

func prompt(sid, text string) string {
	return fmt.Sprintf(`{"sessionId":%q,"prompt":%s}`, sid, quote(text))
}

func codeOf(err error) int64 {
	var e *rpcError
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func TestPromptStreamsEveryUpdateTypeThenAnswers(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession("")
	resp := p.start("session/prompt", prompt(sid,
		"/think pondering\n/tool list_dir {\"path\":\".\"}\n/tool write_file {\"path\":\"a.txt\",\"content\":\"hi\"}\nhello world"))

	approval, before := p.until("approval_request")
	if approval["name"] != "write_file" || approval["timeoutSecs"] != float64(120) || approval["requestId"] == "" {
		t.Fatalf("approval_request = %v", approval)
	}
	ok := p.must("session/approve", fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":"allow_once"}`, sid, approval["requestId"]))
	if ok["accepted"] != true {
		t.Fatalf("approve = %v", ok)
	}
	res, err := p.await(resp)
	if err != nil {
		t.Fatal(err)
	}
	updates := append(append(before, approval), p.drain()...)

	if res["stopReason"] != "end_turn" || res["sessionId"] != sid || res["turnId"] == "" {
		t.Fatalf("result = %v", res)
	}
	if b, err := os.ReadFile(filepath.Join(h.srv.cfg.DataDir, "workspaces", "default", "a.txt")); err != nil || string(b) != "hi" {
		t.Errorf("a.txt = %q, %v: the approved write did not happen", b, err)
	}
	usage := res["usage"].(map[string]any)
	if usage["inputTokens"].(float64) <= 0 || usage["outputTokens"].(float64) <= 0 {
		t.Errorf("usage = %v", usage)
	}
	var text strings.Builder
	types := map[string]int{}
	for _, u := range updates {
		types[u["type"].(string)]++
		if u["sessionId"] != sid || u["turnId"] != res["turnId"] {
			t.Errorf("update without this turn's sessionId and turnId: %v", u)
		}
		if u["_n"].(float64) > res["_n"].(float64) {
			t.Errorf("update arrived after the prompt's response: %v", u)
		}
		if u["type"] == "agent_message_chunk" {
			text.WriteString(u["text"].(string))
		}
	}
	if text.String() != res["text"] {
		t.Errorf("chunks concatenate to %q, result text is %q", text.String(), res["text"])
	}
	if !strings.HasPrefix(res["text"].(string), "echo: ") || !strings.Contains(res["text"].(string), "hello world") ||
		!strings.Contains(res["text"].(string), "list_dir -> ") || !strings.Contains(res["text"].(string), "write_file -> ") {
		t.Errorf("echo reply %q", res["text"])
	}
	if types["agent_thought_chunk"] != 1 || types["tool_call"] != 2 || types["approval_request"] != 1 ||
		types["tool_result"] != 2 || types["agent_message_chunk"] < 2 || types["request_resolved"] != 1 {
		t.Errorf("update types: %v", types)
	}
}

func TestUpdatesCarryStrictlyIncreasingSeq(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"full"}`)
	var last float64
	for turn := range 3 {
		p.must("session/prompt", prompt(sid, fmt.Sprintf("/think t%d\n/tool list_dir {}\nturn %d of several words", turn, turn)))
		for _, u := range p.drain() {
			seq := u["seq"].(float64)
			if seq <= last {
				t.Fatalf("seq %v after %v", seq, last)
			}
			last = seq
		}
	}
	if last < 10 {
		t.Fatalf("only %v updates over three turns", last)
	}
}

func TestThoughtsStreamAsThoughtChunks(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession("")
	p.must("session/prompt", prompt(sid, "/think deep thoughts\nhi"))
	u := p.updateOf("agent_thought_chunk")
	if !strings.Contains(u["text"].(string), "deep thoughts") {
		t.Fatalf("thought = %v", u)
	}
}

func TestRejectedApprovalDoesNotRunTheTool(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession("")
	resp := p.start("session/prompt", prompt(sid, `/tool write_file {"path":"no.txt","content":"x"}`))
	a := p.updateOf("approval_request")
	p.must("session/approve", fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":"reject_once"}`, sid, a["requestId"]))
	r := p.updateOf("tool_result")
	if r["isError"] != true || !strings.Contains(r["rawOutput"].(string), "rejected") {
		t.Errorf("tool_result = %v", r)
	}
	if _, err := p.await(resp); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.srv.cfg.DataDir, "workspaces", "default", "no.txt")); err == nil {
		t.Error("a rejected write_file wrote its file")
	}
	// A late or unknown answer is not accepted.
	late := p.must("session/approve", fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":"allow_once"}`, sid, a["requestId"]))
	if late["accepted"] != false {
		t.Errorf("late approve = %v", late)
	}
	if _, err := p.call("session/approve", fmt.Sprintf(`{"sessionId":%q,"requestId":"x","decision":"maybe"}`, sid)); codeOf(err) != -32602 {
		t.Errorf("bad decision: %v", err)
	}
}

func TestAllowAlwaysCoversTheToolForTheSession(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession("")
	resp := p.start("session/prompt", prompt(sid, `/tool write_file {"path":"1.txt","content":"1"}`))
	a := p.updateOf("approval_request")
	p.must("session/approve", fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":"allow_always"}`, sid, a["requestId"]))
	p.await(resp)
	p.drain()
	p.must("session/prompt", prompt(sid, `/tool write_file {"path":"2.txt","content":"2"}`))
	for _, u := range p.drain() {
		if u["type"] == "approval_request" {
			t.Fatal("asked again after allow_always")
		}
	}
}

func TestUnansweredApprovalIsRejectedAfter120Seconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startBubbleServer(t, Config{}, agentsConfig(), session.Options{})
		p := h.peer(t, "")
		sid := p.newSession("")
		resp := p.start("session/prompt", prompt(sid, `/tool shell {"command":"echo ran"}`))
		a := p.updateOf("approval_request")
		asked := time.Now()
		if a["timeoutSecs"] != float64(120) {
			t.Fatalf("approval_request = %v, want timeoutSecs 120", a)
		}
		time.Sleep(120*time.Second - time.Nanosecond)
		synctest.Wait()
		if u := p.drain(); len(u) != 0 {
			t.Fatalf("before the approval timeout: %v", u)
		}
		r := p.updateOf("tool_result")
		if d := time.Since(asked); d != 120*time.Second {
			t.Errorf("rejected %s after asking, want exactly 120s", d)
		}
		if r["isError"] != true || !strings.Contains(r["rawOutput"].(string), "no decision") {
			t.Fatalf("tool_result = %v, want a rejection for want of a decision", r)
		}
		res, err := p.await(resp)
		if err != nil || res["stopReason"] != "end_turn" {
			t.Fatalf("prompt = %v, %v", res, err)
		}
		// The expired request is gone: a late answer is not accepted.
		late := p.must("session/approve", fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":"allow_once"}`, sid, a["requestId"]))
		if late["accepted"] != false {
			t.Errorf("approve after expiry = %v", late)
		}
	})
}

func TestUnansweredElicitationGivesNoAnswerAfter300Seconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startBubbleServer(t, Config{}, agentsConfig(), session.Options{})
		p := h.peer(t, `{"elicitation":{"form":{}}}`) // declares it answers, never does
		sid := p.newSession(`{"agentAlias":"full"}`)
		resp := p.start("session/prompt", prompt(sid, `/tool ask_user {"question":"Favourite colour?","choices":["red","blue"]}`))
		var req map[string]any
		select {
		case req = <-p.requests:
		case <-time.After(time.Hour):
			t.Fatal("no elicitation/create was sent")
		}
		asked := time.Now()
		if req["method"] != "elicitation/create" {
			t.Fatalf("request = %v", req)
		}
		time.Sleep(300*time.Second - time.Nanosecond)
		synctest.Wait()
		for _, u := range p.drain() {
			if u["type"] == "tool_result" {
				t.Fatalf("the tool gave up before its 300 s: %v", u)
			}
		}
		r := p.updateOf("tool_result")
		// The tool gives up at exactly 300 s; its update is delivered once the
		// replay log stored it, within the log's 2 ms window (docs/protocol.md,
		// "A daemon that runs for months").
		if d := time.Since(asked); d < 300*time.Second || d > 300*time.Second+2*time.Millisecond {
			t.Errorf("gave up %s after asking, want 300s (and at most the replay log's 2 ms)", d)
		}
		if r["rawOutput"] != "no answer" {
			t.Errorf("ask_user result %v, want \"no answer\"", r["rawOutput"])
		}
		if res, err := p.await(resp); err != nil || res["stopReason"] != "end_turn" {
			t.Fatalf("prompt = %v, %v", res, err)
		}
	})
}

func TestAutonomyLevels(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	ro := p.newSession(`{"agentAlias":"ro"}`)
	p.must("session/prompt", prompt(ro, `/tool shell {"command":"echo hi"}`))
	for _, u := range p.drain() {
		if u["type"] == "approval_request" {
			t.Fatal("readonly agent asked for approval")
		}
		if u["type"] == "tool_result" && (u["isError"] != true || !strings.Contains(u["rawOutput"].(string), "read-only")) {
			t.Fatalf("readonly tool_result = %v", u)
		}
	}
	full := p.newSession(`{"agentAlias":"full"}`)
	p.must("session/prompt", prompt(full, `/tool shell {"command":"echo from-full"}`))
	for _, u := range p.drain() {
		if u["type"] == "approval_request" {
			t.Fatal("full-autonomy agent asked for approval")
		}
		if u["type"] == "tool_result" && !strings.Contains(u["rawOutput"].(string), "from-full") {
			t.Fatalf("full tool_result = %v", u)
		}
	}
}

func TestAskUserThroughElicitation(t *testing.T) {
	tests := []struct {
		name   string
		caps   string
		answer func(id any) string
		want   string
	}{
		{"accept", `{"elicitation":{"form":{}}}`, func(id any) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","result":{"action":"accept","content":{"answer":"blue"}},"id":%q}`, id)
		}, "blue"},
		{"decline", `{"elicitation":{"form":{}}}`, func(id any) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","result":{"action":"decline"},"id":%q}`, id)
		}, "no answer"},
		{"null result", `{"elicitation":{"form":{}}}`, func(id any) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","result":null,"id":%q}`, id)
		}, "no answer"},
		{"error", `{"elicitation":{"form":{}}}`, func(id any) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","error":{"code":-1,"message":"no"},"id":%q}`, id)
		}, "ask_user failed: the client answered with an error: no"}, // a failure: isError
		{"client without elicitation", "", nil, "no answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := sessionServer(t, session.Options{})
			p := h.peer(t, tt.caps)
			if tt.answer != nil {
				p.onRequest = func(req map[string]any) string { return tt.answer(req["id"]) }
			}
			sid := p.newSession("")
			p.must("session/prompt", prompt(sid, `/tool ask_user {"question":"Favourite colour?","choices":["red","blue"]}`))
			r := p.updateOf("tool_result")
			if r["rawOutput"] != tt.want {
				t.Errorf("ask_user result %v, want %q", r["rawOutput"], tt.want)
			}
			if wantErr := tt.name == "error"; r["isError"] != wantErr {
				t.Errorf("ask_user isError %v, want %v", r["isError"], wantErr)
			}
			select {
			case req := <-p.requests:
				if tt.answer == nil {
					t.Fatalf("a client without elicitation got %v", req)
				}
				params := req["params"].(map[string]any)
				if req["id"] != "zc-out-0" || req["method"] != "elicitation/create" || params["mode"] != "form" ||
					params["message"] != "Favourite colour?" || params["sessionId"] != sid {
					t.Errorf("elicitation request = %v", req)
				}
			default:
				if tt.answer != nil {
					t.Fatal("no elicitation/create was sent")
				}
			}
		})
	}
}

func TestCancelRacingTheTurnGivesExactlyOneResponse(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession("")
	for i := range 300 {
		resp := p.start("session/prompt", prompt(sid, fmt.Sprintf("race %d", i)))
		for range i % 7 * 20 { // vary where the cancel lands: before, during, after the turn
			runtime.Gosched()
		}
		p.must("session/cancel", fmt.Sprintf(`{"sessionId":%q}`, sid))
		res, err := p.await(resp)
		if err != nil {
			t.Fatal(err)
		}
		if r := res["stopReason"]; r != "end_turn" && r != "cancelled" {
			t.Fatalf("stopReason %v", r)
		}
	}
	// Every frame the server wrote has been read once the connection is closed by a
	// shutdown, which answers what is in flight first.
	h.stop(t)
	<-p.closed
	if n := p.strays.Load(); n != 0 {
		t.Fatalf("%d responses nobody asked for", n)
	}
}

func TestPromptsQueueBehindTheRunningTurnAndOneMoreIsRefusedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startBubbleServer(t, Config{}, agentsConfig(), session.Options{MaxQueued: 2})
		p := h.peer(t, "")
		sid := p.newSession("")
		// The first turn runs until its approval is answered.
		first := p.start("session/prompt", prompt(sid, `/tool shell {"command":"echo first"}`))
		a := p.updateOf("approval_request")
		second := p.start("session/prompt", prompt(sid, "second"))
		third := p.start("session/prompt", prompt(sid, "third"))
		synctest.Wait() // both wait in the queue now: nothing else can happen
		start := time.Now()
		if _, err := p.call("session/prompt", prompt(sid, "fourth")); codeOf(err) != -32002 {
			t.Fatalf("a prompt beyond the queue: %v, want -32002", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the refusal took %s, want it at once", d)
		}
		p.must("session/approve", fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":"reject_once"}`, sid, a["requestId"]))
		for _, q := range []struct {
			name string
			ch   <-chan map[string]any
			want string
		}{{"first", first, "echo: \nshell -> not approved: rejected by the user"}, {"second", second, "echo: second"}, {"third", third, "echo: third"}} {
			res, err := p.await(q.ch)
			if err != nil || res["stopReason"] != "end_turn" || res["text"] != q.want {
				t.Errorf("%s: %v, %v; want end_turn with %q", q.name, res, err, q.want)
			}
		}
	})
}

func TestQueuedPromptGivesUpAfter30Seconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startBubbleServer(t, Config{}, agentsConfig(), session.Options{})
		p := h.peer(t, "")
		sid := p.newSession("")
		first := p.start("session/prompt", prompt(sid, `/tool shell {"command":"echo first"}`))
		p.updateOf("approval_request") // 120 s to answer: longer than the queue waits
		start := time.Now()
		waits := p.start("session/prompt", prompt(sid, "waits"))
		time.Sleep(30*time.Second - time.Nanosecond)
		synctest.Wait()
		select {
		case m := <-waits:
			t.Fatalf("answered %s into the wait: %v", time.Since(start), m)
		default:
		}
		if _, err := p.await(waits); codeOf(err) != -32002 {
			t.Fatalf("got %v, want -32002 after the wait", err)
		}
		if d := time.Since(start); d != 30*time.Second {
			t.Errorf("gave up after %s, want exactly 30s", d)
		}
		p.must("session/cancel", fmt.Sprintf(`{"sessionId":%q}`, sid))
		if res, err := p.await(first); err != nil || res["stopReason"] != "cancelled" {
			t.Errorf("first = %v, %v", res, err)
		}
	})
}

func TestSessionLimit(t *testing.T) {
	h := sessionServer(t, session.Options{MaxSessions: 3})
	p := h.peer(t, "")
	for range 3 {
		p.newSession(`{"agentAlias":"default","keep_siblings":true}`)
	}
	if _, err := p.call("session/new", `{"agentAlias":"default","keep_siblings":true}`); codeOf(err) != -32001 {
		t.Fatalf("got %v, want -32001", err)
	}
}

func TestNewSessionEvictsIdleSiblingsUnlessKept(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	a := p.newSession("")
	b := p.newSession(`{"agentAlias":"default","keep_siblings":true}`)
	other := p.newSession(`{"agentAlias":"full"}`)
	c := p.newSession("") // evicts a and b: same caller, same agent, idle
	st := p.must("status", "")
	var live []string
	for _, s := range st["sessions"].([]any) {
		live = append(live, s.(map[string]any)["sessionId"].(string))
	}
	if len(live) != 2 || !contains(live, c) || !contains(live, other) {
		t.Fatalf("live sessions %v, want only %s and %s (a=%s b=%s)", live, c, other, a, b)
	}
	// Evicted is closed, not gone: its history is resumable, so a prompt restores it.
	if _, err := p.call("session/cancel", fmt.Sprintf(`{"sessionId":%q}`, a)); codeOf(err) != -32000 {
		t.Errorf("cancel on an evicted session: %v, want -32000 (not live)", err)
	}
	if r := p.must("session/prompt", prompt(a, "hi")); r["stopReason"] != "end_turn" {
		t.Errorf("prompt to an evicted session: %v, want it restored", r)
	}
}

func TestRunningSiblingIsNotEvicted(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	busy := p.newSession(`{"agentAlias":"full"}`)
	resp := p.start("session/prompt", prompt(busy, `/tool shell {"command":"sleep 30"}`))
	p.updateOf("tool_call")
	p.newSession(`{"agentAlias":"full"}`)
	if st := p.must("status", ""); st["activeSessions"] != float64(2) {
		t.Fatalf("status %v: the running session was evicted", st)
	}
	p.must("session/cancel", fmt.Sprintf(`{"sessionId":%q}`, busy))
	p.await(resp)
}

func TestNewWithALiveIdAttachesAndFansOut(t *testing.T) {
	h := sessionServer(t, session.Options{})
	a := h.peer(t, "")
	b := h.peer(t, "")
	sid := a.newSession(`{"agentAlias":"default","sessionId":"shared-1"}`)
	res := b.must("session/new", `{"agentAlias":"default","sessionId":"shared-1"}`)
	if res["resumed"] != true || res["sessionId"] != sid {
		t.Fatalf("second session/new = %v", res)
	}
	a.must("session/prompt", prompt(sid, "/think hmm\nto everyone"))
	ua, ub := a.drain(), b.drain()
	for len(ub) < len(ua) { // b's may still be on their way
		ub = append(ub, b.update())
	}
	for i := range ua {
		if ua[i]["seq"] != ub[i]["seq"] || ua[i]["type"] != ub[i]["type"] || ua[i]["text"] != ub[i]["text"] {
			t.Fatalf("update %d differs: %v vs %v", i, ua[i], ub[i])
		}
	}
}

func TestFirstApprovalWinsAndOthersAreTold(t *testing.T) {
	h := sessionServer(t, session.Options{})
	a := h.peer(t, "")
	b := h.peer(t, "")
	sid := a.newSession(`{"agentAlias":"default","sessionId":"shared-2"}`)
	b.must("session/attach", `{"sessionId":"shared-2"}`)
	resp := a.start("session/prompt", prompt(sid, `/tool shell {"command":"echo ok"}`))
	ra, rb := a.updateOf("approval_request"), b.updateOf("approval_request")
	if ra["requestId"] != rb["requestId"] {
		t.Fatal("the two connections got different approval requests")
	}
	first := b.must("session/approve", fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":"allow_once"}`, sid, rb["requestId"]))
	second := a.must("session/approve", fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":"reject_once"}`, sid, ra["requestId"]))
	if first["accepted"] != true || second["accepted"] != false {
		t.Fatalf("first %v second %v", first, second)
	}
	if u := a.updateOf("request_resolved"); u["requestId"] != ra["requestId"] {
		t.Errorf("request_resolved = %v", u)
	}
	a.await(resp)
	if r := b.updateOf("tool_result"); r["isError"] != false {
		t.Errorf("the first answer (allow) did not win: %v", r)
	}
}

func TestSessionsSurviveDisconnects(t *testing.T) {
	h := sessionServer(t, session.Options{})
	a := h.peer(t, "")
	sid := a.newSession(`{"agentAlias":"default","sessionId":"keep-me"}`)
	a.conn.Close()
	b := h.peer(t, "")
	res := b.must("session/new", `{"agentAlias":"default","sessionId":"keep-me"}`)
	if res["resumed"] != true {
		t.Fatalf("after a disconnect: %v", res)
	}
	b.must("session/prompt", prompt(sid, "still here"))
}

func TestClosedAndUnknownSessions(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession("")
	if r := p.must("session/close", fmt.Sprintf(`{"sessionId":%q}`, sid)); r["closed"] != true {
		t.Fatalf("close = %v", r)
	}
	for _, m := range []string{"session/cancel", "session/approve", "session/close"} {
		if _, err := p.call(m, fmt.Sprintf(`{"sessionId":%q,"requestId":"r","decision":"allow_once"}`, sid)); codeOf(err) != -32000 {
			t.Errorf("%s on a closed session: %v, want -32000 (it is not live)", m, err)
		}
	}
	// Closed keeps the history resumable: attach and prompt restore the session.
	if r := p.must("session/attach", fmt.Sprintf(`{"sessionId":%q}`, sid)); r["sessionId"] != sid {
		t.Errorf("attach to a closed session: %v", r)
	}
	if st := p.must("status", ""); st["activeSessions"] != float64(1) {
		t.Errorf("status after restoring: %v", st)
	}
	for _, m := range []string{"session/prompt", "session/cancel", "session/close", "session/attach", "session/messages"} {
		if _, err := p.call(m, prompt("no-such-session", "x")); codeOf(err) != -32000 {
			t.Errorf("%s on an unknown session: %v, want -32000", m, err)
		}
	}
	if _, err := p.call("session/new", `{"agentAlias":"nope"}`); codeOf(err) != -32602 {
		t.Errorf("unknown agent: %v", err)
	}
	if _, err := p.call("session/new", `{}`); codeOf(err) != -32602 {
		t.Errorf("missing agentAlias: %v", err)
	}
	if _, err := p.call("session/new", `{"agent_alias":"default","session_id":"snake-ok"}`); err != nil {
		t.Errorf("snake_case params: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestStepLimitEndsTheTurn(t *testing.T) {
	conf := agentsConfig()
	conf.Agents["short"] = config.Agent{Provider: "echo", Autonomy: config.Full, MaxSteps: 1}
	h := startServerWith(t, Config{}, conf, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"short"}`)
	res := p.must("session/prompt", prompt(sid, `/tool list_dir {}`))
	if res["stopReason"] != "max_steps" {
		t.Fatalf("result %v, want stopReason max_steps", res)
	}
}

func TestProviderFailureEndsTheTurnWithAnError(t *testing.T) {
	conf := agentsConfig()
	// A port nothing listens on: the provider cannot connect.
	conf.Providers["down"] = config.Provider{Kind: "openai", BaseURL: "http://127.0.0.1:9/v1", Model: "m"}
	conf.Agents["broken"] = config.Agent{Provider: "down"}
	h := startServerWith(t, Config{}, conf, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"broken"}`)
	res := p.must("session/prompt", prompt(sid, "hello"))
	if res["stopReason"] != "error" || !strings.Contains(res["text"].(string), "127.0.0.1:9") {
		t.Fatalf("result %v, want stopReason error naming the endpoint", res)
	}
	// The daemon keeps serving, the same session included.
	other := p.newSession(`{"agentAlias":"full"}`)
	if r := p.must("session/prompt", prompt(other, "still fine")); r["stopReason"] != "end_turn" {
		t.Fatalf("after a provider failure: %v", r)
	}
}
