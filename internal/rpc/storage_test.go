package rpc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// docs/protocol.md, "Storage failures", through the store's failure injection point
// (store.Options.FailWrites), so these run without root; cmd/zeroclaw's storage test
// does the same on a really full file system.

// faults fails the store writes it names, as a full disk does, until cleared; a
// write may first be let through a number of times.
type faults struct {
	mu  sync.Mutex
	ops map[string]int // op -> how many more writes succeed before they fail
}

var errDiskFull = errors.New("database or disk is full (13)")

func (f *faults) fail(ops ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = map[string]int{}
	for _, op := range ops {
		f.ops[op] = 0
	}
}

// failAfter lets op succeed n more times, then fails it.
func (f *faults) failAfter(op string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ops == nil {
		f.ops = map[string]int{}
	}
	f.ops[op] = n
}

func (f *faults) clear() { f.fail() }

func (f *faults) hook(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.ops[op]
	switch {
	case !ok:
		return nil
	case n > 0:
		f.ops[op] = n - 1
		return nil
	}
	return errDiskFull
}

// faultyServer serves conf from a store that fails the writes f names, plus a fake
// OpenAI endpoint behind agent "fake" (autonomy full) that answers script.
func faultyServer(t *testing.T, script ...fakeopenai.Answer) (*harness, *faults, *fakeopenai.Server) {
	t.Helper()
	return faultyServerWith(t, session.Options{}, script...)
}

// faultyServerWith is faultyServer with the given session options (their Store is
// the faulty one).
func faultyServerWith(t *testing.T, opts session.Options, script ...fakeopenai.Answer) (*harness, *faults, *fakeopenai.Server) {
	t.Helper()
	f := &faults{}
	st, err := store.Open(filepath.Join(t.TempDir(), "sessions.db"), store.Options{FailWrites: f.hook})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if len(script) == 0 {
		script = []fakeopenai.Answer{{Text: []string{"ok"}}}
	}
	fake := fakeopenai.New(t, script...)
	conf := agentsConfig()
	conf.Providers["fake"] = config.Provider{Kind: "openai", BaseURL: fake.URL(), Model: "m"}
	conf.Agents["fake"] = config.Agent{Provider: "fake", Autonomy: config.Full}
	opts.Store = st
	return startServerWith(t, Config{}, conf, opts), f, fake
}

// transcript is the session's visible rows as "role:text", markers as "marker!".
func transcript(t *testing.T, p *peer, sid string) string {
	t.Helper()
	res := p.must("session/messages", fmt.Sprintf(`{"sessionId":%q}`, sid))
	var rows []string
	for _, m := range res["messages"].([]any) {
		r := m.(map[string]any)
		if r["interrupted"] == true {
			rows = append(rows, "marker!")
			continue
		}
		rows = append(rows, fmt.Sprint(r["role"], ":", r["text"]))
	}
	return strings.Join(rows, " | ")
}

func wantStorageFailed(t *testing.T, res map[string]any) {
	t.Helper()
	text, _ := res["text"].(string)
	if res["stopReason"] != "error" || !strings.HasPrefix(text, "storage failed: ") {
		t.Fatalf("turn = %v, want stopReason error and a text starting %q", res, "storage failed: ")
	}
	if strings.Contains(text, string(filepath.Separator)+"tmp") {
		t.Errorf("the text names a path: %q", text)
	}
}

func TestPromptWhoseMessageCannotBeStoredFailsBeforeTheModelIsCalled(t *testing.T) {
	h, f, fake := faultyServer(t)
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	p.must("session/prompt", prompt(sid, "first"))

	f.fail(store.OpBeginTurn)
	_, err := p.call("session/prompt", prompt(sid, "lost"))
	if e := wantCode(t, err, -32603); strings.Contains(e.Message, string(filepath.Separator)) {
		t.Errorf("the error names a path: %q", e.Message)
	}
	if n := fake.Count(); n != 1 {
		t.Fatalf("the model was called %d times, want once (the first turn only)", n)
	}
	if st := p.must("status", ""); fmt.Sprint(st["sessions"]) != fmt.Sprintf("[map[agentAlias:fake sessionId:%s state:idle]]", sid) {
		t.Errorf("after the failed prompt the session is %v, want idle", st["sessions"])
	}
	if got := transcript(t, p, sid); got != "user:first | assistant:ok" {
		t.Fatalf("transcript %q: the first turn must stay, the failed prompt must not appear", got)
	}

	f.clear() // space returns: the same live session works again
	if r := p.must("session/prompt", prompt(sid, "again")); r["stopReason"] != "end_turn" {
		t.Fatalf("after recovery: %v", r)
	}
	if got := roles(fake.Request(t, 1)); got != "user:first assistant:ok user:again" {
		t.Errorf("the model got %q: the prompt that failed to store must not reach it", got)
	}
}

