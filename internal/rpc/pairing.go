package rpc

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// The pairing family (docs/protocol.md, "Configuration"), admin only (their rows). A
// pairing token is how a WSS peer authenticates; on the wire a token's user is a
// [users] name, or null for a token that acts as the operator.

func (s *Server) pairingMethods() []methodRow {
	return []methodRow{
		{name: "pairing/create", grant: auth.Admin, handler: s.pairingCreate},
		{name: "pairing/list", grant: auth.Admin, handler: s.pairingList},
		{name: "pairing/revoke", grant: auth.Admin, handler: s.pairingRevoke},
	}
}

type pairingCreateParams struct {
	User *string `json:"user"`
}

type pairingCreateResult struct {
	Token       string  `json:"token"`
	User        *string `json:"user"`
	Fingerprint string  `json:"fingerprint"`
}

func userOrNull(user string) *string {
	if user == "" {
		return nil
	}
	return &user
}

func (s *Server) pairingCreate(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p pairingCreateParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	user := ""
	if p.User != nil {
		user = *p.User
	}
	if user != "" {
		if _, ok := s.cfg.Config.Current().Users[user]; !ok {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: no [users."+user+"] in the configuration",
				map[string]any{"param": "user", "reason": "unknown_user"})
		}
	}
	token, err := s.cfg.Pairings.Create(user)
	if errors.Is(err, auth.ErrTooManyPairings) {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, err.Error(),
			map[string]any{"reason": "too_many_pairings", "limit": auth.MaxPairings})
	}
	if err != nil {
		return nil, err
	}
	c.log.Info("pairing token created", "for", principalOf(user))
	return pairingCreateResult{
		Token: token,
		User:  userOrNull(user),
		// The WSS certificate's fingerprint, for the client to pin ("" when WSS is off).
		Fingerprint: s.cfg.Fingerprint,
	}, nil
}

func principalOf(user string) string {
	if user == "" {
		return auth.OperatorID
	}
	return auth.UserPrefix + user
}

type pairingEntry struct {
	User        *string `json:"user"`
	CreatedAt   string  `json:"createdAt"`   // RFC 3339, UTC
	Connections int     `json:"connections"` // open connections authenticated by tokens of this user
}

type pairingListResult struct {
	Pairings []pairingEntry `json:"pairings"`
}

func (s *Server) pairingList(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	list := s.cfg.Pairings.List()
	out := make([]pairingEntry, len(list))
	for i, p := range list {
		out[i] = pairingEntry{User: userOrNull(p.User), CreatedAt: p.CreatedAt.Format(time.RFC3339),
			Connections: s.cfg.Pairings.Tracked(p.User)}
	}
	return pairingListResult{Pairings: out}, nil
}

type pairingRevokeParams struct {
	User jsontext.Value `json:"user"` // a name, or null for the operator's tokens
}

type pairingRevokeResult struct {
	User    *string `json:"user"`
	Revoked bool    `json:"revoked"` // false when the user had no token
}

// pairingRevoke removes every token of a user and closes the connections they
// authenticated.
func (s *Server) pairingRevoke(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p pairingRevokeParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if len(p.User) == 0 {
		return nil, missing("user")
	}
	var name *string
	if err := json.Unmarshal(p.User, &name); err != nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: user must be a name, or null for the operator's tokens",
			map[string]any{"param": "user"})
	}
	user := ""
	if name != nil {
		user = *name
	}
	revoked, err := s.cfg.Pairings.Revoke(user)
	if err != nil {
		return nil, err
	}
	if revoked {
		c.log.Info("pairing tokens revoked", "for", principalOf(user))
	}
	return pairingRevokeResult{User: userOrNull(user), Revoked: revoked}, nil
}
