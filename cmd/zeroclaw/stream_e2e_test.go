//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// streamLine is what the tests of docs/protocol.md's "No reader is lost" read of
// each line: an update, a response, or a lagged notice.
type streamLine struct {
	Method string `json:"method"`
	ID     any    `json:"id"`
	Params struct {
		SessionID string `json:"sessionId"`
		Type      string `json:"type"`
		Seq       uint64 `json:"seq"`
		AfterSeq  uint64 `json:"afterSeq"`
		Text      string `json:"text"`
	} `json:"params"`
	Result struct {
		Text       string `json:"text"`
		StopReason string `json:"stopReason"`
	} `json:"result"`
	Error jsontext.Value `json:"error"`
}

// reader reads one connection's lines on a goroutine of its own, so that a test
// reads several connections at full speed at once.
type reader struct {
	lines chan streamLine
	raw   chan []byte // the params of each update, when kept
	errs  chan error
}

func readAll(c *rpcConn, keepRaw bool) *reader {
	r := &reader{lines: make(chan streamLine, 4096), errs: make(chan error, 1)}
	if keepRaw {
		r.raw = make(chan []byte, 1<<17)
	}
	go func() {
		br := bufio.NewReaderSize(c.conn, 1<<16)
		for {
			c.conn.SetReadDeadline(time.Now().Add(180 * time.Second))
			line, err := br.ReadBytes('\n')
			if err != nil {
				r.errs <- err
				close(r.lines)
				return
			}
			var l streamLine
			if chunkLine(line, &l) {
				// a text chunk with nothing to unescape, read by hand: decoding
				// each of 720,000 lines was most of this test's time under -race
			} else if err := json.Unmarshal(line, &l); err != nil {
				r.errs <- fmt.Errorf("%v in %.200q", err, line)
				close(r.lines)
				return
			}
			if r.raw != nil && l.Method == "session/update" {
				var p struct {
					Params jsontext.Value `json:"params"`
				}
				json.Unmarshal(line, &p)
				r.raw <- p.Params
			}
			r.lines <- l
		}
	}()
	return r
}

