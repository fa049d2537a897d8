package acp

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"sort"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/mcp"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// The editor's MCP servers (docs/protocol.md, "ACP"): session/new, load and resume
// bring mcpServers; the bridge, on the editor's machine, runs the stdio ones and
// connects the http and sse ones (internal/mcp), and serves their tools to its
// session as client tools named <server>__<tool>.

// editorServers are the MCP servers of one session.
type editorServers struct {
	m     *mcp.Manager
	tools map[string]tool.Tool
	defs  []client.ClientTool
}

type mcpServerParam struct {
	Type    string   `json:"type"` // "http", "sse"; absent for stdio
	Name    string   `json:"name"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Env     []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"env"`
	URL     string `json:"url"`
	Headers []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"headers"`
}

// editorStartupTimeout bounds how long session/new waits for an editor's server.
const editorStartupTimeout = 30 * time.Second

// specsOf turns ACP mcpServers into specs; an entry that cannot be one is logged
// and left out.
func (b *Bridge) specsOf(raw []mcpServerParam, cwd string) []mcp.Spec {
	var specs []mcp.Spec
	seen := map[string]bool{}
	for _, s := range raw {
		sp := mcp.Spec{Name: s.Name, StartupTimeout: editorStartupTimeout, CallTimeout: 10 * time.Minute}
		switch s.Type {
		case "", "stdio":
			sp.Transport, sp.Command, sp.Args, sp.Dir = mcp.TransportStdio, s.Command, s.Args, cwd
			sp.Env = map[string]string{}
			for _, e := range s.Env {
				sp.Env[e.Name] = e.Value
			}
		case "http", "sse":
			sp.Transport, sp.URL = mcp.TransportHTTP, s.URL
			if s.Type == "sse" {
				sp.Transport = mcp.TransportSSE
			}
			sp.Headers = map[string]string{}
			for _, h := range s.Headers {
				sp.Headers[h.Name] = h.Value
			}
		default:
			b.log.Warn("an MCP server of the editor has an unknown type; left out", "server", s.Name, "type", s.Type)
			continue
		}
		if s.Name == "" || seen[s.Name] || (sp.Command == "" && sp.URL == "") {
			b.log.Warn("an MCP server of the editor has no name, a repeated one, or nothing to start; left out", "server", s.Name)
			continue
		}
		seen[s.Name] = true
		specs = append(specs, sp)
	}
	return specs
}

// startServers starts a session's MCP servers and waits for their tools; one that
// fails is logged and left out.
func (b *Bridge) startServers(ctx context.Context, raw []mcpServerParam, cwd string) *editorServers {
	specs := b.specsOf(raw, cwd)
	if len(specs) == 0 {
		return nil
	}
	m := mcp.NewManager(b.log)
	m.Configure(specs)
	names := m.Names()
	tools := m.Tools(ctx, names)
	for _, st := range m.Status() {
		if st.State != mcp.StateRunning {
			b.log.Warn("an MCP server of the editor did not start; its tools are left out", "server", st.Name, "err", st.Error)
		}
	}
	es := &editorServers{m: m, tools: tools}
	keys := make([]string, 0, len(tools))
	for k := range tools {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sp := tools[k].Spec()
		es.defs = append(es.defs, client.ClientTool{Name: sp.Name, Description: sp.Description,
			InputSchema: sp.Parameters, ReadOnly: !tools[k].Mutates()})
	}
	return es
}

// setServers makes es the session's editor servers, stopping the ones it replaces.
func (b *Bridge) setServers(sid string, es *editorServers) {
	b.mu.Lock()
	old := b.mcp[sid]
	if es == nil {
		delete(b.mcp, sid)
	} else {
		b.mcp[sid] = es
	}
	b.mu.Unlock()
	if old != nil && old != es {
		go old.m.Close()
	}
}

// clientTools are the tools to declare for sid: nil when it has no editor servers.
func (b *Bridge) clientTools(sid string) []client.ClientTool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if es := b.mcp[sid]; es != nil {
		return append([]client.ClientTool{}, es.defs...)
	}
	return nil
}

// closeServers stops every session's editor servers (the bridge ends).
func (b *Bridge) closeServers() {
	b.mu.Lock()
	all := b.mcp
	b.mcp = map[string]*editorServers{}
	b.mu.Unlock()
	for _, es := range all {
		es.m.Close()
	}
}

// serveTool runs a tool/call of the daemon on the session's editor servers. Their
// progress goes to the editor as tool_call_update {status: in_progress}.
func (b *Bridge) serveTool(ctx context.Context, call client.ToolCallRequest) (client.ClientToolResult, error) {
	b.mu.Lock()
	es := b.mcp[call.SessionID]
	b.mu.Unlock()
	var t tool.Tool
	if es != nil {
		t = es.tools[call.Name]
	}
	if t == nil {
		return client.TextResult(fmt.Sprintf("no MCP tool %s in this session", call.Name), true), nil
	}
	env := tool.Env{CallID: call.ToolCallID, Progress: func(id string, p tool.Progress) {
		b.notify(call.SessionID, progressUpdate(id, p.Message))
	}}
	r := t.Run(ctx, env, call.Arguments)
	return client.TextResult(r.Output, r.IsError), nil
}

// toolProgress is a tool_call_update of a running call.
type toolProgress struct {
	SessionUpdate string            `json:"sessionUpdate"` // "tool_call_update"
	ToolCallID    string            `json:"toolCallId"`
	Status        string            `json:"status"` // "in_progress"
	Content       []toolCallContent `json:"content,omitzero"`
}

func progressUpdate(id, message string) toolProgress {
	u := toolProgress{SessionUpdate: "tool_call_update", ToolCallID: id, Status: "in_progress"}
	if message != "" {
		t := text(message)
		u.Content = []toolCallContent{{Type: "content", Content: &t}}
	}
	return u
}

// decodeMCPServers reads mcpServers of session/new, load or resume.
func decodeMCPServers(params jsontext.Value) []mcpServerParam {
	var p struct {
		MCPServers []mcpServerParam `json:"mcpServers"`
	}
	json.Unmarshal(params, &p) // the rest of params was checked by the caller
	return p.MCPServers
}