func TestCheckpointFailureMidTurnEndsItWithStorageFailed(t *testing.T) {
	tests := []struct {
		name     string
		stored   int    // checkpoints of the turn that succeed before the failure
		progress string // what the transcript keeps of the failed turn
		ran      bool   // whether the tool ran
	}{
		{"the model's answer", 0, "user:second | marker!", false},
		{"the tool result", 1, `user:second | assistant:let me | tool_call:{"path":"ran","content":"x"} | marker!`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, f, fake := faultyServer(t,
				fakeopenai.Answer{Text: []string{"ok"}},
				fakeopenai.Answer{Text: []string{"let me"}, Calls: []fakeopenai.Call{{ID: "c1", Name: "write_file", Args: `{"path":"ran","content":"x"}`}}},
				fakeopenai.Answer{Text: []string{"fine"}})
			p := h.peer(t, "")
			created := p.must("session/new", `{"agentAlias":"fake"}`)
			sid, workspace := created["sessionId"].(string), created["workspaceDir"].(string)
			p.must("session/prompt", prompt(sid, "first"))

			// Storage goes away mid-turn, for everything but the prompt and reads: the
			// failed turn cannot even be finished.
			f.fail(store.OpInterrupt, store.OpEndTurn)
			f.failAfter(store.OpCheckpoint, tt.stored)
			res := p.must("session/prompt", prompt(sid, "second"))
			wantStorageFailed(t, res)
			if _, err := os.Stat(filepath.Join(workspace, "ran")); (err == nil) != tt.ran {
				t.Errorf("the tool ran: %v, want %v", err == nil, tt.ran)
			}
			if n := fake.Count(); n != 2 {
				t.Errorf("the model was called %d times, want 2: none after the failed checkpoint", n)
			}
			// While the failed turn cannot be finished, a new prompt fails before the model.
			f.fail(store.OpInterrupt)
			_, err := p.call("session/prompt", prompt(sid, "third"))
			wantCode(t, err, -32603)
			if n := fake.Count(); n != 2 {
				t.Errorf("the model was called during the outage (%d calls)", n)
			}
			if got := transcript(t, p, sid); got != "user:first | assistant:ok" {
				t.Fatalf("transcript during the outage %q, want the first turn intact", got)
			}

			f.clear() // space returns: no restart needed
			if r := p.must("session/prompt", prompt(sid, "fourth")); r["stopReason"] != "end_turn" || r["text"] != "fine" {
				t.Fatalf("after recovery: %v", r)
			}
			want := "user:first | assistant:ok | " + tt.progress + " | user:fourth | assistant:fine"
			if got := transcript(t, p, sid); got != want {
				t.Errorf("transcript %q, want %q", got, want)
			}
			sent := roles(fake.Request(t, 2))
			if !strings.HasPrefix(sent, "user:first assistant:ok user:second") || !strings.Contains(sent, "fourth") ||
				strings.Contains(sent, "calls") != (tt.stored > 0) {
				t.Errorf("the model got %q: want the stored context and the new prompt", sent)
			}
		})
	}
}

func TestCommitFailureEndsTheTurnWithStorageFailed(t *testing.T) {
	h, f, _ := faultyServer(t)
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	p.must("session/prompt", prompt(sid, "first"))

	f.fail(store.OpEndTurn)
	wantStorageFailed(t, p.must("session/prompt", prompt(sid, "second")))
	// The turn's checkpoints were stored: its progress is shown, marked interrupted.
	if got, want := transcript(t, p, sid), "user:first | assistant:ok | user:second | assistant:ok | marker!"; got != want {
		t.Errorf("transcript %q, want %q", got, want)
	}
	f.clear()
	if r := p.must("session/prompt", prompt(sid, "third")); r["stopReason"] != "end_turn" {
		t.Fatalf("after recovery: %v", r)
	}
}

