package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// longSession is a model holding n messages (prompts and markdown replies, every
// tenth turn a tool call), none rendered yet.
func longSession(tb testing.TB, n int) *ui {
	t, _ := tb.(*testing.T)
	if t == nil {
		t = &testing.T{}
	}
	u := newUI(t, 80, 24)
	for i := 0; i < n; i += 2 {
		turn := fmt.Sprintf("t%d", i)
		ub := u.m.tr.add(&block{kind: blockUser, turnID: turn})
		fmt.Fprintf(&ub.text, "question %d: how does the parser handle `%d`?", i, i)
		if i%20 == 0 {
			u.m.tr.add(&block{kind: blockTool, turnID: turn, tool: &toolCard{id: turn, name: "shell", args: []byte(`{"command":"ls"}`), state: toolDone, output: "a\nb\nc"}})
		}
		ab := u.m.tr.add(&block{kind: blockAssistant, turnID: turn})
		fmt.Fprintf(&ab.text, "Answer **%d**: the parser reads a token, then\n\n- checks it\n- keeps it\n\n```go\nx := %d\n```\n", i, i)
	}
	return u
}

// BenchmarkFirstPaint20000 is the first screen of a 20,000-message transcript.
func BenchmarkFirstPaint20000(b *testing.B) {
	u := longSession(b, 20_000)
	u.m.View() // the markdown renderer is made once per width
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		for _, bl := range u.m.tr.blocks {
			bl.lines, bl.dirty = nil, true
		}
		u.m.tr.scroll = 0
		b.StartTimer()
		u.m.View()
	}
}

// BenchmarkScrollStep is one step of the mouse wheel (3 lines) up through a
// 20,000-message transcript, with its repaint.
func BenchmarkScrollStep(b *testing.B) {
	u := longSession(b, 20_000)
	u.m.View()
	b.ResetTimer()
	for b.Loop() {
		u.m.Update(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
		u.m.View()
		if u.m.tr.atTop {
			u.m.tr.scroll = 0
		}
	}
}

// TestStreamOf1000ChunksASecondIsDrawnAtMost60TimesASecond streams 1,000 chunks a
// second for a second through the inbox, as the client's callback delivers them,
// into a program-like loop (Update, then View, for every message). Every chunk
// reaches the transcript, and frames stay at or under 60 a second.
func TestStreamOf1000ChunksASecondIsDrawnAtMost60TimesASecond(t *testing.T) {
	r := streamChunks(t, 1000, time.Second)
	t.Logf("1,000 chunks in %v: %d frames (%.0f/s), %v per frame on average", r.elapsed.Round(time.Millisecond), r.frames, r.fps(), r.perFrame())
	if r.fps() > 61 {
		t.Fatalf("%d frames in %v: more than 60 a second", r.frames, r.elapsed)
	}
}

type streamResult struct {
	frames  int
	elapsed time.Duration
	drawing time.Duration
}

func (r streamResult) fps() float64 { return float64(r.frames) / r.elapsed.Seconds() }
func (r streamResult) perFrame() time.Duration {
	if r.frames == 0 {
		return 0
	}
	return r.drawing / time.Duration(r.frames)
}

func streamChunks(t *testing.T, n int, over time.Duration) streamResult {
	u := newUI(t, 80, 24)
	msgs := make(chan tea.Msg, 1024)
	u.m.inbox.send = func(m tea.Msg) { msgs <- m }
	var want strings.Builder
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		for i := range n {
			if d := time.Until(start.Add(over * time.Duration(i) / time.Duration(n))); d > 0 {
				time.Sleep(d) // pacing the producer, not synchronising the test
			}
			u.m.inbox.push(client.Update{SessionID: "s1", TurnID: "t1", Seq: uint64(i + 1), Type: client.AgentMessageChunk, Text: fmt.Sprintf("w%d ", i)})
		}
	}()
	for i := range n {
		fmt.Fprintf(&want, "w%d ", i)
	}
	var r streamResult
	finished := false
	for !finished {
		select {
		case m := <-msgs:
			t0 := time.Now()
			u.m.Update(m)
			u.m.View()
			r.drawing += time.Since(t0)
			r.frames++
		case <-done:
			finished = true
		}
	}
	r.elapsed = time.Since(start)
	u.send(flushMsg{}) // what the last scheduled frame would take
	last := u.m.tr.last()
	if last == nil || last.text.String() != want.String() {
		got := ""
		if last != nil {
			got = last.text.String()
		}
		t.Fatalf("the streamed text lost chunks: %d bytes, want %d", len(got), want.Len())
	}
	return r
}

// BenchmarkStream1000ChunksPerSecond reports the frames a second and the time per
// frame of a 1,000-chunks-a-second stream.
func BenchmarkStream1000ChunksPerSecond(b *testing.B) {
	t := &testing.T{}
	for b.Loop() {
		r := streamChunks(t, 1000, time.Second)
		b.ReportMetric(r.fps(), "frames/s")
		b.ReportMetric(float64(r.perFrame().Microseconds()), "µs/frame")
	}
}

// TestALongReplyRendersInSegmentsAsOneRenderWould: a reply rendered while it
// streams, in segments, shows what rendering it whole at once shows.
func TestALongReplyRendersInSegmentsAsOneRenderWould(t *testing.T) {
	var text strings.Builder
	for i := range 60 {
		fmt.Fprintf(&text, "Paragraph %d has **bold** words and more words to wrap around the screen's edge.\n\n", i)
		if i%10 == 0 {
			fmt.Fprintf(&text, "```go\nfunc f%d() {\n\n\treturn\n}\n```\n\n", i)
		}
	}
	full := text.String()
	streamed := newUI(t, 80, 24)
	for i := 0; i < len(full); i += 397 {
		streamed.push(chunk("t1", full[i:min(len(full), i+397)]))
		streamed.m.View()
	}
	whole := newUI(t, 80, 24)
	b := &block{kind: blockAssistant, turnID: "t1"}
	b.text.WriteString(full)
	once := whole.m.rend.markdown(full, 80)
	got := streamed.m.rend.render(streamed.m.tr.last(), 80)
	strip := func(ls []string) string {
		var out []string
		for _, l := range ls {
			if l = strings.TrimSpace(stripANSI(l)); l != "" {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	if strip(got) != strip(once) {
		t.Fatalf("segments differ from one render:\n--- segments\n%s\n--- whole\n%s", strip(got), strip(once))
	}
	if streamed.m.tr.last().segEnd == 0 {
		t.Fatal("the long reply was not rendered in segments")
	}
}

// BenchmarkStreamFrameOfALongReply is one frame of a 100 KB reply that streams.
func BenchmarkStreamFrameOfALongReply(b *testing.B) {
	u := longSession(b, 0)
	para := strings.Repeat("word ", 18) + "\n\n"
	for u.m.tr.last() == nil || u.m.tr.last().text.Len() < 100_000 {
		u.push(chunk("t1", para))
		u.m.View()
	}
	b.ResetTimer()
	for b.Loop() {
		u.push(chunk("t1", "more "))
		u.m.View()
	}
}
