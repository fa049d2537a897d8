//go:build unix

package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// TestACPServesTheEditorsMCPServers: the editor hands server-everything (stdio, and
// its Streamable HTTP mode on 127.0.0.1) in mcpServers; the model's calls reach them
// through the bridge, as client tools of the session, progress included.
func TestACPServesTheEditorsMCPServers(t *testing.T) {
	_, everything := mcpTestServers(t)
	node, _ := exec.LookPath("node")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	web := exec.Command(node, everything, "streamableHttp")
	web.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	web.Dir = t.TempDir()
	if err := web.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Process.Kill(); web.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the HTTP server does not listen")
		}
		time.Sleep(20 * time.Millisecond)
	}

	h, project := acpHome(t)
	e := startEditor(t, h, nil, "--agent", "full")
	res := e.initialize(acpsdk.ClientCapabilities{})
	if !res.AgentCapabilities.McpCapabilities.Http || !res.AgentCapabilities.McpCapabilities.Sse {
		t.Errorf("mcpCapabilities %+v", res.AgentCapabilities.McpCapabilities)
	}
	s, err := e.conn.NewSession(ctxFor(t), acpsdk.NewSessionRequest{Cwd: project, McpServers: []acpsdk.McpServer{
		{Stdio: &acpsdk.McpServerStdio{Name: "ev", Command: node, Args: []string{everything, "stdio"}, Env: []acpsdk.EnvVariable{}}},
		{Http: &acpsdk.McpServerHttpInline{Type: "http", Name: "web", Url: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), Headers: []acpsdk.HttpHeader{}}},
		{Stdio: &acpsdk.McpServerStdio{Name: "broken", Command: "/bin/false", Args: []string{}, Env: []acpsdk.EnvVariable{}}},
	}})
	if err != nil {
		t.Fatalf("session/new: %v\n%s", err, e.stderr.String())
	}
	sid := string(s.SessionId)
	e.mustPrompt(sid, "/tool ev__echo {\"message\":\"from the editor\"}\n/tool web__echo {\"message\":\"over http\"}\n/tool ev__trigger-long-running-operation {\"duration\":1,\"steps\":2}")
	updates := e.take()
	reply := textOf(updates, "agent_message_chunk")
	for _, want := range []string{"ev__echo -> Echo: from the editor", "web__echo -> Echo: over http", "ev__trigger-long-running-operation -> Long running operation completed"} {
		if !strings.Contains(reply, want) {
			t.Errorf("reply %q lacks %q", reply, want)
		}
	}
	progress := 0
	for _, u := range updates {
		if u["sessionUpdate"] == "tool_call_update" && u["status"] == "in_progress" {
			progress++
		}
	}
	if progress == 0 {
		t.Errorf("no tool_call_update in_progress for the progress of the long operation: %v", updates)
	}
	// A second editor window loads the session with a server of its own: the
	// first window's are not its tools; the new one's are.
	e2 := startEditor(t, h, nil, "--agent", "full")
	e2.initialize(acpsdk.ClientCapabilities{})
	if _, err := e2.conn.LoadSession(ctxFor(t), acpsdk.LoadSessionRequest{SessionId: s.SessionId, Cwd: project, McpServers: []acpsdk.McpServer{
		{Stdio: &acpsdk.McpServerStdio{Name: "ev2", Command: node, Args: []string{everything, "stdio"}, Env: []acpsdk.EnvVariable{}}},
	}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	e2.take()
	e2.mustPrompt(sid, "/tool ev2__echo {\"message\":\"loaded\"}")
	if reply := textOf(e2.take(), "agent_message_chunk"); !strings.Contains(reply, "ev2__echo -> Echo: loaded") {
		t.Errorf("after session/load: %q", reply)
	}
	if err := e2.closeAndWait(); err != nil {
		t.Errorf("exit: %v", err)
	}
	if !strings.Contains(e.stderr.String(), "broken") {
		t.Errorf("the server that did not start is not logged:\n%s", e.stderr.String())
	}
	if err := e.closeAndWait(); err != nil {
		t.Errorf("exit: %v", err)
	}
}

// TestACPEditorServerNamedAsTheAgentsOwnStillOpens: the editor hands a server named
// as one of the agent's own MCP servers; the daemon refuses client tools in that
// server's names, so the bridge serves the editor's under <name>-editor, and the
// session opens with both: the model reaches the agent's server and the editor's.
func TestACPEditorServerNamedAsTheAgentsOwnStillOpens(t *testing.T) {
	_, everything := mcpTestServers(t)
	node, _ := exec.LookPath("node")
	h, project := acpHome(t)
	writeConfig(t, h, acpConfig+fmt.Sprintf("\n[mcp.servers.ev]\ncommand = %q\nargs = [%q, \"stdio\"]\nstartup_timeout_secs = 50\n", node, everything))
	e := startEditor(t, h, nil, "--agent", "full")
	e.initialize(acpsdk.ClientCapabilities{})
	s, err := e.conn.NewSession(ctxFor(t), acpsdk.NewSessionRequest{Cwd: project, McpServers: []acpsdk.McpServer{
		{Stdio: &acpsdk.McpServerStdio{Name: "ev", Command: node, Args: []string{everything, "stdio"}, Env: []acpsdk.EnvVariable{}}},
	}})
	if err != nil {
		t.Fatalf("session/new with a server named as the agent's: %v\n%s", err, e.stderr.String())
	}
	sid := string(s.SessionId)
	e.mustPrompt(sid, "/tool ev__echo {\"message\":\"the agent's\"}\n/tool ev-editor__echo {\"message\":\"the editor's\"}")
	reply := textOf(e.take(), "agent_message_chunk")
	for _, want := range []string{"ev__echo -> Echo: the agent's", "ev-editor__echo -> Echo: the editor's"} {
		if !strings.Contains(reply, want) {
			t.Errorf("reply %q lacks %q", reply, want)
		}
	}
	if !strings.Contains(e.stderr.String(), "as=ev-editor") {
		t.Errorf("the rename is not logged:\n%s", e.stderr.String())
	}
	if err := e.closeAndWait(); err != nil {
		t.Errorf("exit: %v", err)
	}
}

// mcpTestServers skips t without node and fails it when the MCP test servers of
// test/mcp are not installed; it returns that directory and server-everything's
// entry point.
func mcpTestServers(t *testing.T) (dir, everything string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the MCP tests run real servers on node (.ci/run installs it)")
	}
	dir, _ = filepath.Abs(filepath.Join("..", "..", "test", "mcp"))
	everything = filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(everything); err != nil {
		t.Fatalf("the MCP test servers are not installed: run `npm ci` in %s (.ci/run does)", dir)
	}
	return dir, everything
}
