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
// update; the stalled one, once it reads again, finds what was queued for it, then
// `lagged {afterSeq}`, and session/attach from there delivers the rest, seq by seq,
// with no gap and no duplicate (SPEC §15).
func TestAStalledClientNeitherSlowsItsNeighbourNorLosesAnUpdate(t *testing.T) {
	h := home(t)
	writeConfig(t, h, "[agents.default]\nprovider = \"echo\"\nautonomy = \"full\"\n")
	d := startDaemon(t, h, nil)

	fast, stalled := dial(t, d.socket), dial(t, d.socket)
	fast.initialize()
	stalled.initialize()
	fast.must("session/new", `{"agentAlias":"default","sessionId":"shared"}`)
	stalled.must("session/new", `{"agentAlias":"default","sessionId":"shared"}`) // attaches: resumed

	// A reply of about 8,400 words: more than the stalled client's queue (2,048
	// frames) and its socket's buffers hold, less than the replay log keeps (10,000).
	var prompt strings.Builder
	for i := range 1400 {
		fmt.Fprintf(&prompt, "line %d w w w w\n", i)
	}
	params, _ := json.Marshal(map[string]string{"sessionId": "shared", "prompt": prompt.String()})
	start := time.Now()
	fast.send(`{"jsonrpc":"2.0","method":"session/prompt","params":` + string(params) + `,"id":"p"}`)
	// The fast client reads all the time. A stream as fast as the echo provider's
	// can outrun even a reader at full speed; it then catches up as every client must:
	// on lagged, it attaches after the last seq it saw.
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

	// The stalled client reads again: a prefix of the turn, then lagged.
	var got []uint64
	var after uint64
	for {
		u := readUpdate(t, stalled)
		if u.Params.Type == "lagged" {
			after = u.Params.AfterSeq
			break
		}
		got = append(got, u.Params.Seq)
	}
	if len(got) > 0 && got[len(got)-1] != after {
		t.Fatalf("lagged afterSeq %d, but the last update sent was %d", after, got[len(got)-1])
	}
	if len(got) >= len(seqs) {
		t.Fatalf("the stalled client never overflowed: %d updates of %d", len(got), len(seqs))
	}
	queued := len(got)
	stalled.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/attach","params":{"sessionId":"shared","afterSeq":%d},"id":"a"}`, after))
	for {
		u := readUpdate(t, stalled)
		if u.Method == "" {
			if u.Error != nil || u.Result["replayed"] != float64(len(seqs)-queued) {
				t.Fatalf("attach after lagging: %v %v", u.Result, u.Error)
			}
			break
		}
		got = append(got, u.Params.Seq)
	}
	if len(got) != len(seqs) {
		t.Fatalf("the stalled client has %d updates, the fast one %d", len(got), len(seqs))
	}
	for i := range seqs {
		if got[i] != seqs[i] {
			t.Fatalf("update %d: seq %d, want %d", i, got[i], seqs[i])
		}
	}
	t.Logf("the stalled client had %d updates queued and recovered %d through session/attach", queued, len(seqs)-queued)

}
