package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// The crash tests kill the real daemon with SIGKILL at three points of a turn, start
// it again, resume the session, and check what the user sees (session/messages:
// the progress once, one interruption marker) and what the model is given next
// (recorded by the fake provider: no marker; the context the checkpoints rebuild).

func crashHome(t *testing.T, fake *fakeopenai.Server) string {
	h := home(t)
	os.MkdirAll(filepath.Join(h, ".zeroclaw"), 0o700)
	conf := fmt.Sprintf("[providers.fake]\nkind = \"openai\"\nbase_url = %q\nmodel = \"m\"\n\n"+
		"[agents.default]\nprovider = \"fake\"\nautonomy = \"full\"\n", fake.URL())
	os.WriteFile(filepath.Join(h, ".zeroclaw", "config.toml"), []byte(conf), 0o600)
	return h
}

func startTurn(t *testing.T, d *daemon, sid, text string) *rpcConn {
	c := dial(t, d.socket)
	c.initialize()
	c.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default","sessionId":"` + sid + `"},"id":2}`)
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"` + text + `"},"id":3}`)
	return c
}

func waitUpdate(c *rpcConn, typ string) map[string]any {
	for {
		m := c.recv()
		if p, _ := m["params"].(map[string]any); p["type"] == typ {
			return p
		}
	}
}

// resume restarts nothing: it resumes sid on a running daemon and returns the
// transcript roles (marker rows as "marker!" when interrupted).
func resume(t *testing.T, d *daemon, sid string) []string {
	t.Helper()
	c := dial(t, d.socket)
	c.initialize()
	r := c.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default","sessionId":"` + sid + `"},"id":2}`)
	if res, _ := r["result"].(map[string]any); res["resumed"] != true {
		t.Fatalf("resume: %v", r)
	}
	m := c.call(`{"jsonrpc":"2.0","method":"session/messages","params":{"sessionId":"` + sid + `"},"id":3}`)["result"].(map[string]any)
	var roles []string
	for _, row := range m["messages"].([]any) {
		r := row.(map[string]any)
		role := r["role"].(string)
		if r["interrupted"] == true {
			role += "!"
		}
		roles = append(roles, role)
	}
	c.conn.Close()
	return roles
}

func kill9(t *testing.T, d *daemon) {
	d.cmd.Process.Signal(syscall.SIGKILL)
	d.wait(10 * time.Second)
}

func promptAndWait(t *testing.T, d *daemon, sid, text string) {
	c := dial(t, d.socket)
	c.initialize()
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"` + text + `"},"id":9}`)
	for {
		if m := c.recv(); m["id"] == float64(9) {
			if m["result"] == nil {
				t.Fatalf("prompt after recovery: %v", m)
			}
			return
		}
	}
}

func roleContents(req map[string]any) string {
	var out []string
	for _, m := range fakeopenai.Messages(req) {
		s := fmt.Sprint(m["role"])
		if c, ok := m["content"].(string); ok && c != "" {
			s += ":" + c
		}
		if calls, ok := m["tool_calls"].([]any); ok {
			s += fmt.Sprintf(":%d calls", len(calls))
		}
		out = append(out, s)
	}
	return strings.Join(out, " | ")
}

func TestKill9DuringTheModelStream(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.Answer{Text: []string{"partial "}, Hold: true}, fakeopenai.Answer{Text: []string{"fine"}})
	h := crashHome(t, fake)
	d := startDaemon(t, h, nil)
	c := startTurn(t, d, "crash-a", "first")
	waitUpdate(c, "agent_message_chunk")
	kill9(t, d)

	d = startDaemon(t, h, nil)
	if got := strings.Join(resume(t, d, "crash-a"), " "); got != "user marker!" {
		t.Fatalf("transcript after recovery: %s", got)
	}
	promptAndWait(t, d, "crash-a", "second")
	// The interrupted turn left no answer: its prompt and the next are one message.
	if got := roleContents(fake.Request(t, 1)); got != "user:first\n\nsecond" {
		t.Fatalf("the model was given %q", got)
	}
}

func TestKill9DuringAShellTool(t *testing.T) {
	fake := fakeopenai.New(t,
		fakeopenai.Answer{Calls: []fakeopenai.Call{{ID: "call_1", Name: "shell", Args: `{"command":"` + shellThatWaits + `"}`}}},
		fakeopenai.Answer{Text: []string{"fine"}})
	h := crashHome(t, fake)
	d := startDaemon(t, h, nil)
	startTurn(t, d, "crash-b", "first")
	waitForShell(t, filepath.Join(h, ".zeroclaw", "data", "workspaces", "default")) // the tool runs: its call is stored
	kill9(t, d)

	d = startDaemon(t, h, nil)
	if got := strings.Join(resume(t, d, "crash-b"), " "); got != "user tool_call marker!" {
		t.Fatalf("transcript after recovery: %s", got)
	}
	promptAndWait(t, d, "crash-b", "again")
	got := roleContents(fake.Request(t, 1))
	if got != "user:first | assistant:1 calls | tool:interrupted | assistant:"+provider.StoppedReply+" | user:again" {
		t.Fatalf("the model was given %q", got)
	}
}

func TestKill9BetweenAToolResultAndTheNextModelCall(t *testing.T) {
	fake := fakeopenai.New(t,
		fakeopenai.Answer{Calls: []fakeopenai.Call{{ID: "call_1", Name: "shell", Args: `{"command":"echo hi"}`}}},
		fakeopenai.Answer{Hold: true},
		fakeopenai.Answer{Text: []string{"fine"}})
	h := crashHome(t, fake)
	d := startDaemon(t, h, nil)
	c := startTurn(t, d, "crash-c", "first")
	waitUpdate(c, "tool_result")
	fake.Request(t, 1) // the next model call started: the tool result is a checkpoint
	kill9(t, d)

	d = startDaemon(t, h, nil)
	if got := strings.Join(resume(t, d, "crash-c"), " "); got != "user tool_call tool_result marker!" {
		t.Fatalf("transcript after recovery: %s", got)
	}
	promptAndWait(t, d, "crash-c", "next")
	got := roleContents(fake.Request(t, 2))
	if got != "user:first | assistant:1 calls | tool:hi\n | assistant:"+provider.StoppedReply+" | user:next" {
		t.Fatalf("the model was given %q", got)
	}

	// Recovering again adds nothing again.
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.wait(15 * time.Second)
	d = startDaemon(t, h, nil)
	if got := strings.Join(resume(t, d, "crash-c"), " "); got != "user tool_call tool_result marker! user assistant" {
		t.Fatalf("transcript after a second restart: %s", got)
	}
}
