package rpc

import (
	"context"
	"encoding/json/jsontext"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
)

// Steering and export (docs/protocol.md, "Steering", "Export").

func (s *Server) steerMethods() []methodRow {
	return []methodRow{
		{name: "session/steer", grant: auth.SessionsExecute, handler: s.sessionSteer},
		{name: "session/export", grant: auth.SessionsRead, handler: s.sessionExport},
	}
}

type steerParams struct {
	SessionID      string  `json:"sessionId"`
	Text           *string `json:"text"`
	ExpectedTurnID string  `json:"expectedTurnId"`
}

func (s *Server) sessionSteer(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p steerParams
	if err := decodeSession(params, &p, &p.SessionID); err != nil {
		return nil, err
	}
	if p.Text == nil {
		return nil, missing("text")
	}
	sess, err := s.cfg.Sessions.Obtain(ctx, p.SessionID, c.caller()) // restores a durable session
	if err != nil {
		return nil, err
	}
	if !authorityFrom(ctx).MayUseAgent(sess.Agent.Alias) {
		return nil, agentForbidden(sess.Agent.Alias)
	}
	sess.Attach(c) // whoever steers sees the turn stream, as whoever prompts
	res, err := sess.Steer(ctx, *p.Text, p.ExpectedTurnID)
	if err == nil && res.LastSeq() > 0 {
		// The answer follows the steered user_message on this connection.
		sess.WaitDelivered(ctx, c, res.LastSeq())
	}
	return res, err
}

type exportParams struct {
	SessionID string `json:"sessionId"`
	Format    string `json:"format"`
}

func (s *Server) sessionExport(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p exportParams
	if err := decodeSession(params, &p, &p.SessionID); err != nil {
		return nil, err
	}
	if p.Format == "" {
		p.Format = session.ExportMarkdown
	}
	return s.cfg.Sessions.Export(ctx, p.SessionID, c.caller(), p.Format)
}