// chunkLine reads line into l when it is an agent_message_chunk whose text has no
// escape, as the daemon frames one (docs/protocol.md's example), and reports
// whether it was.
func chunkLine(line []byte, l *streamLine) bool {
	const head = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"`
	const middle = `,"type":"agent_message_chunk","text":"`
	rest, ok := bytes.CutPrefix(line, []byte(head))
	if !ok {
		return false
	}
	sid, rest, ok := bytes.Cut(rest, []byte(`"`))
	if !ok {
		return false
	}
	_, rest, ok = bytes.Cut(rest, []byte(`,"seq":`))
	if !ok {
		return false
	}
	digits, rest, ok := bytes.Cut(rest, []byte(middle))
	if !ok {
		return false
	}
	text, ok := bytes.CutSuffix(rest, []byte("\"}}\n"))
	if !ok || bytes.ContainsAny(text, `"\`) {
		return false
	}
	seq, err := strconv.ParseUint(string(digits), 10, 64)
	if err != nil {
		return false
	}
	l.Method, l.Params.SessionID, l.Params.Seq = "session/update", string(sid), seq
	l.Params.Type, l.Params.Text = "agent_message_chunk", string(text)
	return true
}

// fataler is what readTurn fails: a test, or panicT on a watcher's goroutine.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// panicT fails by panicking, for a goroutine that is not the test's (its caller
// recovers and reports).
type panicT struct{}

func (panicT) Helper()                           {}
func (panicT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// next returns the connection's next line, failing t when the connection ended.
func (r *reader) next(t fataler, who string) streamLine {
	t.Helper()
	l, ok := <-r.lines
	if !ok {
		t.Fatalf("%s: %v", who, <-r.errs)
	}
	return l
}

// echoPrompt is a prompt of n lines and the echo provider's answer to it.
func echoPrompt(n int) (prompt, answer string) {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "line %d w w w w w w", i)
	}
	return b.String(), "echo: " + b.String()
}

// readTurn reads one connection until it has received the whole answer as
// agent_message_chunk updates of session sid (and, on the prompting connection,
// the prompt's response id), and fails t when it was lagged, missed a seq or the
// chunks do not add up to the answer.
func readTurn(t fataler, who string, r *reader, sid, answer string, id any) int {
	t.Helper()
	var text strings.Builder
	var last uint64
	n := 0
	for answered := id == nil; !answered || text.Len() < len(answer); {
		l := r.next(t, who)
		switch {
		case l.ID != nil && l.ID == id:
			if l.Error != nil || l.Result.StopReason != "end_turn" || l.Result.Text != answer {
				t.Fatalf("%s: the prompt's answer %+v %s", who, l.Result.StopReason, l.Error)
			}
			if text.Len() != len(answer) {
				t.Fatalf("%s: the answer came after %d of the turn's %d bytes of chunks", who, text.Len(), len(answer))
			}
			answered = true
		case l.Method != "session/update" || l.Params.SessionID != sid:
			t.Fatalf("%s: unexpected %+v", who, l)
		case l.Params.Type == "lagged":
			t.Fatalf("%s: lagged after seq %d, %d updates into a turn reading at full speed", who, l.Params.AfterSeq, n)
		default:
			if last != 0 && l.Params.Seq != last+1 {
				t.Fatalf("%s: seq %d after %d", who, l.Params.Seq, last)
			}
			last = l.Params.Seq
			n++
			if l.Params.Type == "agent_message_chunk" {
				text.WriteString(l.Params.Text)
			}
		}
	}
	if text.String() != answer {
		t.Fatalf("%s: the chunks add up to %d bytes that are not the answer's %d", who, text.Len(), len(answer))
	}
	return n
}

// TestNoReaderIsLostWhateverTheTurnsSize: echo turns of 2,000 and 10,000 prompt
// lines (18,000 and 90,000 updates), on one session, on a new session a turn, and
// on a new one after closing the last, with 1 and 8 watchers reading at full
// speed besides the prompting connection: on every connection no turn is lagged
// or short, and the chunks add up to the answer (docs/protocol.md, "No reader is
// lost"; a client reading at full speed used to be lagged in most such turns, and
// the replay log no longer held what it had missed).
func TestNoReaderIsLostWhateverTheTurnsSize(t *testing.T) {
	h := home(t)
	writeConfig(t, h, "[agents.default]\nprovider = \"echo\"\nautonomy = \"full\"\n")
	d := startDaemon(t, h, nil)

	prompter := dial(t, d.socket)
	prompter.initialize()
	pr := readAll(prompter, false)
	type turn struct {
		lines, watchers int
	}
	patterns := []struct {
		name  string
		turns []turn
		fresh bool // a new session a turn
		close bool // closing the last one first
	}{
		{"one session", []turn{{2000, 1}, {10000, 8}}, false, false},
		{"a new session a turn", []turn{{2000, 8}, {10000, 1}}, true, false},
		{"a new session after closing the last", []turn{{2000, 8}, {10000, 1}}, true, true},
	}
	// ZEROCLAW_STREAM_FIGURE=12 runs the whole figure of docs/BENCHMARKS.md: that
	// many turns of each size with 1 and with 8 watchers, in each pattern.
	if n, _ := strconv.Atoi(os.Getenv("ZEROCLAW_STREAM_FIGURE")); n > 0 {
		var all []turn
		for _, w := range []int{1, 8} {
			for _, lines := range []int{2000, 10000} {
				for range n {
					all = append(all, turn{lines, w})
				}
			}
		}
		for i := range patterns {
			patterns[i].turns = all
		}
	}
	k := 0
	call := func(method, params string) {
		t.Helper()
		k++
		id := fmt.Sprintf("c%d", k)
		prompter.send(`{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `,"id":"` + id + `"}`)
		for {
			l := pr.next(t, "prompter")
			if l.ID == id {
				if l.Error != nil {
					t.Fatalf("%s: %s", method, l.Error)
				}
				return
			}
		}
	}
	for _, p := range patterns {
		sid := ""
		for i, tr := range p.turns {
			if sid == "" || p.fresh {
				if sid != "" && p.close {
					call("session/close", fmt.Sprintf(`{"sessionId":%q}`, sid))
				}
				sid = fmt.Sprintf("s%d", k)
				call("session/new", fmt.Sprintf(`{"agentAlias":"default","sessionId":%q,"keepSiblings":true}`, sid))
			}
			watchers := make([]*reader, tr.watchers)
			conns := make([]*rpcConn, tr.watchers)
			for w := range watchers {
				c := dial(t, d.socket)
				c.initialize()
				c.must("session/attach", fmt.Sprintf(`{"sessionId":%q}`, sid))
				watchers[w], conns[w] = readAll(c, false), c
			}
			prompt, answer := echoPrompt(tr.lines)
			params, _ := json.Marshal(map[string]string{"sessionId": sid, "prompt": prompt})
			id := fmt.Sprintf("p%d", i)
			start := time.Now()
			prompter.send(`{"jsonrpc":"2.0","method":"session/prompt","params":` + string(params) + `,"id":"` + id + `"}`)
			done := make(chan int, len(watchers))
			for w, r := range watchers {
				go func() { // t.Fatal is for the test's goroutine: a watcher panics
					defer func() {
						if e := recover(); e != nil {
							t.Errorf("%v", e)
							done <- -1
						}
					}()
					done <- readTurn(panicT{}, fmt.Sprintf("watcher %d", w), r, sid, answer, nil)
				}()
			}
			n := readTurn(t, "prompter", pr, sid, answer, id)
			for range watchers {
				// A watcher stops at the answer's last chunk; the prompter reads
				// on to its answer, after the turn's last update (usage).
				if got := <-done; got >= 0 && (got > n || got < n-2) {
					t.Errorf("%s, %d lines: a watcher got %d updates, the prompter %d", p.name, tr.lines, got, n)
				}
			}
			for _, c := range conns {
				c.conn.Close()
			}
			if t.Failed() {
				t.FailNow()
			}
			t.Logf("%s: a %d-line turn of %d updates to %d connections in %s", p.name, tr.lines, n, 1+tr.watchers, time.Since(start))
		}
	}
}

