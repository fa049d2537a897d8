package rpc

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"slices"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/mcp"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// The tools family (docs/protocol.md, "mcp/status" and "tools/list"): the MCP
// servers' state, and the tools a session or an agent has.

// MCPStatus reports the daemon's MCP servers (internal/mcp's Manager).
type MCPStatus interface {
	Status() []mcp.Status
}

func (s *Server) toolMethods() []methodRow {
	return []methodRow{
		{name: "mcp/status", grant: auth.SystemRead, handler: s.mcpStatus},
		{name: "tools/list", grant: auth.SessionsRead, handler: s.toolsList},
	}
}

type mcpStatusResult struct {
	Servers []mcp.Status `json:"servers"`
}

// mcpStatus lists every configured, enabled MCP server with its state. Params are
// ignored.
func (s *Server) mcpStatus(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	out := []mcp.Status{}
	if s.cfg.MCP != nil {
		out = s.cfg.MCP.Status()
	}
	return mcpStatusResult{Servers: out}, nil
}

type toolsListParams struct {
	SessionID  string `json:"sessionId"`
	AgentAlias string `json:"agentAlias"`
}

type toolEntry struct {
	Name        string `json:"name"`
	Source      string `json:"source"` // builtin, mcp, client
	Server      string `json:"server,omitzero"`
	Description string `json:"description"`
	ReadOnly    bool   `json:"readOnly"`
}

type toolsListResult struct {
	Tools []toolEntry `json:"tools"`
}

// toolsList lists the tools of a session (its agent's, and the client tools its
// connections serve) or of an agent, starting the MCP servers that never ran.
func (s *Server) toolsList(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p toolsListParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if (p.SessionID == "") == (p.AgentAlias == "") {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: give either sessionId or agentAlias",
			map[string]any{"param": "sessionId"})
	}
	var agent *session.Agent
	var sess *session.Session
	if p.SessionID != "" {
		var err error
		if sess, err = s.cfg.Sessions.Get(p.SessionID, c.caller()); err != nil {
			return nil, err
		}
		agent = sess.Agent
	} else {
		if !authorityFrom(ctx).MayUseAgent(p.AgentAlias) {
			return nil, agentForbidden(p.AgentAlias)
		}
		var err error
		if agent, err = s.cfg.Sessions.AgentOf(p.AgentAlias); err != nil {
			return nil, err
		}
	}
	builtin, servers := s.cfg.Sessions.ToolsOf(ctx, agent)
	out := make([]toolEntry, 0, len(builtin)+len(servers))
	for _, t := range builtin {
		out = append(out, entryOf(t, "builtin", ""))
	}
	if m := s.cfg.Memory; m != nil && m.Enabled() { // the memory tools every session has (memory.go)
		for name, t := range m.Tools(agent.Alias, c.caller().Principal) {
			if _, taken := builtin[name]; !taken && (agent.MemoryTools == nil || agent.MemoryTools[name]) {
				out = append(out, entryOf(t, "builtin", ""))
			}
		}
	}
	for _, t := range servers {
		server := ""
		if mt, ok := t.(*mcp.Tool); ok {
			server = mt.Server()
		}
		out = append(out, entryOf(t, "mcp", server))
	}
	if sess != nil {
		for _, t := range sess.ClientTools() {
			out = append(out, entryOf(t, "client", ""))
		}
	}
	slices.SortFunc(out, func(a, b toolEntry) int { return strings.Compare(a.Name, b.Name) })
	return toolsListResult{Tools: out}, nil
}

func entryOf(t tool.Tool, source, server string) toolEntry {
	sp := t.Spec()
	return toolEntry{Name: sp.Name, Source: source, Server: server, Description: sp.Description, ReadOnly: !t.Mutates()}
}

// CallTool sends tool/call to the client (a request of ours, id zc-out-N) and
// waits for its answer; when ctx ends first (a cancel, the timeout) the request is
// withdrawn with $/cancel_request {requestId} (docs/protocol.md, "tool/call").
func (c *connState) CallTool(ctx context.Context, p session.ToolCallParams) (session.ToolCallResult, error) {
	var r session.ToolCallResult
	var id jsonrpc.ID
	err := c.conn.CallSent(ctx, "tool/call", p, &r, func(sent jsonrpc.ID) { id = sent })
	switch {
	case err == nil:
		return r, nil
	case errors.Is(err, jsonrpc.ErrClosed):
		return r, session.ErrConnectionGone
	case ctx.Err() != nil && id != nil:
		c.conn.Notify("$/cancel_request", map[string]any{"requestId": id})
	}
	return r, err
}
