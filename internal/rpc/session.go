package rpc

import (
	"context"
	"encoding/json/jsontext"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// The session family: docs/protocol.md, "Methods", "Turns and session/update" and
// "session/attach".

func (s *Server) sessionMethods() []methodRow {
	return []methodRow{
		{name: "session/new", grant: auth.SessionsExecute, handler: s.sessionNew},
		{name: "session/prompt", grant: auth.SessionsExecute, handler: s.sessionPrompt},
		{name: "session/cancel", grant: auth.SessionsExecute, schedule: jsonrpc.Priority, handler: s.sessionCancel},
		{name: "session/approve", grant: auth.SessionsExecute, schedule: jsonrpc.Priority, handler: s.sessionApprove},
		{name: "session/close", grant: auth.SessionsExecute, handler: s.sessionClose},
		{name: "session/attach", grant: auth.SessionsExecute, handler: s.sessionAttach},
		{name: "session/kill", grant: auth.SessionsExecute, handler: s.sessionKill},
		{name: "session/delete", grant: auth.SessionsExecute, handler: s.sessionDelete},
		{name: "session/list", grant: auth.SessionsRead, handler: s.sessionList},
		{name: "session/messages", grant: auth.SessionsRead, handler: s.sessionMessages},
	}
}

type sessionRef struct {
	SessionID string `json:"sessionId"`
}

// decodeSession decodes params into p, whose sessionId field id points to, and
// requires the sessionId.
func decodeSession(params jsontext.Value, p any, id *string) error {
	if err := jsonrpc.DecodeParams(params, p); err != nil {
		return err
	}
	if *id == "" {
		return missing("sessionId")
	}
	return nil
}

// lookup decodes params as decodeSession does and finds the live session.
func (c *connState) lookup(params jsontext.Value, p any, id *string) (*session.Session, error) {
	if err := decodeSession(params, p, id); err != nil {
		return nil, err
	}
	return c.srv.cfg.Sessions.Get(*id, c.caller())
}

func missing(param string) error {
	return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+param+" is required", map[string]any{"param": param})
}

type newParams struct {
	AgentAlias   string `json:"agentAlias"`
	Cwd          string `json:"cwd"`
	SessionID    string `json:"sessionId"`
	KeepSiblings bool   `json:"keep_siblings"`
	// ClientTools are the tools this connection serves for the session
	// (docs/protocol.md, "tool/call").
	ClientTools []session.ClientToolDef `json:"clientTools"`
}

type newResult struct {
	SessionID    string `json:"sessionId"`
	AgentAlias   string `json:"agentAlias"`
	WorkspaceDir string `json:"workspaceDir"`
	MessageCount int    `json:"messageCount"`
	Resumed      bool   `json:"resumed"`
}

func (s *Server) sessionNew(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p newParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.AgentAlias != "" && !authorityFrom(ctx).MayUseAgent(p.AgentAlias) {
		return nil, agentForbidden(p.AgentAlias)
	}
	if len(p.ClientTools) > 0 && p.AgentAlias != "" { // refused before a session is made
		a, err := s.cfg.Sessions.AgentOf(p.AgentAlias)
		if err != nil {
			return nil, err
		}
		if err := session.CheckClientTools(a, p.ClientTools); err != nil {
			return nil, err
		}
	}
	sess, resumed, err := s.cfg.Sessions.New(ctx, session.NewParams{
		Caller: c.caller(), Subscriber: c, AgentAlias: p.AgentAlias, Cwd: p.Cwd,
		SessionID: p.SessionID, KeepSiblings: p.KeepSiblings,
	})
	if err != nil {
		return nil, err
	}
	if p.ClientTools != nil {
		if err := sess.SetClientTools(c, p.ClientTools); err != nil {
			return nil, err
		}
	}
	count := 0 // a session just created has no messages yet
	if resumed {
		count = sess.MessageCount(ctx)
	}
	return newResult{
		SessionID: sess.ID, AgentAlias: sess.Agent.Alias, WorkspaceDir: sess.Workspace,
		MessageCount: count, Resumed: resumed,
	}, nil
}

type promptParams struct {
	SessionID   string          `json:"sessionId"`
	Prompt      *string         `json:"prompt"`
	Attachments []attachmentRef `json:"attachments"` // files.go
	OperationID *string         `json:"operationId"`
}

// maxOperationID is the longest operationId, in characters (docs/protocol.md,
// "session/prompt").
const maxOperationID = 128

func (s *Server) sessionPrompt(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p promptParams
	if err := decodeSession(params, &p, &p.SessionID); err != nil {
		return nil, err
	}
	sess, err := s.cfg.Sessions.Obtain(ctx, p.SessionID, c.caller()) // restores a durable session
	if err != nil {
		return nil, err
	}
	if p.Prompt == nil {
		return nil, missing("prompt")
	}
	operationID, err := checkOperationID(p.OperationID)
	if err != nil {
		return nil, err
	}
	if !authorityFrom(ctx).MayUseAgent(sess.Agent.Alias) {
		return nil, agentForbidden(sess.Agent.Alias)
	}
	text, err := s.withAttachments(ctx, sess, *p.Prompt, p.Attachments)
	if err != nil {
		return nil, err
	}
	var quoted jsontext.Value // the prompt as the client sent it, when it is the text
	if len(p.Attachments) == 0 {
		quoted, _ = jsonrpc.StringMember(params, "prompt")
	}
	sess.Attach(c) // whoever prompts sees the turn stream
	res, err := sess.PromptQuoted(ctx, text, quoted, operationID)
	if err == nil {
		// The answer follows the turn's updates on this connection.
		sess.WaitDelivered(ctx, c, res.LastSeq())
	}
	return res, err
}

