//go:build unix

package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// A turn on the echo provider: connect to the daemon of ZEROCLAW_SOCKET (or the
// default endpoint), open a session of the default agent, and stream the reply.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx); err != nil {
		log.Fatal(err)
	}
	s, err := c.NewSession(ctx, client.NewSessionParams{AgentAlias: "default", KeepSiblings: true})
	if err != nil {
		log.Fatal(err)
	}
	var streamed strings.Builder
	res, err := c.Prompt(ctx, s.SessionID, "hello", nil, func(u client.Update) {
		if u.Type == client.AgentMessageChunk {
			streamed.WriteString(u.Text)
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(streamed.String())
	fmt.Println(res.StopReason)
	// Output:
	// echo: hello
	// end_turn
}

// Approvals arrive as approval_request updates; answer them with Approve, here from
// the update callback itself.
func ExampleClient_Approve() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.Initialize(ctx)
	s, err := c.NewSession(ctx, client.NewSessionParams{AgentAlias: "default", KeepSiblings: true})
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Prompt(ctx, s.SessionID, `/tool shell {"command":"echo hi"}`, nil, func(u client.Update) {
		if u.Type == client.ApprovalRequest {
			fmt.Println("approve?", u.Name, string(u.RawInput))
			c.Approve(ctx, s.SessionID, u.RequestID, client.AllowOnce)
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.Contains(res.Text, "shell -> hi"))
	// Output:
	// approve? shell {"command":"echo hi"}
	// true
}

// The ask_user tool asks the client through elicitation/create; set a handler before
// Initialize to answer.
func ExampleClient_SetElicitationHandler() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.SetElicitationHandler(func(ctx context.Context, e client.Elicitation) (client.ElicitationResult, error) {
		fmt.Println("asked:", e.Message)
		return client.ElicitationResult{Action: "accept", Content: map[string]any{"answer": "blue"}}, nil
	})
	c.Initialize(ctx)
	s, err := c.NewSession(ctx, client.NewSessionParams{AgentAlias: "default", KeepSiblings: true})
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Prompt(ctx, s.SessionID, `/tool ask_user {"question":"Which colour?","choices":["red","blue"]}`, nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.Contains(res.Text, "ask_user -> blue"))
	// Output:
	// asked: Which colour?
	// true
}

// A JSON-RPC error answer is a *client.Error with the code and data.
func ExampleError() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.Initialize(ctx)
	_, err = c.Cancel(ctx, "no-such-session")
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code == client.CodeSessionNotFound)
	}
	// Output:
	// true
}

// zeroclaw chat starts an ephemeral daemon when none answers; so can any client.
func ExampleWithAutoStart() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "", client.WithAutoStart(client.AutoStart{Executable: "zeroclaw"}))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // the daemon it started exits a second after its last client leaves
	c.Initialize(ctx)
}

// Upload a file in chunks with a progress callback, then attach it to a prompt.
func ExampleClient_Upload() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.Initialize(ctx)
	s, _ := c.NewSession(ctx, client.NewSessionParams{AgentAlias: "default"})
	entry, err := c.Upload(ctx, s.SessionID, "report.pdf", func(done, total int64) {
		fmt.Printf("\r%d/%d bytes", done, total)
	})
	if err != nil {
		log.Fatal(err)
	}
	c.Prompt(ctx, s.SessionID, "Summarize the report", []client.FileEntry{*entry}, nil)
}
