package rpc

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/mcp"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
)

// mcpServers is test/mcp, where .ci/run installs the real MCP servers (npm ci).
func mcpServers(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the MCP tests run real servers on node (.ci/run installs it)")
	}
	dir, _ := filepath.Abs(filepath.Join("..", "..", "test", "mcp"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol")); err != nil {
		t.Fatalf("the MCP test servers are not installed: run `npm ci` in %s (.ci/run does)", dir)
	}
	return dir
}

// until reads messages until one satisfies f, and returns it with those before it.
func (c *client) until(f func(map[string]any) bool) (map[string]any, []map[string]any) {
	c.t.Helper()
	var seen []map[string]any
	for {
		m := c.recv()
		if f(m) {
			return m, seen
		}
		seen = append(seen, m)
	}
}

func updateType(typ string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		p, _ := m["params"].(map[string]any)
		return m["method"] == "session/update" && p["type"] == typ
	}
}

func isResponse(id string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["id"] == id && m["method"] == nil }
}

func mcpHarness(t *testing.T, opts session.Options) (*harness, string) {
	dir := mcpServers(t)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "note.txt"), []byte("hello file"), 0o600)
	conf := config.Default()
	conf.MCP.Servers = map[string]config.MCPServer{
		"everything": {Command: "node", Args: []string{filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}, StartupTimeoutSecs: 60},
		"fs":         {Command: "node", Args: []string{filepath.Join(dir, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), root}, StartupTimeoutSecs: 60},
	}
	conf.Agents["ro"] = config.Agent{Provider: "echo", Autonomy: config.ReadOnly}
	if err := conf.Validate(); err != nil {
		t.Fatal(err)
	}
	servers := mcp.NewManager(slog.New(slog.DiscardHandler))
	t.Cleanup(servers.Close)
	servers.Configure(mcp.FromConfig(conf, t.TempDir(), nil))
	opts.MCP = servers
	return startServerWith(t, Config{MCP: servers}, conf, opts), root
}

func newSession(c *client, alias, extra string) string {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"` + alias + `"` + extra + `},"id":"new"}`)
	m, _ := c.until(isResponse("new"))
	r, ok := m["result"].(map[string]any)
	if !ok {
		c.t.Fatalf("session/new: %v", m)
	}
	return r["sessionId"].(string)
}

func sendPrompt(c *client, sid, text, id string) {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":%q,"prompt":%q},"id":%q}`, sid, text, id))
}

