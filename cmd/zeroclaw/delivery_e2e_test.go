//go:build unix

package main

import (
	"encoding/json/v2"
	"fmt"
	"strings"
	"testing"
	"time"
)

// updateLine is what these tests read of a session/update or a response.
type updateLine struct {
	Method string `json:"method"`
	Params struct {
		Type     string `json:"type"`
		Seq      uint64 `json:"seq"`
		AfterSeq uint64 `json:"afterSeq"`
	} `json:"params"`
	ID     any            `json:"id"`
	Result map[string]any `json:"result"`
	Error  map[string]any `json:"error"`
}

func readUpdate(t *testing.T, c *rpcConn) updateLine {
	t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading: %v", err)
	}
	var u updateLine
	if err := json.Unmarshal(line, &u); err != nil {
		t.Fatalf("%v in %.200q", err, line)
	}
	return u
}

// TestAStalledClientNeitherSlowsItsNeighbourNorLosesAnUpdate: two clients on one
// session; one stops reading. The other's turn runs to its end and it receives every
// update, never lagged; the stalled one, once it reads again (well within 30 s, and
// the replay log keeps the turn), receives every update too, in order, and is never
// lagged either: it is read from the replay log at its pace (docs/protocol.md,
// "A daemon that runs for months", which replaced the outbound queue for
// session/update: it used to be lagged here).
func TestAStalledClientNeitherSlowsItsNeighbourNorLosesAnUpdate(t *testing.T) {
	h := home(t)
	writeConfig(t, h, "[agents.default]\nprovider = \"echo\"\nautonomy = \"full\"\n")
	d := startDaemon(t, h, nil)

	fast, stalled := dial(t, d.socket), dial(t, d.socket)
	fast.initialize()
	stalled.initialize()
	fast.must("session/new", `{"agentAlias":"default","sessionId":"shared"}`)
	stalled.must("session/new", `{"agentAlias":"default","sessionId":"shared"}`) // attaches: resumed

	// A reply of about 8,400 words: more than the notification queue (2,048 frames)
	// and the stalled client's socket buffers hold, less than the replay log keeps
	// (10,000).
	var prompt strings.Builder
	for i := range 1400 {
		fmt.Fprintf(&prompt, "line %d w w w w\n", i)
	}
	params, _ := json.Marshal(map[string]string{"sessionId": "shared", "prompt": prompt.String()})
	start := time.Now()
	fast.send(`{"jsonrpc":"2.0","method":"session/prompt","params":` + string(params) + `,"id":"p"}`)
	// The fast client reads all the time; should it be lagged (it must not), it
	// catches up as every client must: it attaches after the last seq it saw.
	var seqs []uint64
	fastLags, attaching, answered := 0, false, false
	for !answered || attaching {
		u := readUpdate(t, fast)
		switch {
		case u.ID == "p":
			if u.Result["stopReason"] != "end_turn" {
				t.Fatalf("the fast client's prompt: %v %v", u.Result, u.Error)
			}
			answered = true
		case u.ID == "a":
			attaching = false
			if u.Error != nil {
				t.Fatalf("the fast client's attach after lagging: %v", u.Error)
			}
		case u.Params.Type == "lagged":
			fastLags, attaching = fastLags+1, true
			fast.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/attach","params":{"sessionId":"shared","afterSeq":%d},"id":"a"}`, u.Params.AfterSeq))
		default:
			if n := len(seqs); n > 0 && u.Params.Seq != seqs[n-1]+1 {
				t.Fatalf("fast client: seq %d after %d", u.Params.Seq, seqs[n-1])
			}
			seqs = append(seqs, u.Params.Seq)
		}
	}
	t.Logf("the fast client's turn: %d updates in %s beside a stalled client (%d lags caught up)", len(seqs), time.Since(start), fastLags)

	if fastLags != 0 {
		t.Fatalf("a client reading at full speed was lagged %d times", fastLags)
	}

	// The stalled client reads again: the whole turn, in order, no lagged.
	var got []uint64
	for len(got) < len(seqs) {
		u := readUpdate(t, stalled)
		if u.Params.Type == "lagged" {
			t.Fatalf("the stalled client was lagged after %d updates of %d", len(got), len(seqs))
		}
		if u.Method != "session/update" {
			t.Fatalf("the stalled client got %+v", u)
		}
		got = append(got, u.Params.Seq)
	}
	for i := range seqs {
		if got[i] != seqs[i] {
			t.Fatalf("update %d: seq %d, want %d", i, got[i], seqs[i])
		}
	}
}
