package rpc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// autoServer serves agent "fake" on a fake OpenAI endpoint whose context window is
// window (0: unknown), with compact_at (nil: the default).
func autoServer(t *testing.T, window int, compactAt *float64, script ...fakeopenai.Answer) (*harness, *fakeopenai.Server) {
	f := fakeopenai.New(t, script...)
	conf := agentsConfig()
	conf.Providers["fake"] = config.Provider{Kind: "openai", BaseURL: f.URL(), Model: "m", APIKey: "k", ContextWindow: window}
	conf.Agents["fake"] = config.Agent{Provider: "fake", Autonomy: config.Full, CompactAt: compactAt}
	return startServerWith(t, Config{}, conf, session.Options{}), f
}

func fraction(f float64) *float64 { return &f }

// summaryRequest reports whether a request asked for a compaction's summary.
func summaryRequest(req map[string]any) bool {
	msgs := fakeopenai.Messages(req)
	return len(msgs) > 0 && msgs[0]["role"] == "system" && strings.Contains(fmt.Sprint(msgs[0]["content"]), "compacting")
}

func answer(text string, inputTokens int) fakeopenai.Answer {
	return fakeopenai.Answer{Text: []string{text}, InputTokens: inputTokens}
}

// Three turns: the second's call is under the threshold (the first reported 5
// input tokens, and what was added since is small), the third's is over it (the
// second reported 950 of a window of 1000, compact_at 0.9).
var (
	big         = strings.Repeat("a detail worth keeping in mind ", 80) // 2,480 bytes
	threeTurns  = []string{"one", "two", "three"}
	threeScript = []fakeopenai.Answer{answer(big, 5), answer("short two", 950), answer("the summary", 7), answer("three answered", 9)}
)

func runTurns(t *testing.T, p *peer, sid string, prompts []string) {
	t.Helper()
	for _, text := range prompts {
		if r := p.must("session/prompt", prompt(sid, text)); r["stopReason"] != "end_turn" {
			t.Fatalf("prompt %q: %v", text, r)
		}
	}
}

func TestAutomaticCompactionAtTheThresholdTrimmingWhatTheSummaryRequestCannotFit(t *testing.T) {
	h, f := autoServer(t, 1000, fraction(0.9), threeScript...)
	p, q := h.peer(t, ""), h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	q.must("session/attach", fmt.Sprintf(`{"sessionId":%q}`, sid))
	runTurns(t, p, sid, threeTurns)

	if n := f.Count(); n != 4 {
		t.Fatalf("%d model calls, want 4 (three turns and a summary)", n)
	}
	if summaryRequest(f.Request(t, 1)) {
		t.Error("the second turn's call, under the threshold, was compacted")
	}
	// The summary request: the whole context would not fit the window with it, so
	// the oldest messages (the first turn) were trimmed; the third prompt is kept.
	sum := f.Request(t, 2)
	got := reqLines(sum)
	if !summaryRequest(sum) || len(got) != 3 || got[0] != "user:two" || got[1] != "assistant:short two" ||
		!strings.HasPrefix(got[2], "user:"+session.CompactRequest) {
		t.Fatalf("the summary request: %q", got)
	}
	got = reqLines(f.Request(t, 3))
	if strings.Join(got, " | ") != "user:"+session.CompactedPrompt+" | assistant:the summary | user:three" {
		t.Errorf("the third turn's call after compaction: %q", got)
	}
	before := len("one") + len(big) + len("two") + len("short two") + len("three")
	after := len(session.CompactedPrompt) + len("the summary") + len("three")
	for name, c := range map[string]*peer{"prompter": p, "other": q} {
		trimmed, _ := c.until("history_trimmed")
		if trimmed["droppedMessages"] != float64(2) || trimmed["keptMessages"] != float64(2) {
			t.Errorf("%s: history_trimmed %v", name, trimmed)
		}
		u := c.updateOf("history_compacted")
		if u["auto"] != true || u["before"] != float64(before) || u["after"] != float64(after) {
			t.Errorf("%s: history_compacted %v, want auto, %d -> %d", name, u, before, after)
		}
		if _, has := u["turnId"]; has {
			t.Errorf("%s: history_compacted carries a turnId", name)
		}
	}
	// The transcript keeps every row; the next turn starts from the compacted context.
	if m := p.must("session/messages", fmt.Sprintf(`{"sessionId":%q}`, sid)); m["total"] != float64(6) {
		t.Errorf("the transcript has %v rows, want 6", m["total"])
	}
	p.must("session/prompt", prompt(sid, "four"))
	got = reqLines(f.Request(t, 4))
	if len(got) != 5 || got[0] != "user:"+session.CompactedPrompt || got[4] != "user:four" {
		t.Errorf("the next turn's context: %q", got)
	}
}