func TestMCPToolsInATurn(t *testing.T) {
	h, root := mcpHarness(t, session.Options{})
	c := h.client(t)
	c.initialize()

	c.send(`{"jsonrpc":"2.0","method":"mcp/status","params":{},"id":"st"}`)
	st, _ := c.until(isResponse("st"))
	if s := fmt.Sprint(st["result"]); !strings.Contains(s, "state:stopped") || strings.Contains(s, "running") {
		t.Fatalf("mcp/status before any use: %s", s)
	}
	sid := newSession(c, "default", "")

	// A read-only tool runs with no approval under supervised; its progress is
	// published as tool_progress updates of the turn.
	sendPrompt(c, sid, "/tool everything__echo {\"message\":\"hi\"}\n/tool everything__trigger-long-running-operation {\"duration\":1,\"steps\":2}", "p1")
	res, seen := c.until(isResponse("p1"))
	text := res["result"].(map[string]any)["text"].(string)
	if !strings.Contains(text, "everything__echo -> Echo: hi") || !strings.Contains(text, "everything__trigger-long-running-operation -> Long running operation completed") {
		t.Fatalf("reply %q", text)
	}
	progress := 0
	for _, m := range seen {
		p, _ := m["params"].(map[string]any)
		switch p["type"] {
		case "approval_request":
			t.Fatalf("a read-only MCP tool asked for approval: %v", p)
		case "tool_progress":
			progress++
			if p["toolCallId"] == "" || p["total"] != float64(2) || p["seq"] == nil || p["turnId"] == nil {
				t.Errorf("tool_progress %v", p)
			}
		}
	}
	if progress < 1 || progress > 2 { // the last may come after the result, and is then dropped
		t.Errorf("%d tool_progress updates, want 1 or 2", progress)
	}

	// A tool that changes things asks for approval under supervised.
	path := filepath.Join(root, "new.txt")
	sendPrompt(c, sid, fmt.Sprintf("/tool fs__write_file {\"path\":%q,\"content\":\"x\"}", path), "p2")
	a, _ := c.until(updateType("approval_request"))
	ap := a["params"].(map[string]any)
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/approve","params":{"sessionId":%q,"requestId":%q,"decision":"allow_once"},"id":"ap"}`, sid, ap["requestId"]))
	res, _ = c.until(isResponse("p2"))
	if b, err := os.ReadFile(path); err != nil || string(b) != "x" {
		t.Fatalf("the approved write: %v %q (%v)", err, b, res)
	}

	// Under readonly it is refused; a read-only one is allowed.
	ro := newSession(c, "ro", `,"keep_siblings":true`)
	sendPrompt(c, ro, fmt.Sprintf("/tool fs__write_file {\"path\":%q,\"content\":\"y\"}\n/tool fs__read_text_file {\"path\":%q}", path, filepath.Join(root, "note.txt")), "p3")
	res, _ = c.until(isResponse("p3"))
	text = res["result"].(map[string]any)["text"].(string)
	if !strings.Contains(text, "fs__write_file -> refused") || !strings.Contains(text, "fs__read_text_file -> hello file") {
		t.Fatalf("readonly reply %q", text)
	}

	// A cancel during a long call ends the turn (the server is sent
	// notifications/cancelled), and the server serves the next call.
	sendPrompt(c, ro, "/tool everything__trigger-long-running-operation {\"duration\":120,\"steps\":120}", "p4")
	c.until(updateType("tool_progress"))
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q},"id":"cx"}`, ro))
	res, _ = c.until(isResponse("p4"))
	if res["result"].(map[string]any)["stopReason"] != "cancelled" {
		t.Fatalf("cancelled turn %v", res)
	}
	sendPrompt(c, ro, "/tool everything__echo {\"message\":\"after\"}", "p5")
	res, _ = c.until(isResponse("p5"))
	if text := res["result"].(map[string]any)["text"].(string); !strings.Contains(text, "Echo: after") {
		t.Fatalf("after the cancel: %q", text)
	}

	c.send(`{"jsonrpc":"2.0","method":"mcp/status","params":{},"id":"st2"}`)
	st, _ = c.until(isResponse("st2"))
	servers := st["result"].(map[string]any)["servers"].([]any)
	for _, s := range servers {
		s := s.(map[string]any)
		if s["state"] != "running" || s["pid"] == nil || s["transport"] != "stdio" || s["tools"].(float64) < 5 {
			t.Errorf("mcp/status: %v", s)
		}
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"tools/list","params":{"sessionId":%q},"id":"tl"}`, sid))
	tl, _ := c.until(isResponse("tl"))
	list := fmt.Sprint(tl["result"])
	for _, want := range []string{"name:everything__echo readOnly:true server:everything source:mcp", "name:shell readOnly:false source:builtin", "name:fs__write_file readOnly:false server:fs source:mcp"} {
		if !strings.Contains(list, want) {
			t.Errorf("tools/list lacks %q: %s", want, list)
		}
	}
	c.send(`{"jsonrpc":"2.0","method":"tools/list","params":{},"id":"tl2"}`)
	if m, _ := c.until(isResponse("tl2")); fmt.Sprint(m["error"]) == "<nil>" {
		t.Errorf("tools/list with neither: %v", m)
	}
}

