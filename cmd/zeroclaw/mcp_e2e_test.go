//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/wait"
)

// TestKill9OfTheDaemonLeavesNoMCPServer: a stdio server that ends with its stdin
// (server-everything) and one that ignores it (PR_SET_PDEATHSIG ends it) both go
// when the daemon is killed with SIGKILL.
func TestKill9OfTheDaemonLeavesNoMCPServer(t *testing.T) {
	dir, everything := mcpTestServers(t)
	h := home(t)
	os.MkdirAll(filepath.Join(h, ".zeroclaw"), 0o700)
	conf := fmt.Sprintf("[mcp.servers.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\"]\nstartup_timeout_secs = 60\n\n"+
		"[mcp.servers.stubborn]\ncommand = \"node\"\nargs = [%q]\nstartup_timeout_secs = 600\n",
		everything, filepath.Join(dir, "stubborn.mjs"))
	os.WriteFile(filepath.Join(h, ".zeroclaw", "config.toml"), []byte(conf), 0o600)
	d := startDaemon(t, h, nil)

	// tools/list starts both; it waits for stubborn, so it is not awaited here.
	c := dial(t, d.socket)
	c.initialize()
	c.send(`{"jsonrpc":"2.0","method":"tools/list","params":{"agentAlias":"default"},"id":2}`)
	text, ok := d.stderr.await(func(s string) bool { return strings.Contains(s, "stubborn pid ") }, d.exited, 60*time.Second)
	if !ok {
		t.Fatalf("the stubborn server did not start:\n%s", text)
	}
	stubborn, _ := strconv.Atoi(regexp.MustCompile(`stubborn pid (\d+)`).FindStringSubmatch(text)[1])
	s := dial(t, d.socket)
	s.initialize()
	var pid int
	wait.For(t, "server-everything running in mcp/status", 60*time.Second, func() bool {
		st := s.call(`{"jsonrpc":"2.0","method":"mcp/status","params":{},"id":3}`)
		for _, srv := range st["result"].(map[string]any)["servers"].([]any) {
			if srv := srv.(map[string]any); srv["name"] == "everything" && srv["state"] == "running" {
				pid = int(srv["pid"].(float64))
			}
		}
		return pid != 0
	})
	if gone(pid) || gone(stubborn) {
		t.Fatal("the servers are not running before the kill")
	}
	kill9(t, d)
	if !waitGone(t, pid, 30*time.Second) || !waitGone(t, stubborn, 30*time.Second) {
		t.Fatalf("after kill -9 of the daemon: everything (pid %d) gone %v, stubborn (pid %d) gone %v", pid, gone(pid), stubborn, gone(stubborn))
	}
}

func TestZeroclawMCPListsServersAndTools(t *testing.T) {
	_, everything := mcpTestServers(t)
	h := home(t)
	os.MkdirAll(filepath.Join(h, ".zeroclaw"), 0o700)
	conf := fmt.Sprintf("[mcp.servers.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\"]\nstartup_timeout_secs = 50\n\n"+
		"[mcp.servers.off]\ncommand = \"node\"\nenabled = false\n", everything)
	os.WriteFile(filepath.Join(h, ".zeroclaw", "config.toml"), []byte(conf), 0o600)
	startDaemon(t, h, nil)

	out, stderr, err := run(t, command(h, "mcp"))
	if err != nil || !regexp.MustCompile(`everything\s+stdio\s+stopped\s+0`).MatchString(out) || strings.Contains(out, "off") {
		t.Fatalf("zeroclaw mcp before use: %v\n%s%s", err, out, stderr)
	}
	out, stderr, err = run(t, command(h, "mcp", "tools", "--agent", "default"))
	if err != nil || !regexp.MustCompile(`everything__echo\s+mcp:everything\s+read-only\s+Echoes back`).MatchString(out) ||
		!regexp.MustCompile(`shell\s+builtin\s+changes`).MatchString(out) {
		t.Fatalf("zeroclaw mcp tools: %v\n%s%s", err, out, stderr)
	}
	out, stderr, err = run(t, command(h, "mcp"))
	if err != nil || !regexp.MustCompile(`everything\s+stdio\s+running\s+\d+\s+pid \d+`).MatchString(out) {
		t.Fatalf("zeroclaw mcp after tools: %v\n%s%s", err, out, stderr)
	}
	// config set adds a server to the running daemon; a bad one is refused.
	if out, stderr, err := run(t, command(h, "config", "set", "mcp.servers.extra.url", `"http://127.0.0.1:9/mcp"`)); err != nil {
		t.Fatalf("config set: %v\n%s%s", err, out, stderr)
	}
	if out, stderr, err := run(t, command(h, "config", "set", "mcp.servers.extra.command", `"node"`)); err == nil || !strings.Contains(out+stderr, "both command and url") {
		t.Fatalf("config set of both command and url: %v\n%s%s", err, out, stderr)
	}
	out, stderr, err = run(t, command(h, "mcp"))
	if err != nil || !regexp.MustCompile(`extra\s+http\s+stopped`).MatchString(out) || !strings.Contains(out, "everything") {
		t.Fatalf("zeroclaw mcp after config set: %v\n%s%s", err, out, stderr)
	}
}

// TestAnMCPServerAddedAtRuntimeReachesAnOpenSession: a session is open, then
// config/set-many adds an MCP server; the same session lists its tools
// (tools/list) and calls one at its next model call (it used to answer "unknown
// tool" until a new session was made).
func TestAnMCPServerAddedAtRuntimeReachesAnOpenSession(t *testing.T) {
	_, everything := mcpTestServers(t)
	h := home(t)
	writeConfig(t, h, "[agents.default]\nprovider = \"echo\"\nautonomy = \"full\"\n")
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	c.must("session/new", `{"agentAlias":"default","sessionId":"open"}`)
	before := c.must("session/prompt", `{"sessionId":"open","prompt":"/tool everything__echo {\"message\":\"hi\"}"}`)
	if !strings.Contains(fmt.Sprint(before["text"]), "unknown tool") {
		t.Fatalf("before the server was added: %v", before["text"])
	}
	c.must("config/set-many", fmt.Sprintf(`{"sets":[{"prop":"mcp.servers.everything.command","value":"node"},
		{"prop":"mcp.servers.everything.args","value":[%q,"stdio"]},
		{"prop":"mcp.servers.everything.startup_timeout_secs","value":60}]}`, everything))
	list := c.must("tools/list", `{"sessionId":"open"}`)
	if !strings.Contains(fmt.Sprint(list), "everything__echo") {
		t.Fatalf("tools/list of the open session after the server was added: %v", list)
	}
	after := c.must("session/prompt", `{"sessionId":"open","prompt":"/tool everything__echo {\"message\":\"hi\"}"}`)
	if text := fmt.Sprint(after["text"]); !strings.Contains(text, "everything__echo -> ") || !strings.Contains(text, "hi") || strings.Contains(text, "unknown tool") {
		t.Fatalf("the open session's call of the added server's tool: %q", text)
	}
}
