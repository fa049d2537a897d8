package rpc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
)

// echoWords is a prompt of n words, which the echo provider streams back as n
// agent_message_chunk updates.
func echoWords(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "w%d ", i)
	}
	return b.String()
}

// paceLine is what these tests read of a line.
type paceLine struct {
	Method string `json:"method"`
	Params struct {
		Type     string `json:"type"`
		Seq      uint64 `json:"seq"`
		AfterSeq uint64 `json:"afterSeq"`
		Text     string `json:"text"`
	} `json:"params"`
	ID     any            `json:"id"`
	Result map[string]any `json:"result"`
	Error  map[string]any `json:"error"`
}

func readPace(t *testing.T, r *bufio.Reader, conn net.Conn, within time.Duration) paceLine {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(within))
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading: %v", err)
	}
	var l paceLine
	if err := json.Unmarshal(line, &l); err != nil {
		t.Fatalf("%v in %.200q", err, line)
	}
	return l
}

// TestAReaderAt1msPerFrameIsNeverLaggedThroughAn8000UpdateTurn: under the default
// settings, a client that takes a millisecond over every frame reads an echo turn
// of 8,000 chunks to its end: never lagged, every update in seq order, the chunks
// adding up to the reply, then the answer (docs/protocol.md,
// "A daemon that runs for months").
func TestAReaderAt1msPerFrameIsNeverLaggedThroughAn8000UpdateTurn(t *testing.T) {
	h := sessionServer(t, session.Options{})
	c := h.client(t)
	c.initialize()
	c.send(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"full"},"id":"n"}`)
	sid := c.recv()["result"].(map[string]any)["sessionId"].(string)
	words := echoWords(8000)
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":` + prompt(sid, words) + `,"id":"p"}`)
	var text strings.Builder
	var last uint64
	var reply string
	updates := 0
	for {
		l := readPace(t, c.r, c.conn, 60*time.Second)
		if l.ID == "p" {
			if l.Result["stopReason"] != "end_turn" {
				t.Fatalf("prompt: %v %v", l.Result, l.Error)
			}
			reply, _ = l.Result["text"].(string)
			break
		}
		if l.Params.Type == "lagged" {
			t.Fatalf("a reader at 1 ms per frame was lagged after %d updates", updates)
		}
		if last != 0 && l.Params.Seq != last+1 {
			t.Fatalf("seq %d after %d", l.Params.Seq, last)
		}
		last = l.Params.Seq
		updates++
		if l.Params.Type == "agent_message_chunk" {
			text.WriteString(l.Params.Text)
		}
		time.Sleep(time.Millisecond) // the reader's pace
	}
	if text.String() != reply || !strings.Contains(reply, words) {
		t.Fatalf("the chunks add up to %d bytes, want the %d of the reply", text.Len(), len(reply))
	}
	if updates < 8000 {
		t.Fatalf("%d updates, want at least 8,000", updates)
	}
}

// TestAReaderThatStopsIsLaggedAndRecoversThroughAttach: a client attached to a
// session stops reading while another one's turn streams 8,000 chunks. The turn and
// its prompter do not wait for it. Once it took nothing for 30 s it is detached;
// reading again, it finds what was on its way, then lagged {afterSeq} with the last
// seq it was sent, and session/attach from there delivers the rest, with no gap and
// no duplicate (docs/protocol.md, "A client that falls behind" and
// "No reader is lost").
func TestAReaderThatStopsIsLaggedAndRecoversThroughAttach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The write stall that closes a connection (docs/protocol.md, "Limits") is
		// set past the lag.
		h := startBubbleServer(t, Config{WriteTimeout: time.Hour}, agentsConfig(), session.Options{})
		p := h.peer(t, "")
		sid := p.newSession(`{"agentAlias":"full"}`)
		w := h.client(t)
		w.initialize()
		w.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/attach","params":{"sessionId":%q},"id":"a0"}`, sid))
		if m := w.recv(); m["result"] == nil {
			t.Fatalf("attach: %v", m)
		}
		// w reads no more. The prompter's turn runs to its end regardless.
		res, err := p.await(p.start("session/prompt", prompt(sid, echoWords(8000))))
		if err != nil || res["stopReason"] != "end_turn" {
			t.Fatalf("prompt: %v %v", res, err)
		}
		var all []uint64
		for _, u := range p.drain() {
			all = append(all, uint64(u["seq"].(float64)))
		}
		time.Sleep(session.LagAfter + time.Second)
		synctest.Wait()

		var got []uint64
		var after uint64
		for {
			l := readPace(t, w.r, w.conn, time.Hour)
			if l.Params.Type == "lagged" {
				after = l.Params.AfterSeq
				break
			}
			got = append(got, l.Params.Seq)
		}
		if len(got) >= len(all) {
			t.Fatalf("a reader that stopped got all %d updates before lagged", len(got))
		}
		if n := len(got); (n > 0 && got[n-1] != after) || (n == 0 && after != all[0]-1) {
			t.Fatalf("lagged afterSeq %d after %d updates %v…", after, n, got[max(0, n-3):])
		}
		w.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/attach","params":{"sessionId":%q,"afterSeq":%d},"id":"a1"}`, sid, after))
		queued := len(got)
		for {
			l := readPace(t, w.r, w.conn, time.Hour)
			if l.ID == "a1" {
				if l.Error != nil || l.Result["replayed"] != float64(len(all)-queued) {
					t.Fatalf("attach after lagging: %v %v (%d of %d queued)", l.Result, l.Error, queued, len(all))
				}
				break
			}
			got = append(got, l.Params.Seq)
		}
		if len(got) != len(all) {
			t.Fatalf("the stopped reader has %d updates, the prompter %d", len(got), len(all))
		}
		for i := range all {
			if got[i] != all[i] {
				t.Fatalf("update %d: seq %d, want %d", i, got[i], all[i])
			}
		}
	})
}

// TestAPrompterThatStopsReadingIsToldLaggedBeforeTheAnswer: the prompting client
// itself stops reading through an 8,000-chunk turn. Once it took nothing for 30 s
// it is detached; reading again, it finds what was on its way, then lagged, and
// only then the prompt's answer, which waited on its cursor (docs/protocol.md,
// "A client that falls behind").
func TestAPrompterThatStopsReadingIsToldLaggedBeforeTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startBubbleServer(t, Config{WriteTimeout: time.Hour}, agentsConfig(), session.Options{})
		c := h.client(t)
		c.initialize()
		c.send(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"full"},"id":"n"}`)
		sid := c.recv()["result"].(map[string]any)["sessionId"].(string)
		c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":` + prompt(sid, echoWords(8000)) + `,"id":"p"}`)
		time.Sleep(session.LagAfter + time.Second) // c reads nothing meanwhile
		synctest.Wait()

		var last uint64
		lagged := false
		for {
			l := readPace(t, c.r, c.conn, time.Hour)
			if l.ID == "p" {
				if l.Result["stopReason"] != "end_turn" {
					t.Fatalf("prompt: %v %v", l.Result, l.Error)
				}
				break
			}
			if lagged {
				t.Fatalf("after lagged, before the answer: %+v", l)
			}
			if l.Params.Type == "lagged" {
				if l.Params.AfterSeq != last {
					t.Fatalf("lagged afterSeq %d after seq %d", l.Params.AfterSeq, last)
				}
				lagged = true
				continue
			}
			if last != 0 && l.Params.Seq != last+1 {
				t.Fatalf("seq %d after %d", l.Params.Seq, last)
			}
			last = l.Params.Seq
		}
		if !lagged {
			t.Fatal("a prompter that stopped reading for 30 s was never told lagged")
		}
	})
}
