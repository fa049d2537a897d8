package session

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// ClientToolTimeout is how long a client tool's tool/call may go unanswered when
// Options.ClientToolTimeout is not set (rpc.client_tool_timeout_secs).
const ClientToolTimeout = 120 * time.Second

// ClientToolDef is one tool a connection serves for a session (docs/protocol.md,
// "tool/call").
type ClientToolDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema jsontext.Value `json:"inputSchema"`
	ReadOnly    bool           `json:"readOnly"`
}

// ToolCallParams are the params of tool/call, sent to the connection serving it.
type ToolCallParams struct {
	SessionID  string         `json:"sessionId"`
	ToolCallID string         `json:"toolCallId"`
	Name       string         `json:"name"`
	Arguments  jsontext.Value `json:"arguments"`
}

// ToolCallResult is the connection's answer to tool/call.
type ToolCallResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// ToolServer is a Subscriber that serves client tools: the rpc connection.
type ToolServer interface {
	// CallTool sends tool/call and waits for the answer or ctx; when ctx ends first
	// it withdraws the request ($/cancel_request).
	CallTool(ctx context.Context, p ToolCallParams) (ToolCallResult, error)
}

var clientToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ErrConnectionGone is what CallTool returns when the connection closed.
var ErrConnectionGone = errors.New("the connection is gone")

// clientTool is one client tool as the agent sees it.
type clientTool struct {
	s   *Session
	sub Subscriber
	def ClientToolDef
}

func (t *clientTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: t.def.Name, Description: t.def.Description, Parameters: t.def.InputSchema}
}

func (t *clientTool) Mutates() bool { return !t.def.ReadOnly }

func (t *clientTool) Run(ctx context.Context, env tool.Env, args jsontext.Value) tool.Result {
	ts, ok := t.sub.(ToolServer)
	if !ok {
		return tool.Result{Output: "client tool " + t.def.Name + ": its connection cannot serve tools", IsError: true}
	}
	timeout := t.s.mgr.clientToolTimeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if len(args) == 0 {
		args = jsontext.Value("{}")
	}
	r, err := ts.CallTool(cctx, ToolCallParams{SessionID: t.s.ID, ToolCallID: env.CallID, Name: t.def.Name, Arguments: args})
	switch {
	case err == nil:
		var parts []string
		for _, c := range r.Content {
			if c.Type == "text" {
				parts = append(parts, c.Text)
			}
		}
		return tool.Result{Output: strings.Join(parts, "\n"), IsError: r.IsError}
	case ctx.Err() != nil:
		return tool.Result{Output: "cancelled", IsError: true}
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return tool.Result{Output: fmt.Sprintf("client tool %s: no answer from its client within %d s", t.def.Name, int(timeout/time.Second)), IsError: true}
	case errors.Is(err, ErrConnectionGone):
		return tool.Result{Output: fmt.Sprintf("client tool %s: the client serving it is gone", t.def.Name), IsError: true}
	}
	return tool.Result{Output: fmt.Sprintf("client tool %s failed: %v", t.def.Name, err), IsError: true}
}

func (m *Manager) clientToolTimeout() time.Duration {
	if m.opts.ClientToolTimeout != nil {
		if d := m.opts.ClientToolTimeout(); d > 0 {
			return d
		}
	}
	return ClientToolTimeout
}

// CheckClientTools checks a connection's clientTools for agent before a session
// exists: each name valid and unique, not a built-in tool's, and not in the name
// space of the agent's MCP servers ("<server>__…").
func CheckClientTools(a *Agent, defs []ClientToolDef) error {
	seen := map[string]bool{}
	for i, d := range defs {
		switch {
		case !clientToolName.MatchString(d.Name):
			return errParam("clientTools", "invalid_tool_name", fmt.Sprintf("clientTools[%d].name %q must match ^[a-zA-Z0-9_-]{1,64}$", i, d.Name))
		case seen[d.Name] || a.Tools[d.Name] != nil:
			return errParam("clientTools", "tool_name_clash", fmt.Sprintf("clientTools[%d].name %q clashes with another tool", i, d.Name))
		}
		for _, srv := range a.MCPServers {
			if strings.HasPrefix(d.Name, srv+"__") {
				e := errParam("clientTools", "tool_name_clash", fmt.Sprintf("clientTools[%d].name %q is in the names of MCP server %s", i, d.Name, srv))
				e.Details["name"], e.Details["server"] = d.Name, srv // a client may rename its tools and retry
				return e
			}
		}
		if d.InputSchema != nil && d.InputSchema.Kind() != '{' {
			return errParam("clientTools", "invalid_schema", fmt.Sprintf("clientTools[%d].inputSchema must be a JSON object", i))
		}
		seen[d.Name] = true
	}
	return nil
}

// SetClientTools makes defs the tools sub serves for the session (replacing what it
// served before), refusing a name another connection's tool of the session has.
// They last until the connection closes (Manager.Detach), also across a lag detach.
func (s *Session) SetClientTools(sub Subscriber, defs []ClientToolDef) error {
	if err := CheckClientTools(s.Agent, defs); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for other, tools := range s.clientTools {
		if other == sub {
			continue
		}
		for _, d := range defs {
			if tools[d.Name] != nil {
				return errParam("clientTools", "tool_name_clash", fmt.Sprintf("client tool %q is served by another connection of this session", d.Name))
			}
		}
	}
	if s.clientTools == nil {
		s.clientTools = map[Subscriber]map[string]*clientTool{}
	}
	tools := make(map[string]*clientTool, len(defs))
	for _, d := range defs {
		if d.InputSchema == nil {
			d.InputSchema = jsontext.Value(`{"type":"object"}`)
		}
		tools[d.Name] = &clientTool{s: s, sub: sub, def: d}
	}
	s.clientTools[sub] = tools
	return nil
}

// dropClientTools forgets the tools sub served, when its connection closes.
func (s *Session) dropClientTools(sub Subscriber) {
	s.mu.Lock()
	delete(s.clientTools, sub)
	s.mu.Unlock()
}

// ClientTools returns the client tools of the session now.
func (s *Session) ClientTools() map[string]tool.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]tool.Tool{}
	for _, tools := range s.clientTools {
		for name, t := range tools {
			out[name] = t
		}
	}
	return out
}
