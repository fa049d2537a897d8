package rpc

import (
	"context"
	"encoding/json/jsontext"
	"fmt"
	"unicode/utf8"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// The session controls family (docs/protocol.md, "Session controls"): modes, models,
// titles, compaction, fork.

func (s *Server) controlMethods() []methodRow {
	return []methodRow{
		{name: "session/set", grant: auth.SessionsExecute, handler: s.sessionSet},
		{name: "models/list", grant: auth.SessionsRead, handler: s.modelsList},
		{name: "session/compact", grant: auth.SessionsExecute, handler: s.sessionCompact},
		{name: "session/fork", grant: auth.SessionsExecute, handler: s.sessionFork},
	}
}

type setParams struct {
	SessionID string  `json:"sessionId"`
	Mode      *string `json:"mode"`
	Model     *string `json:"model"`
	Title     *string `json:"title"`
}

func (s *Server) sessionSet(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p setParams
	if err := decodeSession(params, &p, &p.SessionID); err != nil {
		return nil, err
	}
	res, err := s.cfg.Sessions.Set(ctx, p.SessionID, c.caller(), session.SetParams{Mode: p.Mode, Model: p.Model, Title: p.Title})
	if err != nil {
		return nil, err
	}
	s.delivered(ctx, c, p.SessionID)
	return res, nil
}

// delivered returns once c, when attached to the session, has been handed every
// update the session published so far: the update a request published (the
// session_info of session/set, the history_compacted of session/compact) reaches
// the requesting connection before the request's response (docs/protocol.md, "A
// client that falls behind").
func (s *Server) delivered(ctx context.Context, c *connState, sessionID string) {
	if sess, err := s.cfg.Sessions.Get(sessionID, c.caller()); err == nil {
		sess.WaitDelivered(ctx, c, sess.LastSeq())
	}
}

type modelsParams struct {
	AgentAlias string `json:"agentAlias"`
	SessionID  string `json:"sessionId"`
}

type modelsResult struct {
	Models []session.ModelEntry `json:"models"`
	Source string               `json:"source"`
}

func (s *Server) modelsList(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p modelsParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	switch {
	case p.AgentAlias == "" && p.SessionID == "":
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: agentAlias or sessionId is required",
			map[string]any{"param": "agentAlias"})
	case p.AgentAlias != "" && p.SessionID != "":
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: give agentAlias or sessionId, not both",
			map[string]any{"param": "sessionId"})
	case p.AgentAlias != "" && !authorityFrom(ctx).MayUseAgent(p.AgentAlias):
		return nil, agentForbidden(p.AgentAlias)
	}
	models, source, err := s.cfg.Sessions.ListModels(ctx, c.caller(), p.AgentAlias, p.SessionID)
	if err != nil {
		return nil, err
	}
	return modelsResult{Models: models, Source: source}, nil
}

type compactParams struct {
	SessionID    string  `json:"sessionId"`
	Instructions string  `json:"instructions"`
	OperationID  *string `json:"operationId"`
}

// maxInstructions bounds the instructions of session/compact, in characters.
const maxInstructions = 4000

func (s *Server) sessionCompact(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p compactParams
	if err := decodeSession(params, &p, &p.SessionID); err != nil {
		return nil, err
	}
	operationID, err := checkOperationID(p.OperationID)
	if err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(p.Instructions); n > maxInstructions {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams,
			fmt.Sprintf("invalid params: instructions must be at most %d characters, not %d", maxInstructions, n),
			map[string]any{"param": "instructions"})
	}
	sess, err := s.cfg.Sessions.Obtain(ctx, p.SessionID, c.caller())
	if err != nil {
		return nil, err
	}
	if !authorityFrom(ctx).MayUseAgent(sess.Agent.Alias) {
		return nil, agentForbidden(sess.Agent.Alias)
	}
	res, err := sess.Compact(ctx, p.Instructions, operationID)
	if err != nil {
		return nil, err
	}
	sess.WaitDelivered(ctx, c, sess.LastSeq())
	return res, nil
}

type forkParams struct {
	SessionID string  `json:"sessionId"`
	Title     *string `json:"title"`
}

func (s *Server) sessionFork(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p forkParams
	if err := decodeSession(params, &p, &p.SessionID); err != nil {
		return nil, err
	}
	sess, err := s.cfg.Sessions.Obtain(ctx, p.SessionID, c.caller())
	if err != nil {
		return nil, err
	}
	if !authorityFrom(ctx).MayUseAgent(sess.Agent.Alias) {
		return nil, agentForbidden(sess.Agent.Alias)
	}
	return s.cfg.Sessions.Fork(ctx, sess.ID, c.caller(), p.Title)
}

// checkOperationID validates an operationId (docs/protocol.md, "session/prompt"): 1
// to maxOperationID characters; nil is none ("").
func checkOperationID(id *string) (string, error) {
	if id == nil {
		return "", nil
	}
	if n := utf8.RuneCountInString(*id); n < 1 || n > maxOperationID {
		return "", jsonrpc.NewError(jsonrpc.CodeInvalidParams,
			fmt.Sprintf("invalid params: operationId must be 1 to %d characters, not %d", maxOperationID, n),
			map[string]any{"param": "operationId"})
	}
	return *id, nil
}