func TestNoAutomaticCompactionWithoutAWindowOrWithCompactAtZero(t *testing.T) {
	for name, c := range map[string]struct {
		window int
		at     *float64
	}{
		"no window":      {0, nil},
		"compact_at = 0": {1000, fraction(0)},
	} {
		t.Run(name, func(t *testing.T) {
			h, f := autoServer(t, c.window, c.at, threeScript...)
			p := h.peer(t, "")
			sid := p.newSession(`{"agentAlias":"fake"}`)
			runTurns(t, p, sid, threeTurns)
			if n := f.Count(); n != 3 {
				t.Fatalf("%d model calls, want 3", n)
			}
			for i := range 3 {
				if summaryRequest(f.Request(t, i)) {
					t.Errorf("call %d asked for a summary", i)
				}
			}
			if got := reqLines(f.Request(t, 2)); len(got) != 5 {
				t.Errorf("the third turn was sent %q, want the whole context", got)
			}
			for _, u := range p.drain() {
				if u["type"] == "history_compacted" {
					t.Errorf("history_compacted: %v", u)
				}
			}
		})
	}
}

// A compaction that saved less than a tenth is not tried again before the context
// grew by another tenth.
func TestACompactionThatSavedLittleWaitsForTheContextToGrowATenth(t *testing.T) {
	h, f := autoServer(t, 1000, fraction(0.5),
		answer(strings.Repeat("x", 200), 10), // one
		answer("short", 600),                 // two: the next estimate passes 500
		answer(strings.Repeat("y", 230), 5),  // the summary: not smaller
		answer("three answered", 610),        // three: 610 < 1.1 × ~602, no new try
		answer("four answered", 700),         // four: 700 passes it
		answer("s", 5),                       // the second summary
		answer("five answered", 5))
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	runTurns(t, p, sid, []string{"one", "two", "three", "four", "five"})
	var kinds []string
	for i := range f.Count() {
		if summaryRequest(f.Request(t, i)) {
			kinds = append(kinds, "summary")
		} else {
			kinds = append(kinds, "turn")
		}
	}
	if s := strings.Join(kinds, " "); s != "turn turn summary turn turn summary turn" {
		t.Errorf("the model calls: %s", s)
	}
	var compacted []map[string]any
	for _, u := range p.drain() {
		if u["type"] == "history_compacted" {
			compacted = append(compacted, u)
		}
	}
	if len(compacted) != 1 || compacted[0]["auto"] != true {
		t.Errorf("history_compacted updates: %v (only the second summary was smaller)", compacted)
	}
}

