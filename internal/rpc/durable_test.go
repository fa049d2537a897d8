package rpc

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// failingStore opens a store whose writes of the named operation fail while *on.
func failingStore(t *testing.T, op string, on *atomic.Bool, keep int) *store.Store {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(dir+"/sessions.db", store.Options{Keep: keep, FailWrites: func(o string) error {
		if o == op && on.Load() {
			return errors.New("injected write failure")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestMessagesShowTheVisibleTranscriptWithStableIndexes(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"full"}`)
	p.must("session/prompt", prompt(sid, "/tool shell {\"command\":\"echo out\"}\nfirst"))
	p.must("session/prompt", prompt(sid, "second"))
	res := p.must("session/messages", fmt.Sprintf(`{"sessionId":%q}`, sid))
	msgs := res["messages"].([]any)
	var roles []string
	for i, m := range msgs {
		row := m.(map[string]any)
		if row["index"] != float64(i) {
			t.Fatalf("row %d has index %v", i, row["index"])
		}
		roles = append(roles, row["role"].(string))
	}
	want := "user tool_call tool_result assistant user assistant"
	if strings.Join(roles, " ") != want || res["total"] != float64(6) {
		t.Fatalf("roles %v total %v, want %s and 6", roles, res["total"], want)
	}
	call := msgs[1].(map[string]any)
	if call["name"] != "shell" || !strings.HasPrefix(fmt.Sprint(call["toolCallId"]), "tc_") {
		t.Errorf("tool_call row %v", call)
	}
	page := p.must("session/messages", fmt.Sprintf(`{"sessionId":%q,"limit":2,"before":4}`, sid))
	rows := page["messages"].([]any)
	if len(rows) != 2 || rows[0].(map[string]any)["index"] != float64(2) || rows[1].(map[string]any)["index"] != float64(3) {
		t.Errorf("page before 4, limit 2 = %v", rows)
	}
}

func TestTrimmingKeepsTheTranscriptAndNotifiesAfterTheCommit(t *testing.T) {
	conf := agentsConfig()
	conf.Agents["small"] = config.Agent{Provider: "echo", Autonomy: config.Full, MaxContextMessages: 4}
	var failTrim atomic.Bool
	st := failingStore(t, store.OpTrim, &failTrim, 0)
	h := startServerWith(t, Config{}, conf, session.Options{Store: st})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"small"}`)
	p.must("session/prompt", prompt(sid, "one"))
	p.must("session/prompt", prompt(sid, "two")) // 4 messages: at the limit
	p.drain()

	failTrim.Store(true)
	p.must("session/prompt", prompt(sid, "three")) // 6 > 4, but the commit fails
	for _, u := range p.drain() {
		if u["type"] == "history_trimmed" {
			t.Fatal("history_trimmed sent although the trim failed to commit")
		}
	}
	failTrim.Store(false)
	res := p.must("session/prompt", prompt(sid, "four")) // 8 > 4: trims now
	var trimmed map[string]any
	for _, u := range p.drain() {
		if u["type"] == "history_trimmed" {
			trimmed = u
			if u["_n"].(float64) > res["_n"].(float64) {
				t.Error("history_trimmed arrived after the prompt's response")
			}
		}
	}
	if trimmed == nil || trimmed["droppedMessages"] != float64(4) || trimmed["keptMessages"] != float64(4) || trimmed["turnId"] != res["turnId"] {
		t.Fatalf("history_trimmed = %v", trimmed)
	}
	if m := p.must("session/messages", fmt.Sprintf(`{"sessionId":%q}`, sid)); m["total"] != float64(8) {
		t.Fatalf("transcript total %v after trimming, want all 8 rows kept", m["total"])
	}
}

func TestRestoredSessionSendsSnapshotPlusLaterEventsToTheModel(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"ok"}})
	conf := agentsConfig()
	conf.Providers["fake"] = config.Provider{Kind: "openai", BaseURL: fake.URL(), Model: "m"}
	conf.Agents["fake"] = config.Agent{Provider: "fake", Autonomy: config.Full, MaxContextMessages: 2}
	h := startServerWith(t, Config{}, conf, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake","sessionId":"snap-1"}`)
	p.must("session/prompt", prompt(sid, "a"))
	p.must("session/prompt", prompt(sid, "b")) // trims to [user b, assistant ok]
	p.must("session/close", `{"sessionId":"snap-1"}`)
	if r := p.must("session/new", `{"agentAlias":"fake","sessionId":"snap-1"}`); r["resumed"] != true || r["messageCount"] != float64(4) {
		t.Fatalf("restore = %v", r)
	}
	p.must("session/prompt", prompt(sid, "c"))
	msgs := fakeopenai.Messages(fake.Request(t, 2))
	var got []string
	for _, m := range msgs {
		got = append(got, fmt.Sprint(m["role"], ":", m["content"]))
	}
	if strings.Join(got, " ") != "user:b assistant:ok user:c" {
		t.Fatalf("the restored model context was %v, want the snapshot then the prompt", got)
	}
}

func TestKillAndDeleteKeepTheLiveSessionWhenStorageFails(t *testing.T) {
	for _, op := range []string{store.OpKill, store.OpDelete} {
		t.Run(op, func(t *testing.T) {
			var fail atomic.Bool
			fail.Store(true)
			st := failingStore(t, op, &fail, 0)
			h := startServerWith(t, Config{}, agentsConfig(), session.Options{Store: st})
			p := h.peer(t, "")
			sid := p.newSession("")
			method := "session/" + op
			if _, err := p.call(method, fmt.Sprintf(`{"sessionId":%q}`, sid)); codeOf(err) != -32603 {
				t.Fatalf("%s with failing storage: %v, want -32603", method, err)
			}
			// The idle live session is untouched and still works.
			if r := p.must("session/prompt", prompt(sid, "still here")); r["stopReason"] != "end_turn" {
				t.Fatalf("after the failed %s: %v", op, r)
			}
			fail.Store(false)
			p.must(method, fmt.Sprintf(`{"sessionId":%q}`, sid))
			if st := p.must("status", ""); st["activeSessions"] != float64(0) {
				t.Errorf("live session kept after a successful %s", op)
			}
		})
	}
}

func TestKilledSessionIsNeverRestored(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"default","sessionId":"doomed"}`)
	p.must("session/prompt", prompt(sid, "remember me"))
	if r := p.must("session/kill", `{"sessionId":"doomed"}`); r["killed"] != true {
		t.Fatalf("kill = %v", r)
	}
	if _, err := p.call("session/new", `{"agentAlias":"default","sessionId":"doomed"}`); codeOf(err) != -32000 {
		t.Fatalf("session/new with a killed id: %v, want -32000", err)
	}
	if _, err := p.call("session/prompt", prompt(sid, "x")); codeOf(err) != -32000 {
		t.Fatalf("prompt to a killed session: %v, want -32000", err)
	}
	// Its history stays.
	if m := p.must("session/messages", `{"sessionId":"doomed"}`); m["total"] != float64(2) {
		t.Errorf("killed session's transcript: %v", m)
	}
	list := p.must("session/list", "")
	if s := list["sessions"].([]any)[0].(map[string]any); s["sessionId"] != "doomed" || s["state"] != "killed" {
		t.Errorf("list = %v", list)
	}
	p.must("session/delete", `{"sessionId":"doomed"}`)
	if _, err := p.call("session/messages", `{"sessionId":"doomed"}`); codeOf(err) != -32000 {
		t.Errorf("messages after delete: %v, want -32000", err)
	}
}

func TestListPagesLiveAndDurableSessions(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	ids := map[string]bool{}
	for range 5 {
		ids[p.newSession(`{"agentAlias":"default","keep_siblings":true}`)] = true
	}
	closed := p.newSession(`{"agentAlias":"full"}`)
	p.must("session/close", fmt.Sprintf(`{"sessionId":%q}`, closed))
	seen := map[string]string{}
	cursor := ""
	for pages := 0; ; pages++ {
		params := `{"limit":2}`
		if cursor != "" {
			params = fmt.Sprintf(`{"limit":2,"cursor":%q}`, cursor)
		}
		r := p.must("session/list", params)
		for _, s := range r["sessions"].([]any) {
			e := s.(map[string]any)
			if _, dup := seen[e["sessionId"].(string)]; dup {
				t.Fatalf("session %v listed twice", e["sessionId"])
			}
			seen[e["sessionId"].(string)] = e["state"].(string)
		}
		next, _ := r["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
		if pages > 10 {
			t.Fatal("paging does not end")
		}
	}
	if len(seen) != 6 || seen[closed] != "closed" {
		t.Fatalf("listed %v", seen)
	}
	for id := range ids {
		if seen[id] != "idle" {
			t.Errorf("live session %s listed as %q", id, seen[id])
		}
	}
}

func TestAttachReplaysWhatAConnectionMissedExactlyOnce(t *testing.T) {
	h := sessionServer(t, session.Options{})
	a := h.peer(t, "")
	sid := a.newSession(`{"agentAlias":"default","sessionId":"replay-1"}`)
	resp := a.start("session/prompt", prompt(sid, "/think first\n/tool shell {\"command\":\"echo hi\"}\nsome words to stream"))
	approval, before := a.until("approval_request")
	last := approval["seq"].(float64)
	_ = before
	a.conn.Close() // gone mid-turn; the turn waits for its approval
	<-a.closed
	_ = resp

	b := h.peer(t, "")
	r := b.must("session/attach", fmt.Sprintf(`{"sessionId":"replay-1","afterSeq":%d}`, int(last)-1))
	if r["replayed"] != float64(1) || r["lastSeq"] != last {
		t.Fatalf("attach = %v, want the approval request replayed", r)
	}
	replayed := b.update()
	if replayed["seq"] != last || replayed["type"] != "approval_request" {
		t.Fatalf("replayed %v", replayed)
	}
	b.must("session/approve", fmt.Sprintf(`{"sessionId":"replay-1","requestId":%q,"decision":"allow_once"}`, replayed["requestId"]))
	// The rest streams live, continuing right after the replay, to the reply's last
	// word.
	want := last + 1
	var text strings.Builder
	for !strings.Contains(text.String(), "some words to stream") {
		u := b.update()
		if u["seq"] != want {
			t.Fatalf("seq %v after %v: a gap or a duplicate", u["seq"], want-1)
		}
		want++
		if u["type"] == "agent_message_chunk" {
			text.WriteString(u["text"].(string))
		}
	}
	if !strings.HasPrefix(text.String(), "echo: some words to stream") {
		t.Fatalf("the live part of the turn streamed %q", text.String())
	}
}

func TestAttachBeyondTheKeptUpdatesIsRefused(t *testing.T) {
	var never atomic.Bool
	st := failingStore(t, "none", &never, 3)
	h := startServerWith(t, Config{}, agentsConfig(), session.Options{Store: st})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"full","sessionId":"short-log"}`)
	// Two turns: the log keeps whole runs of what each write stored, so the first
	// turn's runs are the ones trimmed once the second's are stored. The log gathers
	// what is published within 2 ms into one write; an attach that replays stores
	// what is gathered at once, so the first turn's updates are a write of their own.
	p.must("session/prompt", prompt(sid, "many words so that many chunks stream"))
	var last float64
	for _, u := range p.drain() {
		last = max(last, u["seq"].(float64))
	}
	p.must("session/attach", fmt.Sprintf(`{"sessionId":"short-log","afterSeq":%d}`, int(last)-1))
	p.must("session/prompt", prompt(sid, "and many more words in a second turn"))
	_, err := p.call("session/attach", `{"sessionId":"short-log","afterSeq":0}`)
	var e *rpcError
	if !errors.As(err, &e) || e.Code != -32602 || e.Data["reason"] != "replay_truncated" || e.Data["oldestSeq"] == nil {
		t.Fatalf("attach after seq 0 with 3 kept: %v", err)
	}
}