// TestALaggedWatcherRecoversEverythingFromItsAfterSeq: with rpc.replay_bytes at
// 1 MiB, a watcher that stops reading during a 2,000-line turn is lagged (its
// backlog passed the budget); once it reads again it gets what it was sent, its
// lagged notice, and, re-attaching from the notice's afterSeq, every later update
// in order, and the next turn live. The prompting connection, reading at full
// speed, may fall that far behind too: it recovers the same way, with no gap.
func TestALaggedWatcherRecoversEverythingFromItsAfterSeq(t *testing.T) {
	h := home(t)
	writeConfig(t, h, "[rpc]\nreplay_bytes = 1048576\n\n[agents.default]\nprovider = \"echo\"\nautonomy = \"full\"\n")
	d := startDaemon(t, h, nil)
	prompter, watcher := dial(t, d.socket), dial(t, d.socket)
	prompter.initialize()
	watcher.initialize()
	prompter.must("session/new", `{"agentAlias":"default","sessionId":"big"}`)
	watcher.must("session/attach", `{"sessionId":"big"}`)
	pr := readAll(prompter, false)
	prompt, answer := echoPrompt(2000)
	params, _ := json.Marshal(map[string]string{"sessionId": "big", "prompt": prompt})
	prompter.send(`{"jsonrpc":"2.0","method":"session/prompt","params":` + string(params) + `,"id":"p"}`)
	n := readTurnRecovering(t, prompter, pr, "big", answer, "p")
	if !strings.Contains(d.stderr.String(), "backlog passed rpc.replay_bytes") {
		// The watcher read nothing: its backlog is the whole turn, 2 MiB or more.
		t.Fatalf("the stalled watcher was not lagged by its backlog:\n%s", d.stderr.String())
	}

	// The watcher reads again.
	wr := readAll(watcher, false)
	var seqs []uint64
	var after uint64
	for {
		l := wr.next(t, "watcher")
		if l.Params.Type == "lagged" {
			after = l.Params.AfterSeq
			break
		}
		if l.Method != "session/update" || (len(seqs) > 0 && l.Params.Seq != seqs[len(seqs)-1]+1) {
			t.Fatalf("before its lagged notice the watcher got %+v after %d updates", l, len(seqs))
		}
		seqs = append(seqs, l.Params.Seq)
	}
	if len(seqs) > 0 && after != seqs[len(seqs)-1] {
		t.Fatalf("lagged afterSeq %d, but the last update sent was %d", after, seqs[len(seqs)-1])
	}
	watcher.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/attach","params":{"sessionId":"big","afterSeq":%d},"id":"re"}`, after))
	var text strings.Builder
	replayed := 0
	for {
		l := wr.next(t, "watcher")
		if l.ID == "re" {
			if l.Error != nil {
				t.Fatalf("re-attaching from afterSeq %d: %s", after, l.Error)
			}
			break
		}
		want := after + 1
		if len(seqs) > 0 {
			want = seqs[len(seqs)-1] + 1
		}
		if l.Method != "session/update" || l.Params.Seq != want {
			t.Fatalf("replay: got %+v, want seq %d", l, want)
		}
		seqs = append(seqs, l.Params.Seq)
		replayed++
		if l.Params.Type == "agent_message_chunk" {
			text.WriteString(l.Params.Text)
		}
	}
	if replayed == 0 || len(seqs) != n || !strings.HasSuffix(answer, text.String()) {
		t.Fatalf("the watcher has %d of the turn's %d updates after a replay of %d", len(seqs), n, replayed)
	}
	// Live again: the next turn, whole.
	prompt, answer = echoPrompt(200)
	params, _ = json.Marshal(map[string]string{"sessionId": "big", "prompt": prompt})
	prompter.send(`{"jsonrpc":"2.0","method":"session/prompt","params":` + string(params) + `,"id":"p2"}`)
	m := readTurnRecovering(t, prompter, pr, "big", answer, "p2")
	if got := readTurn(t, "watcher", wr, "big", answer, nil); got > m || got < m-2 { // it stops at the last chunk
		t.Fatalf("the recovered watcher got %d updates of the next turn's %d", got, m)
	}
}

