package rpc

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// A session at its max_context_messages is trimmed on every turn, and what the
// model is sent stays exactly the newest messages from a user message on, across
// restores of the session: whether the store kept them as its newest checkpoints
// (what the daemon now does when it can) or as a snapshot written by an older
// daemon, which the next trim replaces.
func TestTrimmingEveryTurnKeepsTheNewestContextAcrossRestores(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"ok"}})
	conf := agentsConfig()
	conf.Providers["fake"] = config.Provider{Kind: "openai", BaseURL: fake.URL(), Model: "m"}
	conf.Agents["fake"] = config.Agent{Provider: "fake", Autonomy: config.Full, MaxContextMessages: 4}
	st, err := store.Open(t.TempDir()+"/sessions.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := startServerWith(t, Config{}, conf, session.Options{Store: st})
	p := h.peer(t, "")
	const sid = "long-1"
	restore := func() {
		t.Helper()
		p.must("session/close", fmt.Sprintf(`{"sessionId":%q}`, sid))
		if r := p.must("session/new", fmt.Sprintf(`{"agentAlias":"fake","sessionId":%q}`, sid)); r["resumed"] != true {
			t.Fatalf("restore = %v", r)
		}
	}
	requests := 0
	// turn prompts text and checks what the model was sent for it and the trim
	// that followed (dropped messages, 0 for none).
	turn := func(text, sent string, dropped int) {
		t.Helper()
		p.must("session/prompt", prompt(sid, text))
		var got []string
		for _, m := range fakeopenai.Messages(fake.Request(t, requests)) {
			got = append(got, fmt.Sprint(m["role"], ":", m["content"]))
		}
		requests++
		if strings.Join(got, " ") != sent {
			t.Fatalf("prompt %q: the model was sent %v, want %s", text, got, sent)
		}
		var trimmed map[string]any
		for _, u := range p.drain() {
			if u["type"] == "history_trimmed" {
				trimmed = u
			}
		}
		switch {
		case dropped == 0 && trimmed != nil:
			t.Fatalf("prompt %q: history_trimmed %v, want none", text, trimmed)
		case dropped > 0 && (trimmed == nil || trimmed["droppedMessages"] != float64(dropped) || trimmed["keptMessages"] != float64(4)):
			t.Fatalf("prompt %q: history_trimmed %v, want %d dropped and 4 kept", text, trimmed, dropped)
		}
	}
	p.newSession(fmt.Sprintf(`{"agentAlias":"fake","sessionId":%q}`, sid))
	turn("a", "user:a", 0)
	turn("b", "user:a assistant:ok user:b", 0)
	turn("c", "user:a assistant:ok user:b assistant:ok user:c", 2)
	restore()
	turn("d", "user:b assistant:ok user:c assistant:ok user:d", 2)
	turn("e", "user:c assistant:ok user:d assistant:ok user:e", 2)
	restore()
	turn("f", "user:d assistant:ok user:e assistant:ok user:f", 2)

	// As an older daemon left it: the retained context in a snapshot.
	p.must("session/close", fmt.Sprintf(`{"sessionId":%q}`, sid))
	msgs, err := st.Context(context.Background(), sid)
	if err != nil || len(msgs) != 4 {
		t.Fatalf("stored context %v, %v", msgs, err)
	}
	if err := st.Trim(context.Background(), sid, msgs, lastCheckpoint(t, st)); err != nil {
		t.Fatal(err)
	}
	if r := p.must("session/new", fmt.Sprintf(`{"agentAlias":"fake","sessionId":%q}`, sid)); r["resumed"] != true {
		t.Fatalf("restore = %v", r)
	}
	turn("g", "user:e assistant:ok user:f assistant:ok user:g", 2)
	restore()
	turn("h", "user:f assistant:ok user:g assistant:ok user:h", 2)
	restore()
	turn("i", "user:g assistant:ok user:h assistant:ok user:i", 2)
}

// lastCheckpoint is the highest checkpoint id handed out.
func lastCheckpoint(t *testing.T, st *store.Store) int64 {
	t.Helper()
	_, ids, err := st.ContextIDs(context.Background(), "long-1")
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for _, id := range ids {
		last = max(last, id)
	}
	if last == 0 {
		t.Fatal("no checkpoint in the context")
	}
	return last
}

// A session over its max_context_messages is trimmed to the low water mark (the
// limit less an eighth), so that it trims once every few turns: with a limit of 16
// and two messages a turn, every other turn. The model is never sent more than the
// limit of retained messages before the prompt, each trim is announced with what it
// dropped and kept, and a restored session continues from exactly what was kept.
func TestTrimmingKeepsToTheLowWaterMarkAndTrimsEveryFewTurns(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"ok"}})
	conf := agentsConfig()
	conf.Providers["fake"] = config.Provider{Kind: "openai", BaseURL: fake.URL(), Model: "m"}
	conf.Agents["fake"] = config.Agent{Provider: "fake", Autonomy: config.Full, MaxContextMessages: 16}
	st, err := store.Open(t.TempDir()+"/sessions.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := startServerWith(t, Config{}, conf, session.Options{Store: st})
	p := h.peer(t, "")
	const sid = "long-2"
	p.newSession(fmt.Sprintf(`{"agentAlias":"fake","sessionId":%q}`, sid))
	retained, trims := 0, 0 // the context the daemon should hold before each turn
	for n := 1; n <= 14; n++ {
		text := fmt.Sprint("p", n)
		p.must("session/prompt", prompt(sid, text))
		sent := fakeopenai.Messages(fake.Request(t, n-1))
		if len(sent) != retained+1 || fmt.Sprint(sent[len(sent)-1]["content"]) != text {
			t.Fatalf("turn %d: the model was sent %d messages (last %v), want %d ending with the prompt", n, len(sent), sent[len(sent)-1], retained+1)
		}
		if len(sent)-1 > 16 {
			t.Fatalf("turn %d: %d retained messages sent, over the limit of 16", n, len(sent)-1)
		}
		if fmt.Sprint(sent[0]["role"]) != "user" {
			t.Fatalf("turn %d: the retained context starts with %v, not a user message", n, sent[0])
		}
		retained += 2
		var trimmed map[string]any
		for _, u := range p.drain() {
			if u["type"] == "history_trimmed" {
				trimmed = u
			}
		}
		if retained > 16 { // 18: down to 14, the newest from a user message
			if trimmed == nil || trimmed["droppedMessages"] != float64(retained-14) || trimmed["keptMessages"] != float64(14) {
				t.Fatalf("turn %d: history_trimmed %v, want %d dropped and 14 kept", n, trimmed, retained-14)
			}
			retained, trims = 14, trims+1
		} else if trimmed != nil {
			t.Fatalf("turn %d: history_trimmed %v with %d retained, want none", n, trimmed, retained)
		}
		if n%5 == 0 {
			p.must("session/close", fmt.Sprintf(`{"sessionId":%q}`, sid))
			if r := p.must("session/new", fmt.Sprintf(`{"agentAlias":"fake","sessionId":%q}`, sid)); r["resumed"] != true {
				t.Fatalf("restore = %v", r)
			}
		}
	}
	if trims != 3 { // after turns 9, 11 and 13
		t.Fatalf("%d trims in 14 turns, want 3", trims)
	}
}