func TestSeqKeepsIncreasingAcrossARestart(t *testing.T) {
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
	sid := p.newSession(`{"agentAlias":"default","sessionId":"seq-1"}`)
	p.must("session/prompt", prompt(sid, "before the restart"))
	var last float64
	for _, u := range p.drain() {
		last = u["seq"].(float64)
	}
	p.conn.Close()
	h.stop(t)
	st.Close()

	st2 := open()
	defer st2.Close()
	h2 := startServerWith(t, Config{}, agentsConfig(), session.Options{Store: st2})
	q := h2.peer(t, "")
	q.must("session/new", `{"agentAlias":"default","sessionId":"seq-1"}`)
	q.must("session/prompt", prompt(sid, "after"))
	first := q.update()
	if first["seq"].(float64) <= last {
		t.Fatalf("seq %v after the restart, but %v was used before it", first["seq"], last)
	}
}

// TestKillOrDeleteDuringATurnAnswersItCancelled: both cancel the running turn
// before their storage step (docs/protocol.md, "Durable sessions"), so its prompt
// answers cancelled, not a storage failure, even though delete removed the turn's
// rows.
func TestKillOrDeleteDuringATurnAnswersItCancelled(t *testing.T) {
	for _, op := range []string{"kill", "delete"} {
		t.Run(op, func(t *testing.T) {
			h := sessionServer(t, session.Options{})
			p := h.peer(t, "")
			sid := p.newSession(`{"agentAlias":"default","sessionId":"retire-` + op + `"}`)
			running := p.start("session/prompt", prompt(sid, `/tool shell {"command":"sleep 300"}`))
			p.updateOf("approval_request") // the turn runs and waits
			p.must("session/"+op, `{"sessionId":"retire-`+op+`"}`)
			res, err := p.await(running)
			if err != nil || res["stopReason"] != "cancelled" {
				t.Fatalf("the prompt of a session whose turn ran into session/%s: %v, %v", op, res, err)
			}
		})
	}
}