func TestClientTools(t *testing.T) {
	h := startServerWith(t, Config{}, config.Default(), session.Options{ClientToolTimeout: func() time.Duration { return 2 * time.Second }})
	c := h.client(t)
	c.initialize()
	c.send(`{"jsonrpc":"2.0","method":"session/new","params":{"agentAlias":"default","clientTools":[{"name":"shell","description":"clash"}]},"id":"bad"}`)
	if m, _ := c.until(isResponse("bad")); !strings.Contains(fmt.Sprint(m["error"]), "-32602") {
		t.Fatalf("a clash: %v", m)
	}
	sid := newSession(c, "default", `,"clientTools":[{"name":"ping","description":"answers pong","inputSchema":{"type":"object"},"readOnly":true}]`)
	toolCall := func(m map[string]any) bool { return m["method"] == "tool/call" }

	// A call and its result.
	sendPrompt(c, sid, "/tool ping {\"n\":1}", "p1")
	call, _ := c.until(toolCall)
	params := call["params"].(map[string]any)
	if id, _ := call["id"].(string); !strings.HasPrefix(id, "zc-out-") || params["name"] != "ping" || params["sessionId"] != sid || fmt.Sprint(params["arguments"]) != "map[n:1]" {
		t.Fatalf("tool/call %v", call)
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"pong"}]},"id":%q}`, call["id"]))
	res, _ := c.until(isResponse("p1"))
	if text := res["result"].(map[string]any)["text"].(string); !strings.Contains(text, "ping -> pong") {
		t.Fatalf("reply %q", text)
	}
	// An error result.
	sendPrompt(c, sid, "/tool ping {}", "p2")
	call, _ = c.until(toolCall)
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"broken"}],"isError":true},"id":%q}`, call["id"]))
	r, _ := c.until(updateType("tool_result"))
	if p := r["params"].(map[string]any); p["isError"] != true || p["rawOutput"] != "broken" {
		t.Fatalf("error result %v", p)
	}
	c.until(isResponse("p2"))
	// Cancel: the request is withdrawn.
	sendPrompt(c, sid, "/tool ping {}", "p3")
	call, _ = c.until(toolCall)
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q},"id":"cx"}`, sid))
	cr, _ := c.until(func(m map[string]any) bool { return m["method"] == "$/cancel_request" })
	if cr["params"].(map[string]any)["requestId"] != call["id"] {
		t.Fatalf("$/cancel_request %v for %v", cr, call["id"])
	}
	res, _ = c.until(isResponse("p3"))
	if res["result"].(map[string]any)["stopReason"] != "cancelled" {
		t.Fatalf("cancelled turn %v", res)
	}
	// Silence past the timeout.
	sendPrompt(c, sid, "/tool ping {}", "p4")
	c.until(toolCall)
	r, _ = c.until(updateType("tool_result"))
	if p := r["params"].(map[string]any); p["isError"] != true || !strings.Contains(p["rawOutput"].(string), "no answer from its client within 2 s") {
		t.Fatalf("timeout result %v", p)
	}
	c.until(isResponse("p4"))

	// The serving client goes mid-call: another client's turn gets an error result,
	// and the tool vanishes.
	other := h.client(t)
	other.initialize()
	other.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/attach","params":{"sessionId":%q},"id":"at"}`, sid))
	other.until(isResponse("at"))
	sendPrompt(other, sid, "/tool ping {}", "p5")
	c.until(toolCall)
	c.conn.Close()
	r, _ = other.until(updateType("tool_result"))
	if p := r["params"].(map[string]any); p["isError"] != true || !strings.Contains(p["rawOutput"].(string), "gone") {
		t.Fatalf("client gone result %v", p)
	}
	other.until(isResponse("p5"))
	other.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"tools/list","params":{"sessionId":%q},"id":"tl"}`, sid))
	if m, _ := other.until(isResponse("tl")); strings.Contains(fmt.Sprint(m["result"]), "ping") {
		t.Fatalf("the tool of a closed connection is still listed: %v", m)
	}
	_ = context.Background
}

// A server that never answers initialize: the turn goes on, and the call of one of
// its tools gets an error result naming the server and the reason.
func TestMCPServerThatNeverStartsFailsOnlyThatCall(t *testing.T) {
	dir := mcpServers(t)
	conf := config.Default()
	conf.MCP.Servers = map[string]config.MCPServer{
		"hang": {Command: "node", Args: []string{filepath.Join(dir, "misbehaving.mjs"), "hang"}, StartupTimeoutSecs: 1},
	}
	conf.Agents["default"] = config.Agent{Provider: "echo", Autonomy: config.Full}
	servers := mcp.NewManager(slog.New(slog.DiscardHandler))
	t.Cleanup(servers.Close)
	servers.Configure(mcp.FromConfig(conf, t.TempDir(), nil))
	h := startServerWith(t, Config{MCP: servers}, conf, session.Options{MCP: servers})
	c := h.client(t)
	c.initialize()
	sid := newSession(c, "default", "")
	sendPrompt(c, sid, "/tool hang__anything {}\n/tool list_dir {\"path\":\".\"}", "p")
	res, _ := c.until(isResponse("p"))
	r := res["result"].(map[string]any)
	text := r["text"].(string)
	if r["stopReason"] != "end_turn" || !strings.Contains(text, "hang__anything -> MCP server hang: did not finish initialize within 1 s") ||
		!strings.Contains(text, "list_dir -> ") {
		t.Fatalf("turn %v", r)
	}
	c.send(`{"jsonrpc":"2.0","method":"mcp/status","params":{},"id":"st"}`)
	st, _ := c.until(isResponse("st"))
	if s := fmt.Sprint(st["result"]); !strings.Contains(s, "state:failed") || !strings.Contains(s, "did not finish initialize") {
		t.Fatalf("mcp/status %s", s)
	}
}

// Client tools survive a lag detach: the connection that serves them falls behind
// by more than rpc.replay_bytes (1 MiB here), is detached, re-attaches without
// clientTools, and still serves them.
func TestClientToolsSurviveALagDetach(t *testing.T) {
	h := startServerWith(t, Config{OutboundFrames: 8}, config.Default(), session.Options{ReplayBytes: 1 << 20})
	a := h.client(t)
	a.initialize()
	sid := newSession(a, "default", `,"clientTools":[{"name":"ping","readOnly":true}]`)
	b := h.client(t)
	b.initialize()
	b.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/attach","params":{"sessionId":%q},"id":"at"}`, sid))
	b.until(isResponse("at"))
	// a reads nothing while a turn streams far more than its socket holds.
	sendPrompt(b, sid, strings.Repeat("word ", 40_000), "big")
	b.until(isResponse("big"))
	lag, _ := a.until(updateType("lagged"))
	after := lag["params"].(map[string]any)["afterSeq"]
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/attach","params":{"sessionId":%q,"afterSeq":%v},"id":"re"}`, sid, after))
	a.until(isResponse("re"))
	sendPrompt(b, sid, "/tool ping {}", "p")
	call, _ := a.until(func(m map[string]any) bool { return m["method"] == "tool/call" })
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"still here"}]},"id":%q}`, call["id"]))
	res, _ := b.until(isResponse("p"))
	if text := res["result"].(map[string]any)["text"].(string); !strings.Contains(text, "ping -> still here") {
		t.Fatalf("reply %q", text)
	}
}

// A server killed in the middle of a call of a turn: that call fails naming the
// server and why, the turn goes on, and the next turn's call restarts it.
func TestMCPServerKilledMidCall(t *testing.T) {
	h, _ := mcpHarness(t, session.Options{})
	c := h.client(t)
	c.initialize()
	sid := newSession(c, "default", "")
	sendPrompt(c, sid, "/tool everything__trigger-long-running-operation {\"duration\":120,\"steps\":120}\nafter", "p1")
	c.until(updateType("tool_progress"))
	c.send(`{"jsonrpc":"2.0","method":"mcp/status","params":{},"id":"st"}`)
	st, _ := c.until(isResponse("st"))
	pid := 0
	for _, s := range st["result"].(map[string]any)["servers"].([]any) {
		if s := s.(map[string]any); s["name"] == "everything" {
			pid = int(s["pid"].(float64))
		}
	}
	if pid == 0 {
		t.Fatalf("no pid in %v", st)
	}
	p, _ := os.FindProcess(pid)
	p.Kill()
	r, _ := c.until(updateType("tool_result"))
	if u := r["params"].(map[string]any); u["isError"] != true || !strings.Contains(u["rawOutput"].(string), "MCP server everything: was killed by signal") {
		t.Fatalf("the call of the killed server: %v", u)
	}
	res, _ := c.until(isResponse("p1"))
	if res["result"].(map[string]any)["stopReason"] != "end_turn" {
		t.Fatalf("the turn: %v", res)
	}
	sendPrompt(c, sid, "/tool everything__echo {\"message\":\"back\"}", "p2")
	res, _ = c.until(isResponse("p2"))
	if text := res["result"].(map[string]any)["text"].(string); !strings.Contains(text, "everything__echo -> Echo: back") {
		t.Fatalf("after the restart: %q", text)
	}
}

// notifications/tools/list_changed: a tool that appears later is the model's from
// the next model call on (here the next turn's), and tools/list shows it.
func TestMCPToolsListChangedReachesTheModel(t *testing.T) {
	dir := mcpServers(t)
	conf := config.Default()
	conf.MCP.Servers = map[string]config.MCPServer{
		"changing": {Command: "node", Args: []string{filepath.Join(dir, "changing.mjs")}, StartupTimeoutSecs: 60},
	}
	servers := mcp.NewManager(slog.New(slog.DiscardHandler))
	t.Cleanup(servers.Close)
	servers.Configure(mcp.FromConfig(conf, t.TempDir(), nil))
	h := startServerWith(t, Config{MCP: servers}, conf, session.Options{MCP: servers})
	c := h.client(t)
	c.initialize()
	sid := newSession(c, "default", "")
	sendPrompt(c, sid, "/tool changing__grow {}", "p1")
	if res, _ := c.until(isResponse("p1")); !strings.Contains(res["result"].(map[string]any)["text"].(string), "changing__grow -> grew") {
		t.Fatalf("grow: %v", res)
	}
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; ; i++ {
		id := fmt.Sprintf("tl%d", i)
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"tools/list","params":{"sessionId":%q},"id":%q}`, sid, id))
		if m, _ := c.until(isResponse(id)); strings.Contains(fmt.Sprint(m["result"]), "changing__grown") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the new tool never shows in tools/list")
		}
		time.Sleep(20 * time.Millisecond)
	}
	sendPrompt(c, sid, "/tool changing__grown {}", "p2")
	if res, _ := c.until(isResponse("p2")); !strings.Contains(res["result"].(map[string]any)["text"].(string), "changing__grown -> grown here") {
		t.Fatalf("grown: %v", res)
	}
}