type cancelResult struct {
	SessionID string `json:"sessionId"`
	Cancelled bool   `json:"cancelled"`
}

func (s *Server) sessionCancel(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p sessionRef
	sess, err := c.lookup(params, &p, &p.SessionID)
	if err != nil {
		return nil, err
	}
	return cancelResult{SessionID: sess.ID, Cancelled: sess.Cancel()}, nil
}

type approveParams struct {
	SessionID string `json:"sessionId"`
	RequestID string `json:"requestId"`
	Decision  string `json:"decision"`
}

type approveResult struct {
	SessionID string `json:"sessionId"`
	RequestID string `json:"requestId"`
	Accepted  bool   `json:"accepted"`
}

func (s *Server) sessionApprove(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p approveParams
	sess, err := c.lookup(params, &p, &p.SessionID)
	if err != nil {
		return nil, err
	}
	if p.RequestID == "" {
		return nil, missing("requestId")
	}
	accepted, err := sess.Approve(p.RequestID, p.Decision)
	if err != nil {
		return nil, err
	}
	return approveResult{SessionID: sess.ID, RequestID: p.RequestID, Accepted: accepted}, nil
}

type closeResult struct {
	SessionID string `json:"sessionId"`
	Closed    bool   `json:"closed"`
}

func (s *Server) sessionClose(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p sessionRef
	if err := decodeSession(params, &p, &p.SessionID); err != nil {
		return nil, err
	}
	if err := s.cfg.Sessions.Close(p.SessionID, c.caller()); err != nil {
		return nil, err
	}
	return closeResult{SessionID: p.SessionID, Closed: true}, nil
}

type attachParams struct {
	SessionID string  `json:"sessionId"`
	AfterSeq  *uint64 `json:"afterSeq"`
	// ClientTools, when given, replace the tools this connection serves for the
	// session; omitted, those it served before stay (docs/protocol.md, "tool/call").
	ClientTools []session.ClientToolDef `json:"clientTools"`
}

type attachResult struct {
	SessionID string `json:"sessionId"`
	LastSeq   uint64 `json:"lastSeq"`
	Replayed  int    `json:"replayed"`
}

// sessionAttach attaches the connection to a live or durable session (restoring it)
// and replays the stored updates after afterSeq first (docs/protocol.md,
// "session/attach").
func (s *Server) sessionAttach(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p attachParams
	if err := decodeSession(params, &p, &p.SessionID); err != nil {
		return nil, err
	}
	sess, err := s.cfg.Sessions.Obtain(ctx, p.SessionID, c.caller())
	if err != nil {
		return nil, err
	}
	if p.ClientTools != nil {
		if err := sess.SetClientTools(c, p.ClientTools); err != nil {
			return nil, err
		}
	}
	last, replayed, err := sess.AttachAfter(ctx, c, p.AfterSeq)
	if err != nil {
		return nil, err
	}
	return attachResult{SessionID: sess.ID, LastSeq: last, Replayed: replayed}, nil
}

type killResult struct {
	SessionID string `json:"sessionId"`
	Killed    bool   `json:"killed"`
}

func (s *Server) sessionKill(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p sessionRef
	if err := decodeSession(params, &p, &p.SessionID); err != nil {
		return nil, err
	}
	if err := s.cfg.Sessions.Kill(ctx, p.SessionID, c.caller()); err != nil {
		return nil, err
	}
	return killResult{SessionID: p.SessionID, Killed: true}, nil
}

type deleteResult struct {
	SessionID string `json:"sessionId"`
	Deleted   bool   `json:"deleted"`
}

func (s *Server) sessionDelete(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p sessionRef
	if err := decodeSession(params, &p, &p.SessionID); err != nil {
		return nil, err
	}
	if err := s.cfg.Sessions.Delete(ctx, p.SessionID, c.caller()); err != nil {
		return nil, err
	}
	return deleteResult{SessionID: p.SessionID, Deleted: true}, nil
}

type listParams struct {
	Limit  *int   `json:"limit"`
	Cursor string `json:"cursor"`
}

type listResult struct {
	Sessions   []session.ListEntry `json:"sessions"`
	NextCursor string              `json:"nextCursor,omitzero"`
}

func (s *Server) sessionList(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p listParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	limit := 50
	if p.Limit != nil {
		if *p.Limit < 1 || *p.Limit > 1000 {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: limit must be between 1 and 1000", map[string]any{"param": "limit"})
		}
		limit = *p.Limit
	}
	entries, next, err := s.cfg.Sessions.ListDurable(ctx, c.caller(), limit, p.Cursor)
	if err != nil {
		return nil, err
	}
	return listResult{Sessions: entries, NextCursor: next}, nil
}

type messagesParams struct {
	SessionID string `json:"sessionId"`
	Limit     *int   `json:"limit"`
	Before    *int   `json:"before"`
}

type messagesResult struct {
	SessionID string            `json:"sessionId"`
	Messages  []session.Message `json:"messages"`
	Total     int               `json:"total"`
}

func (s *Server) sessionMessages(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p messagesParams
	if err := decodeSession(params, &p, &p.SessionID); err != nil {
		return nil, err
	}
	limit, before := 100, -1
	if p.Limit != nil {
		if *p.Limit < 1 || *p.Limit > 10000 {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: limit must be between 1 and 10000", map[string]any{"param": "limit"})
		}
		limit = *p.Limit
	}
	if p.Before != nil {
		if *p.Before < 0 {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: before must not be negative", map[string]any{"param": "before"})
		}
		before = *p.Before
	}
	msgs, total, err := s.cfg.Sessions.Messages(ctx, p.SessionID, c.caller(), limit, before)
	if err != nil {
		return nil, err
	}
	return messagesResult{SessionID: p.SessionID, Messages: msgs, Total: total}, nil
}
