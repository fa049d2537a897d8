package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestEchoTurnOverTheBinary(t *testing.T) {
	d := startDaemon(t, home(t), nil)
	c := dial(t, d.socket)
	c.initialize()
	res := c.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default"},"id":2}`)["result"].(map[string]any)
	sid := res["sessionId"].(string)
	if res["workspaceDir"] != filepath.Join(d.home, ".zeroclaw", "data", "workspaces", "default") || res["resumed"] != false {
		t.Fatalf("session/new = %v", res)
	}
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"hello there"},"id":3}`)
	var text strings.Builder
	for {
		m := c.recv()
		if m["method"] == "session/update" {
			p := m["params"].(map[string]any)
			if p["type"] == "agent_message_chunk" {
				text.WriteString(p["text"].(string))
			}
			continue
		}
		r := m["result"].(map[string]any)
		if r["stopReason"] != "end_turn" || r["text"] != "echo: hello there" || text.String() != r["text"] {
			t.Fatalf("prompt result %v, streamed %q", r, text.String())
		}
		return
	}
}

func TestShutdownCancelsRunningTurnsAndAnswersThem(t *testing.T) {
	h := home(t)
	os.MkdirAll(filepath.Join(h, ".zeroclaw"), 0o700)
	os.WriteFile(filepath.Join(h, ".zeroclaw", "config.toml"), []byte("[agents.default]\nautonomy = \"full\"\n"), 0o600)
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	sid := c.call(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default"},"id":2}`)["result"].(map[string]any)["sessionId"].(string)
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"/tool shell {\"command\":\"` + shellThatWaits + `\"}"},"id":3}`)
	waitForShell(t, filepath.Join(h, ".zeroclaw", "data", "workspaces", "default"))
	d.cmd.Process.Signal(syscall.SIGTERM)
	for {
		m := c.recv()
		if m["id"] == float64(3) {
			if r, _ := m["result"].(map[string]any); r["stopReason"] != "cancelled" {
				t.Fatalf("prompt answered %v, want stopReason cancelled", m)
			}
			break
		}
	}
	if err := d.wait(15 * time.Second); err != nil {
		t.Fatalf("exit: %v", err)
	}
}
