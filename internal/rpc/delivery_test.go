package rpc

import (
	"encoding/json/jsontext"
	"fmt"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/feed"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
)

// TestAConnectionWhoseSlotsAreAllHeldCanStillSeeApproveAndCancel fills every one of
// a connection's 64 in-flight slots with prompts that wait for approval, then uses
// that same connection for status, session/approve and session/cancel
// (docs/protocol.md, "Delivery"): each answers while the prompts still hold their
// slots, and every prompt then ends.
func TestAConnectionWhoseSlotsAreAllHeldCanStillSeeApproveAndCancel(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	const n = 64
	sids := make([]string, n)
	prompts := make([]<-chan map[string]any, n)
	requests := map[string]string{} // sessionId -> approval requestId
	for i := range n {
		sids[i] = p.newSession(fmt.Sprintf(`{"agentAlias":"default","sessionId":"slow-%d","keep_siblings":true}`, i))
	}
	for i := range n {
		prompts[i] = p.start("session/prompt", prompt(sids[i], `/tool shell {"command":"sleep 300"}`))
	}
	for len(requests) < n { // every prompt is running and holds its slot
		u := p.updateOf("approval_request")
		requests[u["sessionId"].(string)] = u["requestId"].(string)
	}

	status := p.must("status", "")
	if status["activeSessions"] != float64(n) {
		t.Fatalf("status with every slot held: %v", status)
	}
	res := p.must("session/approve", fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":"reject_once"}`,
		sids[0], requests[sids[0]]))
	if res["accepted"] != true {
		t.Fatalf("approve with every slot held: %v", res)
	}
	if r, err := p.await(prompts[0]); err != nil || r["stopReason"] != "end_turn" {
		t.Fatalf("the prompt whose call was rejected: %v, %v", r, err)
	}
	for i := 1; i < n; i++ {
		if res := p.must("session/cancel", fmt.Sprintf(`{"sessionId":%q}`, sids[i])); res["cancelled"] != true {
			t.Fatalf("cancel %s: %v", sids[i], res)
		}
	}
	for i := 1; i < n; i++ {
		if r, err := p.await(prompts[i]); err != nil || r["stopReason"] != "cancelled" {
			t.Fatalf("prompt %d after its cancel: %v, %v", i, r, err)
		}
	}
}

// TestAPromptsAnswerComesBeforeTheNextTurnsUpdates: with a second prompt queued
// behind the first on one connection, the first prompt's answer arrives before any
// update of the second turn (docs/protocol.md, "Delivery"), every time.
func TestAPromptsAnswerComesBeforeTheNextTurnsUpdates(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"full"}`)
	for round := range 50 {
		first := p.start("session/prompt", prompt(sid, "first words here"))
		second := p.start("session/prompt", prompt(sid, "second words"))
		r1, err := p.await(first)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := p.await(second)
		if err != nil {
			t.Fatal(err)
		}
		// The two are served concurrently: either may take the turn first.
		if r2["_n"].(float64) < r1["_n"].(float64) {
			r1, r2 = r2, r1
		}
		for _, u := range p.drain() {
			if u["turnId"] == r2["turnId"] && u["_n"].(float64) < r1["_n"].(float64) {
				t.Fatalf("round %d: update %v of the later turn arrived before the earlier prompt's answer (#%v)", round, u, r1["_n"])
			}
		}
	}
}

// The session frames the updates of its tail itself (feed.FrameUpdate), so that
// every connection writes them from the tail without a copy: the frame must be
// exactly the one jsonrpc writes for the notification, newline included.
func TestTheSessionFramesUpdatesAsJSONRPCDoes(t *testing.T) {
	for _, payload := range []string{`{"sessionId":"s","seq":1,"type":"agent_message_chunk","text":"a\"b\n"}`, `{}`} {
		want, err := jsonrpc.AppendRequest(nil, nil, "session/update", jsontext.Value(payload))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		if got := feed.FrameUpdate(nil, []byte(payload)); string(got) != string(want) {
			t.Fatalf("session frames %q, jsonrpc %q", got, want)
		}
	}
}
