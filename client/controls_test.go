//go:build unix

package client

import (
	"errors"
	"strings"
	"testing"
)

func TestSessionControlsThroughTheClient(t *testing.T) {
	var seen recorder
	c, sid := connect(t, sharedSocket, WithUpdateHandler(seen.add))
	ctx := ctxFor(t)
	got, err := c.SetSession(ctx, sid, SessionSettings{Mode: ModeReadOnly, Title: "client title"})
	if err != nil || got.Mode != ModeReadOnly || got.Title != "client title" || got.Model != "echo" {
		t.Fatalf("SetSession = %+v, %v", got, err)
	}
	_, err = c.SetSession(ctx, sid, SessionSettings{Model: "nope"})
	var e *Error
	if !errors.As(err, &e) || e.Code != -32602 {
		t.Errorf("an unknown model: %v", err)
	}
	models, err := c.ListModels(ctx, "", sid)
	if err != nil || models.Source != "default" || len(models.Models) != 1 || !models.Models[0].Current || models.Models[0].ID != "echo" {
		t.Errorf("ListModels = %+v, %v", models, err)
	}
	var usage Update
	if _, err := c.Prompt(ctx, sid, strings.Repeat("word ", 50), nil, func(u Update) {
		if u.Type == UsageUpdate {
			usage = u
		}
	}); err != nil {
		t.Fatal(err)
	}
	if usage.InputTokens != 50 || usage.ContextWindow != 32768 || usage.ContextTokens != 101 {
		t.Errorf("usage update = %+v", usage)
	}
	r, err := c.Compact(ctx, sid, "", "")
	if err != nil || r.Before == 0 || !r.Compacted || r.After >= r.Before {
		t.Errorf("Compact = %+v, %v", r, err)
	}
	fork, err := c.Fork(ctx, sid, "forked")
	if err != nil || fork == "" || fork == sid {
		t.Fatalf("Fork = %q, %v", fork, err)
	}
	list, _, err := c.ListSessions(ctx, 100, "")
	if err != nil {
		t.Fatal(err)
	}
	titles := map[string]ListedSession{}
	for _, s := range list {
		titles[s.SessionID] = s
	}
	if titles[sid].Title != "client title" || titles[fork].Title != "forked" || titles[sid].Usage.InputTokens < 50 {
		t.Errorf("listed: %+v and %+v", titles[sid], titles[fork])
	}
	var info bool
	for _, u := range seen.all() {
		if u.Type == SessionInfoUpdate && u.SessionID == sid && u.Mode == ModeReadOnly && u.TurnID == "" {
			info = true
		}
	}
	if !info {
		t.Errorf("no session_info reached the update handler: %+v", seen.all())
	}
}
