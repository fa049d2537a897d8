package client

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"sync"

	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// ClientTool is a tool this client serves for a session (docs/protocol.md,
// "tool/call"): declare it in NewSessionParams.ClientTools, and answer its calls with
// SetToolHandler.
type ClientTool struct {
	Name        string         `json:"name"` // ^[a-zA-Z0-9_-]{1,64}$, no other tool's
	Description string         `json:"description"`
	InputSchema jsontext.Value `json:"inputSchema,omitzero"` // a JSON Schema object
	ReadOnly    bool           `json:"readOnly,omitzero"`    // no approval under supervised
}

// ToolCallRequest is the daemon's tool/call: one call of a client tool.
type ToolCallRequest struct {
	SessionID  string         `json:"sessionId"`
	ToolCallID string         `json:"toolCallId"`
	Name       string         `json:"name"`
	Arguments  jsontext.Value `json:"arguments"`
}

// ClientToolResult answers a ToolCallRequest. TextResult builds the usual one.
type ClientToolResult struct {
	Content []TextContent `json:"content"`
	IsError bool          `json:"isError,omitzero"`
}

// TextContent is one text block of a ClientToolResult.
type TextContent struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

// TextResult is a result of one text block.
func TextResult(text string, isError bool) ClientToolResult {
	return ClientToolResult{Content: []TextContent{{Type: "text", Text: text}}, IsError: isError}
}

// ToolHandler runs a client tool. Its ctx ends when the daemon withdraws the call
// ($/cancel_request: the turn was cancelled or the call timed out) or the
// connection closes. An error answers the call with an error object, which fails it.
type ToolHandler func(ctx context.Context, call ToolCallRequest) (ClientToolResult, error)

// SetToolHandler sets who runs the client tools this client declared. Without one,
// tool/call is answered with an error.
func (c *Client) SetToolHandler(h ToolHandler) {
	c.tools.mu.Lock()
	c.tools.handler = h
	c.tools.mu.Unlock()
}

// toolCalls are the tool/call requests being served, by id, for $/cancel_request,
// and the client tools declared per session, which every session/attach of this
// client (Attach, a reconnect's re-attach) declares again.
type toolCalls struct {
	mu       sync.Mutex
	handler  ToolHandler
	running  map[string]context.CancelFunc
	sessions map[string][]ClientTool
	// early are withdrawn requests whose handler had not started yet (a
	// $/cancel_request can overtake its tool/call's goroutine); at most maxEarly.
	early []string
}

// maxEarly bounds the withdrawn tool/call ids remembered before their handler runs.
const maxEarly = 64

// SetSessionTools sets the client tools this client serves for sessionID from its
// next session/attach on (Attach, and the re-attach after a reconnect: a new
// connection serves nothing until it declares them). NewSession with ClientTools
// sets them too.
func (c *Client) SetSessionTools(sessionID string, tools []ClientTool) {
	c.tools.mu.Lock()
	defer c.tools.mu.Unlock()
	if c.tools.sessions == nil {
		c.tools.sessions = map[string][]ClientTool{}
	}
	if tools == nil {
		delete(c.tools.sessions, sessionID)
		return
	}
	c.tools.sessions[sessionID] = tools
}

// attachParams are the params of session/attach for sessionID.
func (c *Client) attachParams(sessionID string, afterSeq uint64) map[string]any {
	p := map[string]any{"sessionId": sessionID, "afterSeq": afterSeq}
	c.tools.mu.Lock()
	if tools, ok := c.tools.sessions[sessionID]; ok {
		p["clientTools"] = tools
	}
	c.tools.mu.Unlock()
	return p
}

func (c *Client) serveToolCall(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var call ToolCallRequest
	if err := json.Unmarshal(req.Params, &call); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key := req.ID.String()
	c.tools.mu.Lock()
	h := c.tools.handler
	if c.tools.running == nil {
		c.tools.running = map[string]context.CancelFunc{}
	}
	c.tools.running[key] = cancel
	for i, id := range c.tools.early {
		if id == key { // withdrawn before it got here
			c.tools.early = append(c.tools.early[:i], c.tools.early[i+1:]...)
			cancel()
			break
		}
	}
	c.tools.mu.Unlock()
	defer func() {
		c.tools.mu.Lock()
		delete(c.tools.running, key)
		c.tools.mu.Unlock()
	}()
	if h == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "this client serves no tools", nil)
	}
	r, err := h(ctx, call)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err)
	}
	if r.Content == nil {
		r.Content = []TextContent{}
	}
	return r, nil
}

// cancelToolCall ends the handler of the tool/call the daemon withdrew.
func (c *Client) cancelToolCall(params jsontext.Value) {
	var p struct {
		RequestID jsontext.Value `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	key := jsonrpc.ID(p.RequestID).String()
	c.tools.mu.Lock()
	cancel := c.tools.running[key]
	if cancel == nil {
		if len(c.tools.early) == maxEarly {
			c.tools.early = c.tools.early[1:]
		}
		c.tools.early = append(c.tools.early, key)
	}
	c.tools.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// MCPServer is one MCP server of the daemon (mcp/status).
type MCPServer struct {
	Name      string `json:"name"`
	Transport string `json:"transport"` // stdio, http
	State     string `json:"state"`     // stopped, starting, running, failed
	Tools     int    `json:"tools"`
	Error     string `json:"error"`
	PID       int    `json:"pid"`
}

// MCPStatus lists the daemon's MCP servers (mcp/status).
func (c *Client) MCPStatus(ctx context.Context) ([]MCPServer, error) {
	var r struct {
		Servers []MCPServer `json:"servers"`
	}
	if err := c.Call(ctx, "mcp/status", nil, &r); err != nil {
		return nil, err
	}
	return r.Servers, nil
}

// ToolInfo is one tool of tools/list.
type ToolInfo struct {
	Name        string `json:"name"`
	Source      string `json:"source"` // builtin, mcp, client
	Server      string `json:"server"`
	Description string `json:"description"`
	ReadOnly    bool   `json:"readOnly"`
}

// ListTools lists the tools of a session (sessionID) or of an agent (agentAlias):
// give one of them.
func (c *Client) ListTools(ctx context.Context, sessionID, agentAlias string) ([]ToolInfo, error) {
	p := map[string]string{}
	if sessionID != "" {
		p["sessionId"] = sessionID
	}
	if agentAlias != "" {
		p["agentAlias"] = agentAlias
	}
	var r struct {
		Tools []ToolInfo `json:"tools"`
	}
	if err := c.Call(ctx, "tools/list", p, &r); err != nil {
		return nil, err
	}
	return r.Tools, nil
}
