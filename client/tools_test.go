//go:build unix

package client

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestToolHandlerServesClientTools(t *testing.T) {
	ctx := ctxFor(t)
	c, err := Dial(ctx, sharedSocket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cancelled := make(chan struct{})
	c.SetToolHandler(func(ctx context.Context, call ToolCallRequest) (ClientToolResult, error) {
		switch string(call.Arguments) {
		case `{"wait":true}`:
			<-ctx.Done() // withdrawn by the cancel below
			close(cancelled)
			return ClientToolResult{}, ctx.Err()
		case `{"fail":true}`:
			return TextResult("it broke", true), nil
		}
		return TextResult("pong "+call.ToolCallID, false), nil
	})
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := c.NewSession(ctx, NewSessionParams{AgentAlias: "default", KeepSiblings: true,
		ClientTools: []ClientTool{{Name: "ping", Description: "pong", ReadOnly: true}}})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := c.ListTools(ctx, s.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range tools {
		found = found || (tl.Name == "ping" && tl.Source == "client" && tl.ReadOnly)
	}
	if !found {
		t.Fatalf("tools/list %+v lacks ping", tools)
	}
	res, err := c.Prompt(ctx, s.SessionID, `/tool ping {}`, nil, nil)
	if err != nil || !strings.Contains(res.Text, "ping -> pong tc_") {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	var failed bool
	res, err = c.Prompt(ctx, s.SessionID, `/tool ping {"fail":true}`, nil, func(u Update) {
		failed = failed || (u.Type == ToolResult && u.IsError && u.RawOutput == "it broke")
	})
	if err != nil || !failed {
		t.Fatalf("an error result: %+v, %v", res, err)
	}
	res, err = c.Prompt(ctx, s.SessionID, `/tool ping {"wait":true}`, nil, func(u Update) {
		if u.Type == ToolCall {
			go c.Cancel(ctx, s.SessionID)
		}
	})
	if err != nil || res.StopReason != StopCancelled {
		t.Fatalf("a cancelled call: %+v, %v", res, err)
	}
	select { // $/cancel_request ended the handler's context
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("the handler's context did not end after the cancel")
	}

	_, err = c.NewSession(ctx, NewSessionParams{AgentAlias: "default", KeepSiblings: true,
		ClientTools: []ClientTool{{Name: "bad name"}}})
	var e *Error
	if !errors.As(err, &e) || e.Code != -32602 {
		t.Fatalf("a bad name: %v", err)
	}
	if _, err := c.MCPStatus(ctx); err != nil {
		t.Fatal(err)
	}
}
