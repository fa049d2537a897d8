package rpc

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
)

// TestFramesAStalledConnectionHoldsAreNotWrittenOver: the session's tail writes
// its blocks of frames again once nothing reads them (docs/protocol.md,
// "A daemon that runs for months": a cursor, not a copy
// per connection). A connection that stops reading holds frames of those blocks in
// its queue and in the write it is blocked in, after its cursor passed them. Two
// more turns stream on the session meanwhile, filling and recycling blocks; when
// the stalled client reads again, every update it gets is the one it was sent, in
// seq order, and the chunks of each turn add up to that turn's answer.
func TestFramesAStalledConnectionHoldsAreNotWrittenOver(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.client(t)
	p.initialize()
	p.send(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"full"},"id":"n"}`)
	sid := p.recv()["result"].(map[string]any)["sessionId"].(string)
	x := h.client(t)
	x.initialize()
	x.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/attach","params":{"sessionId":%q},"id":"a"}`, sid))
	if m := x.recv(); m["result"] == nil {
		t.Fatalf("attach: %v", m)
	}
	// x reads nothing more until the turns are over. Together they stay well
	// within what the tail keeps, so x is not lagged (it falls behind nothing).
	const turns, words = 3, 2500
	var answers []string
	var end uint64 // the last seq the prompter was sent
	for i := range turns {
		id := fmt.Sprint("p", i)
		p.send(`{"jsonrpc":"2.0","method":"session/prompt","params":` + prompt(sid, echoWords(words)) + `,"id":"` + id + `"}`)
		for {
			l := readPace(t, p.r, p.conn, 60*time.Second)
			if l.Method == "session/update" {
				end = l.Params.Seq
			}
			if l.ID == id {
				if l.Result["stopReason"] != "end_turn" {
					t.Fatalf("prompt %d: %v %v", i, l.Result, l.Error)
				}
				answers = append(answers, l.Result["text"].(string))
				break
			}
		}
	}
	check := func(who string, got []string) {
		t.Helper()
		if len(got) != turns {
			t.Fatalf("%s saw %d turns, want %d", who, len(got), turns)
		}
		for i := range turns {
			if got[i] != answers[i] {
				t.Fatalf("turn %d: %s has chunks adding up to %d bytes %.80q…, the answer is %d bytes %.80q…",
					i+1, who, len(got[i]), got[i], len(answers[i]), answers[i])
			}
		}
	}
	check("the stalled client", turnTexts(t, x, end))
	// The replay log stored them from the same blocks: a replay from the store
	// has the same turns.
	r := h.client(t)
	r.initialize()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/attach","params":{"sessionId":%q,"afterSeq":0},"id":"a"}`, sid))
	check("a replay", turnTexts(t, r, end))
}

// turnTexts reads c's session/update notifications up to seq end, which must come
// in seq order with no lagged among them, and returns each turn's chunks joined.
func turnTexts(t *testing.T, c *client, end uint64) []string {
	t.Helper()
	var text strings.Builder
	var got []string
	var last uint64
	started := false
	for last < end {
		l := readPace(t, c.r, c.conn, 60*time.Second)
		if l.Method != "session/update" {
			t.Fatalf("got %+v among the updates", l)
		}
		if l.Params.Type == "lagged" {
			t.Fatalf("lagged after seq %d", last)
		}
		if last != 0 && l.Params.Seq != last+1 {
			t.Fatalf("seq %d after %d", l.Params.Seq, last)
		}
		last = l.Params.Seq
		switch l.Params.Type {
		case "user_message": // a turn begins: the one before it is complete
			if started {
				got = append(got, text.String())
				text.Reset()
			}
			started = true
		case "agent_message_chunk":
			text.WriteString(l.Params.Text)
		}
	}
	return append(got, text.String())
}
