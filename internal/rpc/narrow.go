package rpc

import (
	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// narrow is initialize's authToken on a local connection (docs/protocol.md, "The
// web client"): zeroclaw web bridges each browser tab to a local connection of its
// own, and a tab that logged in with a pairing token must act as that token's
// principal, not as the user who runs the bridge. The token may only narrow: it is
// taken when the local peer is an admin (who may act as anyone) or is the very
// principal the token stands for; a token of another, or wider, principal is
// refused (-32012), and one that is not paired is -32010, as over WSS. The
// connection is then tracked like a WSS one, so revoking the token closes it.
func (s *Server) narrow(local auth.Credential, token string) (auth.Credential, string, error) {
	hash, ok := s.cfg.Pairings.Verify(token)
	if !ok {
		return local, "", jsonrpc.NewError(protocol.CodeUnauthenticated,
			"authentication failed: authToken is not a paired token (revoked, or never paired)",
			map[string]any{"reason": "auth_token_invalid"})
	}
	cfg := s.cfg.Config.Current()
	own, err := s.policy().Resolve(cfg, local)
	if err != nil {
		return local, "", jsonrpc.Errorf(protocol.CodeUnauthenticated, "authentication failed: %v", err)
	}
	cred := auth.Credential{UID: -1, Pairing: hash}
	theirs, err := s.policy().Resolve(cfg, cred)
	if err != nil {
		return local, "", jsonrpc.Errorf(protocol.CodeUnauthenticated, "authentication failed: %v", err)
	}
	if !own.Principal.Admin && theirs.Principal != own.Principal {
		return local, "", jsonrpc.NewError(protocol.CodeForbidden,
			"forbidden: a local connection's authToken may only narrow its principal, and this token is "+theirs.Principal.ID,
			map[string]any{"reason": "auth_token_widens", "principal": own.Principal.ID})
	}
	return cred, hash, nil
}
