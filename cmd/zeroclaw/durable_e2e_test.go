//go:build unix

package main

import (
	"bufio"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestEveryUpdateAClientSawSurvivesAKill9 kills the real daemon with SIGKILL at 40
// points of streamed echo turns of one session (after 1 to a few hundred updates a
// client read, and some before the turn's first update), restarting it each time.
// Everything the client was sent, read up to the kill and then up to the end of the
// stream, is in the replay after the restart (session/attach afterSeq 0), byte for
// byte; no seq is used twice, before or after any restart (docs/protocol.md,
// "A daemon that runs for months": durable before visible).
func TestEveryUpdateAClientSawSurvivesAKill9(t *testing.T) {
	h := home(t)
	writeConfig(t, h, "[rpc]\nreplay_events = 1000000\n\n[agents.default]\nprovider = \"echo\"\nautonomy = \"full\"\n")
	var prompt strings.Builder
	// 4,000 words: more than the socket holds, so that at each kill point the
	// daemon is still streaming, paced by the client.
	for i := range 800 {
		fmt.Fprintf(&prompt, "line %d of the turn\n", i)
	}
	params, _ := json.Marshal(map[string]string{"sessionId": "k9", "prompt": prompt.String()})

	seen := map[uint64]string{} // every update any client was sent, by seq
	var lastRunMax uint64       // the highest seq seen before the last restart
	const points = 40
	for i := range points {
		d := startDaemon(t, h, nil)
		c := dial(t, d.socket)
		c.initialize()
		if r := c.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default","sessionId":"k9"},"id":2}`); r["error"] != nil {
			t.Fatalf("session/new: %v", r)
		}
		c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":` + string(params) + `,"id":3}`)
		// Kill after reading this many updates; every fifth point, at once.
		killAfter := (i * 53) % 400
		if i%5 == 0 {
			killAfter = 0
		}
		var got []seenUpdate
		for len(got) < killAfter {
			u, ok := readSeen(t, c.r, c.conn, 60*time.Second)
			if !ok {
				t.Fatalf("point %d: the stream ended after %d updates", i, len(got))
			}
			if u.seq == 0 { // the answer: the turn is over before the kill point
				break
			}
			got = append(got, u)
		}
		kill9(t, d)
		// What the daemon had written to the socket before it died was sent too.
		for {
			u, ok := readSeen(t, c.r, c.conn, 10*time.Second)
			if !ok {
				break
			}
			if u.seq != 0 {
				got = append(got, u)
			}
		}
		for _, u := range got {
			if u.seq <= lastRunMax {
				t.Fatalf("point %d: seq %d sent after a restart, but seqs up to %d were used before it", i, u.seq, lastRunMax)
			}
			if prev, dup := seen[u.seq]; dup && prev != u.raw {
				t.Fatalf("point %d: seq %d sent twice with different updates:\n%s\n%s", i, u.seq, prev, u.raw)
			}
			seen[u.seq] = u.raw
		}
		for _, u := range got {
			lastRunMax = max(lastRunMax, u.seq)
		}
		t.Logf("point %d: killed after %d updates read, %d sent in all", i, killAfter, len(got))
	}

	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	c.send(`{"jsonrpc":"2.0","method":"session/attach","params":{"sessionId":"k9","afterSeq":0},"id":4}`)
	replay := map[uint64]string{}
	var prev uint64
	for {
		u, ok := readSeen(t, c.r, c.conn, 60*time.Second)
		if !ok {
			t.Fatal("the replay's connection closed")
		}
		if u.seq == 0 {
			if strings.Contains(u.raw, `"error"`) {
				t.Fatalf("attach: %s", u.raw)
			}
			break
		}
		if u.seq <= prev {
			t.Fatalf("replay: seq %d after %d", u.seq, prev)
		}
		prev = u.seq
		replay[u.seq] = u.raw
	}
	for seq, raw := range seen {
		stored, ok := replay[seq]
		if !ok {
			t.Fatalf("seq %d was sent to a client but is not in the replay after the kill (%d sent, %d replayed)", seq, len(seen), len(replay))
		}
		if stored != raw {
			t.Fatalf("seq %d: sent %s, replayed %s", seq, raw, stored)
		}
	}
	t.Logf("%d updates sent over %d kills, all %d in the replay of %d", len(seen), points, len(seen), len(replay))
}

// seenUpdate is one line a client read: a session/update (seq > 0, raw its params)
// or anything else (seq 0, raw the line).
type seenUpdate struct {
	seq uint64
	raw string
}

// readSeen reads one line; false at the end of the stream (or a read timeout
// after a kill).
func readSeen(t *testing.T, r *bufio.Reader, conn net.Conn, within time.Duration) (seenUpdate, bool) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(within))
	line, err := r.ReadBytes('\n')
	if err != nil {
		var ne net.Error
		if errors.Is(err, io.EOF) || errors.As(err, &ne) || errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "reset") {
			return seenUpdate{}, false
		}
		t.Fatalf("reading: %v", err)
	}
	var m struct {
		Method string         `json:"method"`
		Params jsontext.Value `json:"params"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("%v in %.200q", err, line)
	}
	if m.Method != "session/update" {
		return seenUpdate{raw: string(line)}, true
	}
	var p struct {
		Seq uint64 `json:"seq"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Seq == 0 {
		t.Fatalf("an update without a seq: %s", line)
	}
	return seenUpdate{seq: p.Seq, raw: string(m.Params)}, true
}