// readTurnRecovering is readTurn of a prompting connection that may be lagged: it
// re-attaches from the notice's afterSeq, as a client must, and fails t on a gap, a
// duplicate, or an attach that cannot deliver. It returns the updates received.
func readTurnRecovering(t *testing.T, c *rpcConn, r *reader, sid, answer, id string) int {
	t.Helper()
	var text strings.Builder
	var last uint64
	n, lags, attaching, answered := 0, 0, false, false
	for !answered || attaching {
		l := r.next(t, "prompter")
		switch {
		case l.ID == id:
			if l.Error != nil || l.Result.Text != answer {
				t.Fatalf("the prompt's answer %s", l.Error)
			}
			answered = true
		case l.ID == "re":
			if l.Error != nil {
				t.Fatalf("re-attaching after lagged: %s", l.Error)
			}
			attaching = false
		case l.Params.Type == "lagged":
			if l.Params.AfterSeq != last && last != 0 {
				t.Fatalf("lagged afterSeq %d after seq %d", l.Params.AfterSeq, last)
			}
			lags++
			attaching = true
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/attach","params":{"sessionId":%q,"afterSeq":%d},"id":"re"}`, sid, l.Params.AfterSeq))
		case l.Method == "session/update":
			if last != 0 && l.Params.Seq != last+1 {
				t.Fatalf("prompter: seq %d after %d (%d lags)", l.Params.Seq, last, lags)
			}
			last = l.Params.Seq
			n++
			if l.Params.Type == "agent_message_chunk" {
				text.WriteString(l.Params.Text)
			}
		}
	}
	if text.String() != answer {
		t.Fatalf("prompter: the chunks add up to %d bytes, not the answer's %d (%d lags)", text.Len(), len(answer), lags)
	}
	return n
}

// TestAKill9DuringABigTurnKeepsEveryUpdateAClientSaw: a watcher reads a
// 10,000-line turn; the daemon is killed with SIGKILL in the middle of it. After the
// restart, a replay of the session from its start holds every update the watcher
// was sent, byte for byte, in order (durable before visible).
func TestAKill9DuringABigTurnKeepsEveryUpdateAClientSaw(t *testing.T) {
	h := home(t)
	writeConfig(t, h, "[rpc]\nreplay_events = 200000\n\n[agents.default]\nprovider = \"echo\"\nautonomy = \"full\"\n")
	d := startDaemon(t, h, nil)
	prompter, watcher := dial(t, d.socket), dial(t, d.socket)
	prompter.initialize()
	watcher.initialize()
	prompter.must("session/new", `{"agentAlias":"default","sessionId":"k"}`)
	watcher.must("session/attach", `{"sessionId":"k"}`)
	wr := readAll(watcher, true)
	prompt, _ := echoPrompt(10000)
	params, _ := json.Marshal(map[string]string{"sessionId": "k", "prompt": prompt})
	prompter.send(`{"jsonrpc":"2.0","method":"session/prompt","params":` + string(params) + `,"id":"p"}`)
	var seen [][]byte
	for len(seen) < 2000 {
		wr.next(t, "watcher")
		seen = append(seen, <-wr.raw)
	}
	syscall.Kill(d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.exited
	for l := range wr.lines { // what the watcher was sent before the kill
		if l.Method == "session/update" {
			seen = append(seen, <-wr.raw)
		}
	}

	d = startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	r := readAll(c, true)
	c.send(`{"jsonrpc":"2.0","method":"session/attach","params":{"sessionId":"k","afterSeq":0},"id":"a"}`)
	var replay [][]byte
	for {
		l := r.next(t, "replay")
		if l.ID == "a" {
			if l.Error != nil {
				t.Fatalf("attach after the restart: %s", l.Error)
			}
			break
		}
		if l.Method == "session/update" {
			replay = append(replay, <-r.raw)
		}
	}
	if len(replay) < len(seen) {
		t.Fatalf("the replay after the restart has %d updates; the watcher saw %d", len(replay), len(seen))
	}
	for i, p := range seen {
		if string(replay[i]) != string(p) {
			t.Fatalf("update %d: the watcher saw %.120s, the replay has %.120s", i, p, replay[i])
		}
	}
	t.Logf("the watcher saw %d updates before the kill; the replay holds %d", len(seen), len(replay))
}
