package session

import (
	"context"
	"fmt"
	"maps"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// MCPTools are the tools of MCP servers (internal/mcp's Manager).
type MCPTools interface {
	// Tools starts the named servers that never ran, waits for them (each up to
	// its startup timeout), and returns their tools by name.
	Tools(ctx context.Context, servers []string) map[string]tool.Tool
	// Current returns their tools now, starting nothing.
	Current(servers []string) map[string]tool.Tool
	// Fallback returns a tool for a call of name that belongs to one of the
	// servers by its prefix but is not listed (yet), or nil.
	Fallback(servers []string, name string) tool.Tool
}

// turnTools returns what a turn's agent loop asks for its tools before each model
// call (the agent's built-in tools and those of its MCP servers, which are started
// when they never ran) and for a name that is not among them. The MCP servers are
// those the agent uses in the configuration in force at each model call, so a
// server added or changed at runtime (config/set-many of mcp.servers.*) reaches a
// session that was open already at its next model call (docs/protocol.md, "Tools
// from MCP servers").
func (s *Session) turnTools(ctx context.Context) (func() map[string]tool.Tool, func(string) tool.Tool) {
	m := s.mgr.opts.MCP
	var servers []string
	started := map[string]bool{}
	set := func() map[string]tool.Tool {
		all := maps.Clone(s.Agent.Tools)
		if m != nil {
			servers = s.mgr.mcpServersOf(s.Agent)
			var fresh []string
			for _, n := range servers {
				if !started[n] {
					started[n] = true
					fresh = append(fresh, n)
				}
			}
			if len(fresh) > 0 {
				m.Tools(ctx, fresh) // starts those that never ran
			}
			for name, t := range m.Current(servers) {
				if _, builtin := all[name]; !builtin {
					all[name] = t
				}
			}
		}
		s.addMemoryTools(all)
		for name, t := range s.ClientTools() {
			if _, taken := all[name]; !taken {
				all[name] = t
			}
		}
		return all
	}
	if m == nil {
		return set, nil
	}
	return set, func(name string) tool.Tool {
		if len(servers) == 0 {
			return nil
		}
		return m.Fallback(servers, name)
	}
}

// mcpServersOf returns the MCP servers agent a uses in the configuration in force:
// its alias's in the current catalog, or a's own once the alias is gone.
func (m *Manager) mcpServersOf(a *Agent) []string {
	if now, ok := m.catalog.Load().Agent(a.Alias); ok {
		return now.MCPServers
	}
	return a.MCPServers
}

// ToolsOf returns the tools a session of agent would have now: its built-in tools
// and those of the MCP servers it uses in the configuration in force (started if
// they never ran).
func (m *Manager) ToolsOf(ctx context.Context, a *Agent) (builtin, mcp map[string]tool.Tool) {
	builtin = a.Tools
	servers := m.mcpServersOf(a)
	if m.opts.MCP == nil || len(servers) == 0 {
		return builtin, nil
	}
	return builtin, m.opts.MCP.Tools(ctx, servers)
}

// AgentOf returns the current view of agent alias, or an invalid-params error
// (unknown_agent).
func (m *Manager) AgentOf(alias string) (*Agent, error) {
	a, ok := m.catalog.Load().Agent(alias)
	if !ok {
		return nil, errParam("agentAlias", "unknown_agent", fmt.Sprintf("unknown agent %q", alias))
	}
	return a, nil
}