// Between two model calls of one turn (after a tool result), the compaction keeps
// the turn's prompt, call and result as they are, after the summary; the store has
// the same context: a session closed and restored goes on from it.
func TestAutomaticCompactionWithinATurnKeepsTheTurnsStepsAndIsStored(t *testing.T) {
	h, f := autoServer(t, 1000, fraction(0.5),
		answer(big[:800], 10), // one: the next estimate is about 210 tokens
		fakeopenai.Answer{Calls: []fakeopenai.Call{{Name: "list_dir", Args: `{"path":"."}`}}, InputTokens: 600}, // two
		answer("the summary", 5),   // before two's second call
		answer("two answered", 40), // two, after its tool
		answer("three answered", 5))
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	runTurns(t, p, sid, []string{"one", "two"})
	if !summaryRequest(f.Request(t, 2)) {
		t.Fatalf("call 2 was not the summary request: %q", reqLines(f.Request(t, 2)))
	}
	if got := reqLines(f.Request(t, 2)); len(got) != 3 || got[0] != "user:one" || !strings.HasPrefix(got[2], "user:"+session.CompactRequest) {
		t.Errorf("the summary request: %q", got)
	}
	got := reqLines(f.Request(t, 3))
	if len(got) != 5 || got[0] != "user:"+session.CompactedPrompt || got[1] != "assistant:the summary" || got[2] != "user:two" ||
		!strings.HasPrefix(got[4], "tool:") {
		t.Fatalf("the turn's call after its tool result: %q", got)
	}
	u := p.updateOf("history_compacted")
	if u["auto"] != true {
		t.Errorf("history_compacted %v", u)
	}
	// Closed and restored from the store, the session goes on from the compacted context.
	p.must("session/close", fmt.Sprintf(`{"sessionId":%q}`, sid))
	runTurns(t, p, sid, []string{"three"})
	got = reqLines(f.Request(t, 4))
	if len(got) != 7 || got[0] != "user:"+session.CompactedPrompt || got[2] != "user:two" || got[5] != "assistant:two answered" || got[6] != "user:three" {
		t.Errorf("after a restore the model got %q", got)
	}
	if m := p.must("session/messages", fmt.Sprintf(`{"sessionId":%q}`, sid)); m["total"] != float64(8) {
		t.Errorf("the transcript has %v rows, want 8", m["total"])
	}
}

// The echo provider counts words, and reports the context's size itself: its
// sessions compact on their own too, offline.
func TestEchoSessionsCompactOnTheirOwn(t *testing.T) {
	conf := agentsConfig()
	conf.Providers["small"] = config.Provider{Kind: "echo", ContextWindow: 1000}
	conf.Agents["small"] = config.Agent{Provider: "small", Autonomy: config.Full}
	h := startServerWith(t, Config{}, conf, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"small"}`)
	runTurns(t, p, sid, []string{strings.Repeat("w ", 500), "second question", "third question"})
	trimmed, before := p.until("history_trimmed")
	for _, u := range before {
		if u["type"] == "history_compacted" {
			t.Fatalf("compacted before the trim: %v", u)
		}
	}
	if trimmed["droppedMessages"] != float64(2) {
		t.Errorf("history_trimmed %v: the first turn does not fit a summary request", trimmed)
	}
	if u := p.updateOf("history_compacted"); u["auto"] != true || u["after"].(float64) >= u["before"].(float64) {
		t.Errorf("history_compacted %v", u)
	}
	res := p.must("session/prompt", prompt(sid, "fourth question"))
	if res["text"] != "echo: fourth question" {
		t.Errorf("after compaction echo answered %q", res["text"])
	}
	if m := p.must("session/messages", fmt.Sprintf(`{"sessionId":%q}`, sid)); m["total"] != float64(8) {
		t.Errorf("the transcript has %v rows, want 8", m["total"])
	}
}

// compact_at unset is 0.8: the third turn's estimate, over 950 of 1000, passes it.
func TestCompactAtDefaultsToEightTenths(t *testing.T) {
	h, f := autoServer(t, 1000, nil, threeScript...)
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	runTurns(t, p, sid, threeTurns)
	if f.Count() != 4 || !summaryRequest(f.Request(t, 2)) || summaryRequest(f.Request(t, 1)) {
		t.Errorf("%d model calls; the third is a summary request: %v", f.Count(), f.Count() > 2 && summaryRequest(f.Request(t, 2)))
	}
}
