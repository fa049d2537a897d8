package acp

import (
	"context"
	"encoding/json/jsontext"
	"errors"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

type sessionParams struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
}

func decodeSessionParams(params jsontext.Value, needCwd bool) (sessionParams, error) {
	var p sessionParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return p, err
	}
	if p.SessionID == "" {
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: sessionId is required", map[string]any{"param": "sessionId"})
	}
	if needCwd && p.Cwd == "" {
		return p, missingCwd()
	}
	return p, nil
}

func missingCwd() error {
	return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: cwd is required", map[string]any{"param": "cwd"})
}

// sessionNew opens a native session of the bridge's agent in cwd, with the tools of
// the editor's mcpServers as its client tools (mcp.go).
func (b *Bridge) sessionNew(ctx context.Context, _ *request, params jsontext.Value) (any, error) {
	var p struct {
		Cwd        *string          `json:"cwd"`
		MCPServers []mcpServerParam `json:"mcpServers"`
	}
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.Cwd == nil || *p.Cwd == "" {
		return nil, missingCwd()
	}
	d, err := b.daemon(ctx)
	if err != nil {
		return nil, err
	}
	es := b.startServers(ctx, p.MCPServers, *p.Cwd)
	np := client.NewSessionParams{AgentAlias: b.opts.Agent, Cwd: *p.Cwd, KeepSiblings: true}
	s, err := b.newSession(ctx, d, np, es)
	if err != nil {
		if es != nil {
			es.m.Close()
		}
		return nil, err
	}
	b.setServers(s.SessionID, es)
	b.track(d, s.SessionID, 0)
	return b.opened(ctx, d, s.SessionID, true)
}

// reopen makes a stored or live session the editor's: attached to the daemon
// connection (which restores it, and tells the last seq, so that nothing of its past
// is replayed as live), then session/new with its id.
//
// Its editor servers (mcpServers of load or resume) replace those it had.
func (b *Bridge) reopen(ctx context.Context, d *client.Client, sid string, params jsontext.Value, cwd string) error {
	var r client.AttachResult
	if err := d.Call(ctx, "session/attach", map[string]any{"sessionId": sid}, &r); err != nil {
		return err
	}
	b.track(d, sid, r.LastSeq)
	es := b.startServers(ctx, decodeMCPServers(params), cwd)
	np := client.NewSessionParams{AgentAlias: b.opts.Agent, SessionID: sid, KeepSiblings: true, ClientTools: []client.ClientTool{}}
	_, err := b.newSession(ctx, d, np, es)
	if err != nil {
		if es != nil {
			es.m.Close()
		}
		return err
	}
	b.setServers(sid, es)
	return nil
}