// roles renders a model request's messages as "role:content", tool calls as
// "role:N calls".
func roles(req map[string]any) string {
	var out []string
	for _, m := range fakeopenai.Messages(req) {
		if m["role"] == "system" {
			continue
		}
		s := fmt.Sprint(m["role"], ":", m["content"])
		if calls, ok := m["tool_calls"].([]any); ok {
			s = fmt.Sprintf("%v:%d calls", m["role"], len(calls))
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// Updates whose replay-log write failed are never skipped silently by a replay: an
// attach from before them answers replay_truncated, and one from after them works.
func TestAReplayLogThatFailedToStoreAnswersTruncatedNotAGap(t *testing.T) {
	h, f, _ := faultyServer(t)
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	// The replay log is written in the background; an attach that replays flushes it
	// first, so it marks where each phase's writes end.
	flusher := h.peer(t, "")
	flush := func() { flusher.call("session/attach", fmt.Sprintf(`{"sessionId":%q,"afterSeq":0}`, sid)) }
	p.must("session/prompt", prompt(sid, "first"))
	before := p.drain()
	seen := before[len(before)-1]["seq"].(float64)
	flush()

	f.fail(store.OpAppendUpdates)
	p.must("session/prompt", prompt(sid, "lost from the log"))
	lost := p.drain()
	flush()
	f.clear()
	p.must("session/prompt", prompt(sid, "third"))
	after := p.drain()

	q := h.peer(t, "")
	_, err := q.call("session/attach", fmt.Sprintf(`{"sessionId":%q,"afterSeq":%d}`, sid, int(seen)))
	if e := wantCode(t, err, -32602); e.Data["reason"] != "replay_truncated" {
		t.Fatalf("attach from before the lost updates: %v, want replay_truncated", e)
	}
	last := lost[len(lost)-1]["seq"].(float64)
	r := q.must("session/attach", fmt.Sprintf(`{"sessionId":%q,"afterSeq":%d}`, sid, int(last)))
	if r["replayed"] != float64(len(after)) {
		t.Errorf("attach from after the lost updates replayed %v, want %d", r["replayed"], len(after))
	}
}

// A seq that cannot be reserved is never handed out (after a crash it could be
// handed out again): the update that needed it is not sent, and the turn ends as a
// storage failure, not as a success. Once space returns the session goes on, its
// seqs increasing.
// wantRecovered clears the faults and wants the session's next prompt to end its
// turn, with updates whose seqs increase.
func wantRecovered(t *testing.T, f *faults, p *peer, sid string) {
	t.Helper()
	f.clear()
	if r := p.must("session/prompt", prompt(sid, "again")); r["stopReason"] != "end_turn" {
		t.Fatalf("after recovery: %v", r)
	}
	var last float64
	for _, u := range p.drain() {
		if u["sessionId"] != sid {
			continue
		}
		seq, _ := u["seq"].(float64)
		if seq <= last {
			t.Fatalf("seq %v after %v", seq, last)
		}
		last = seq
	}
	if last == 0 {
		t.Fatal("no update after recovery")
	}
}

// The prompt's user_message is the session's first update: when no seq can be
// reserved for it, the prompt is not stored and answers -32603 before the model is
// called (docs/protocol.md, "Storage failures"), and nothing is sent.
func TestAPromptWhoseSeqCannotBeReservedFailsBeforeTheModelIsCalled(t *testing.T) {
	h, f, fake := faultyServer(t)
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	f.fail(store.OpReserveSeq) // the session's first update needs the first reservation
	_, err := p.call("session/prompt", prompt(sid, "first"))
	wantCode(t, err, -32603)
	for _, u := range p.drain() {
		if u["sessionId"] == sid {
			t.Fatalf("an update was sent without a reserved seq: %v", u)
		}
	}
	if n := fake.Count(); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
	if got := transcript(t, p, sid); got != "" {
		t.Errorf("transcript %q: the prompt that failed must not appear", got)
	}
	wantRecovered(t, f, p, sid)
}

// A reservation the turn needs midway (blocks of 4 seqs here) that fails ends the
// turn as storage failed, and no update goes out with a seq beyond the reserved.
func TestATurnWhoseSeqsCannotBeReservedFailsAndSendsNoUnreservedSeq(t *testing.T) {
	const block = 4
	h, f, fake := faultyServerWith(t, session.Options{SeqBlock: block},
		fakeopenai.Answer{Text: []string{"one ", "two ", "three ", "four ", "five ", "six "}})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"fake"}`)
	f.failAfter(store.OpReserveSeq, 1) // the prompt's seqs 1-4; the fifth update needs another block
	res := p.must("session/prompt", prompt(sid, "first"))
	wantStorageFailed(t, res)
	sent := 0
	for _, u := range p.drain() {
		if u["sessionId"] != sid {
			continue
		}
		sent++
		if seq, _ := u["seq"].(float64); seq > block {
			t.Fatalf("an update was sent without a reserved seq: %v", u)
		}
	}
	if sent != block {
		t.Errorf("%d updates sent, want the %d reserved ones", sent, block)
	}
	if n := fake.Count(); n > 1 {
		t.Errorf("the model was called %d times", n)
	}
	wantRecovered(t, f, p, sid)
}
