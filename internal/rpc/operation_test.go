package rpc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
)

func promptOp(sid, text, op string) string {
	return fmt.Sprintf(`{"sessionId":%q,"prompt":%s,"operationId":%s}`, sid, quote(text), quote(op))
}

func approve(t *testing.T, p *peer, sid string, request any) {
	t.Helper()
	p.must("session/approve", fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":"allow_once"}`, sid, request))
}

// userRows counts the prompts in the visible transcript: one per turn that ran.
func userRows(t *testing.T, p *peer, sid string) int {
	t.Helper()
	m := p.must("session/messages", fmt.Sprintf(`{"sessionId":%q}`, sid))
	n := 0
	for _, row := range m["messages"].([]any) {
		if row.(map[string]any)["role"] == "user" {
			n++
		}
	}
	return n
}

func TestAPromptRepeatingAnOperationIDAnswersItsTurnBeforeDuringAndAfterIt(t *testing.T) {
	h := sessionServer(t, session.Options{})
	a, b, c := h.peer(t, ""), h.peer(t, ""), h.peer(t, "")
	sid := a.newSession("")
	for _, p := range []*peer{b, c} {
		p.must("session/new", fmt.Sprintf(`{"agentAlias":"default","sessionId":%q}`, sid))
	}

	// A turn held at its approval keeps the next prompt queued: op-1 is repeated
	// before its turn starts.
	hold := a.start("session/prompt", promptOp(sid, `/tool shell {"command":"echo held"}`, "op-0"))
	held := a.updateOf("approval_request")
	first := a.start("session/prompt", promptOp(sid, "queued words", "op-1"))
	again := b.start("session/prompt", promptOp(sid, "queued words", "op-1"))
	approve(t, a, sid, held["requestId"])
	if _, err := a.await(hold); err != nil {
		t.Fatal(err)
	}
	r1, err := a.await(first)
	if err != nil {
		t.Fatal(err)
	}
	r1b, err := b.await(again)
	if err != nil {
		t.Fatal(err)
	}
	if r1["turnId"] != r1b["turnId"] || r1["text"] != "echo: queued words" || r1b["text"] != r1["text"] {
		t.Fatalf("a repeat before the turn: %v and %v", r1, r1b)
	}

	// During: the turn waits for its approval while the id is repeated twice.
	running := a.start("session/prompt", promptOp(sid, `/tool shell {"command":"echo during"}`, "op-2"))
	pending := a.updateOf("approval_request")
	during := []<-chan map[string]any{b.start("session/prompt", promptOp(sid, "ignored", "op-2")),
		c.start("session/prompt", promptOp(sid, "ignored too", "op-2"))}
	approve(t, a, sid, pending["requestId"])
	r2, err := a.await(running)
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range during {
		r, err := []*peer{b, c}[i].await(ch)
		if err != nil {
			t.Fatal(err)
		}
		if r["turnId"] != r2["turnId"] || r["text"] != r2["text"] || r["stopReason"] != "end_turn" {
			t.Fatalf("a repeat during the turn: %v, the turn %v", r, r2)
		}
	}
	if !strings.Contains(r2["text"].(string), "shell -> during") {
		t.Fatalf("the turn: %v", r2)
	}

	// After: answered at once from what the turn stored, usage included.
	r1c := c.must("session/prompt", promptOp(sid, "anything", "op-1"))
	if r1c["turnId"] != r1["turnId"] || r1c["text"] != r1["text"] || fmt.Sprint(r1c["usage"]) != fmt.Sprint(r1["usage"]) {
		t.Fatalf("a repeat after the turn: %v, the turn %v", r1c, r1)
	}
	if n := userRows(t, a, sid); n != 3 {
		t.Fatalf("%d turns in the transcript, want 3 (op-0, op-1, op-2)", n)
	}
}

func TestOperationIDMustBeOneTo128Characters(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"full"}`)
	for _, op := range []string{"", strings.Repeat("x", 129), strings.Repeat("é", 129)} {
		_, err := p.call("session/prompt", promptOp(sid, "hi", op))
		if e, ok := err.(*rpcError); !ok || e.Code != -32602 || e.Data["param"] != "operationId" {
			t.Errorf("operationId of %d characters: %v", len([]rune(op)), err)
		}
	}
	if _, err := p.call("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":"hi","operationId":7}`, sid)); codeOf(err) != -32602 {
		t.Errorf("a number as operationId: %v", err)
	}
	// 128 characters of two bytes each is within the limit; so is the snake_case spelling.
	if _, err := p.call("session/prompt", promptOp(sid, "hi", strings.Repeat("é", 128))); err != nil {
		t.Errorf("128 characters: %v", err)
	}
	r := p.must("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":"one","operation_id":"snake"}`, sid))
	if again := p.must("session/prompt", promptOp(sid, "two", "snake")); again["turnId"] != r["turnId"] {
		t.Errorf("operation_id and operationId are one param: %v, %v", r, again)
	}
	if n := userRows(t, p, sid); n != 2 {
		t.Errorf("%d turns, want 2", n)
	}
}