// An approval pending when its session is closed, killed or deleted ends with it:
// every attached client is told request_resolved for it, before it is detached, as
// when another client answered first; no client is left with a question nobody can
// answer.
func TestAnApprovalPendingWhenItsSessionEndsIsResolvedForEveryClient(t *testing.T) {
	for _, op := range []string{"close", "kill", "delete"} {
		t.Run(op, func(t *testing.T) {
			h := sessionServer(t, session.Options{})
			a, b := h.peer(t, ""), h.peer(t, "")
			sid := a.newSession(`{"agentAlias":"default","sessionId":"ending-` + op + `"}`)
			b.must("session/attach", fmt.Sprintf(`{"sessionId":%q}`, sid))
			running := a.start("session/prompt", prompt(sid, `/tool shell {"command":"echo never"}`))
			asked := a.updateOf("approval_request")
			b.updateOf("approval_request")
			b.must("session/"+op, fmt.Sprintf(`{"sessionId":%q}`, sid))
			for name, p := range map[string]*peer{"prompting": a, "other": b} {
				if u := p.updateOf("request_resolved"); u["requestId"] != asked["requestId"] || u["turnId"] != asked["turnId"] {
					t.Errorf("%s client: request_resolved %v for approval %v", name, u, asked)
				}
			}
			if res, err := a.await(running); err != nil || res["stopReason"] != "cancelled" {
				t.Fatalf("the prompt: %v, %v", res, err)
			}
		})
	}
}