// sessionLoad replays a session's whole visible history to the editor, then answers.
// The session may have been made by any client, before any restart of the daemon.
func (b *Bridge) sessionLoad(ctx context.Context, _ *request, params jsontext.Value) (any, error) {
	p, err := decodeSessionParams(params, true)
	if err != nil {
		return nil, err
	}
	d, err := b.daemon(ctx)
	if err != nil {
		return nil, err
	}
	msgs, err := d.Messages(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	if err := b.reopen(ctx, d, p.SessionID, params, p.Cwd); err != nil {
		return nil, err
	}
	tools := tool.Builtin()
	for _, m := range msgs {
		b.replay(p.SessionID, m, tools, p.Cwd)
	}
	return b.opened(ctx, d, p.SessionID, false)
}

// replay sends one transcript row as the update that showed it live. A built-in
// file tool's call is located again from its arguments, under the session's cwd;
// a result's diff is not kept in the transcript, so a replayed one shows its text.
func (b *Bridge) replay(sid string, m client.Message, tools map[string]tool.Tool, cwd string) {
	switch m.Role {
	case client.RoleUser:
		b.notify(sid, contentChunk{SessionUpdate: "user_message_chunk", Content: text(m.Text)})
	case client.RoleAssistant, client.RoleMarker:
		if m.Text != "" {
			b.notify(sid, contentChunk{SessionUpdate: "agent_message_chunk", Content: text(m.Text)})
		}
	case client.RoleToolCall:
		raw := jsontext.Value(m.Text)
		if !raw.IsValid() || raw.Kind() != '{' {
			raw = nil
		}
		var locs []client.Location
		if l, ok := tools[m.Name].(tool.Locator); ok && raw != nil {
			for _, loc := range l.Locations(tool.Env{Workspace: cwd}, raw) {
				locs = append(locs, client.Location{Path: loc.Path, Line: loc.Line})
			}
		}
		b.notify(sid, newToolCall(m.ToolCallID, m.Name, raw, locs))
	case client.RoleToolResult:
		b.notify(sid, newToolResult(m.ToolCallID, m.Text, m.IsError, nil))
	}
}

// sessionResume makes a session the editor's again without replaying its history.
func (b *Bridge) sessionResume(ctx context.Context, _ *request, params jsontext.Value) (any, error) {
	p, err := decodeSessionParams(params, true)
	if err != nil {
		return nil, err
	}
	d, err := b.daemon(ctx)
	if err != nil {
		return nil, err
	}
	if err := b.reopen(ctx, d, p.SessionID, params, p.Cwd); err != nil {
		return nil, err
	}
	return b.opened(ctx, d, p.SessionID, false)
}

// sessionList lists the caller's sessions that can be loaded (killed ones cannot),
// one native page per call; cwd, when given, keeps those whose workspace it is.
func (b *Bridge) sessionList(ctx context.Context, _ *request, params jsontext.Value) (any, error) {
	var p struct {
		Cwd    string `json:"cwd"`
		Cursor string `json:"cursor"`
	}
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	d, err := b.daemon(ctx)
	if err != nil {
		return nil, err
	}
	listed, next, err := d.ListSessions(ctx, 100, p.Cursor)
	if err != nil {
		return nil, err
	}
	out := listResult{Sessions: []sessionInfo{}, NextCursor: next}
	for _, s := range listed {
		if s.State == "killed" || (p.Cwd != "" && s.WorkspaceDir != p.Cwd) {
			continue
		}
		out.Sessions = append(out.Sessions, sessionInfo{
			SessionID: s.SessionID, Cwd: s.WorkspaceDir, Title: s.Title, UpdatedAt: s.LastActivity,
		})
	}
	return out, nil
}

// sessionClose cancels the session's running turn, then closes the live session;
// its history stays loadable.
func (b *Bridge) sessionClose(ctx context.Context, _ *request, params jsontext.Value) (any, error) {
	p, err := decodeSessionParams(params, false)
	if err != nil {
		return nil, err
	}
	b.cancelNotification(params) // the editor's own prompt answers "cancelled"
	d, err := b.daemon(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := d.Cancel(ctx, p.SessionID); err != nil && !notFound(err) {
		return nil, err
	}
	if err := d.CloseSession(ctx, p.SessionID); err != nil {
		return nil, err
	}
	b.forget(d, p.SessionID)
	return empty{}, nil
}

// sessionDelete removes the session and its history.
func (b *Bridge) sessionDelete(ctx context.Context, _ *request, params jsontext.Value) (any, error) {
	p, err := decodeSessionParams(params, false)
	if err != nil {
		return nil, err
	}
	b.cancelNotification(params)
	d, err := b.daemon(ctx)
	if err != nil {
		return nil, err
	}
	if err := d.DeleteSession(ctx, p.SessionID); err != nil {
		return nil, err
	}
	b.forget(d, p.SessionID)
	return empty{}, nil
}

func (b *Bridge) forget(d *client.Client, sid string) {
	b.setServers(sid, nil)
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.sessions[sid]; s != nil && s.turn == nil {
		delete(b.sessions, sid)
	}
	if b.d == d {
		delete(b.attached, sid)
	}
}

func notFound(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Code == client.CodeSessionNotFound
}
