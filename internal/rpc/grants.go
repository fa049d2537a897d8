package rpc

import (
	"context"
	"fmt"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

func forbidden(g auth.Grant) error {
	msg := fmt.Sprintf("forbidden: this needs the %s grant", g)
	if g == auth.Admin {
		msg = "forbidden: only an admin may do this"
	}
	return jsonrpc.NewError(protocol.CodeForbidden, msg, map[string]any{"grant": g})
}

func agentForbidden(alias string) error {
	return jsonrpc.NewError(protocol.CodeForbidden,
		fmt.Sprintf("forbidden: agent %q is not among the agents this principal may use", alias),
		map[string]any{"reason": "agent_not_allowed", "agentAlias": alias})
}

func (s *Server) policy() auth.Policy {
	return auth.Policy{DaemonUID: s.cfg.DaemonUID, Pairings: s.cfg.Pairings}
}

// credential is what the connection proved at initialize. A local peer is its uid;
// a remote (WSS) peer is the hash its authToken verified to, and nothing else: a
// remote connection without one has no credential at all. A local peer that
// narrowed itself with a token at initialize is that token too.
func (c *connState) credential() (auth.Credential, error) {
	if h := c.session.Load(); h != nil && h.pairing != "" {
		return auth.Credential{UID: -1, Pairing: h.pairing}, nil
	}
	if !c.peer.Remote {
		return auth.Local(c.peer.UID), nil
	}
	return auth.Credential{}, errNoToken
}

// errNoToken answers a remote connection without a valid pairing token.
var errNoToken = jsonrpc.NewError(protocol.CodeUnauthenticated,
	"authentication required: initialize over WSS needs authToken, a pairing token (zeroclaw pair)",
	map[string]any{"reason": "auth_token_required"})

// track registers a remote connection with its token's hash, replacing an earlier
// registration (a repeated initialize), so that revoking the token closes it. It
// fails when the token was revoked since it was verified.
func (c *connState) track(hash string) error {
	untrack, ok := c.srv.cfg.Pairings.Track(hash, func() {
		c.log.Info("closing connection: its pairing token was revoked")
		c.conn.Close()
	})
	if !ok {
		return errNoToken
	}
	c.trackMu.Lock()
	prev := c.tracking
	c.tracking = untrack
	c.trackMu.Unlock()
	if prev != nil {
		prev()
	}
	return nil
}

// untrack ends the registration of track, when the connection ends.
func (c *connState) untrack() {
	c.trackMu.Lock()
	prev := c.tracking
	c.tracking = nil
	c.trackMu.Unlock()
	if prev != nil {
		prev()
	}
}

type authorityKey struct{}

// authorize is the gate's grant check: it resolves the caller's current authority
// from the configuration in force, so a change to [users] or [permission_profiles]
// applies to every connection's next call, and refuses the call without the
// method's grant, or a local-only method to a remote peer. Handlers find the
// authority in ctx (authorityFrom).
func (c *connState) authorize(ctx context.Context, row *methodRow) (context.Context, error) {
	a, err := c.authority(c.srv.cfg.Config.Current())
	if err != nil {
		return ctx, err
	}
	if !a.Has(row.grant) {
		return ctx, forbidden(row.grant)
	}
	if row.localOnly && c.peer.Remote {
		return ctx, jsonrpc.NewError(protocol.CodeForbidden, "forbidden: "+row.name+" is served on local connections only",
			map[string]any{"reason": "local_only", "method": row.name})
	}
	if row.onReader() {
		// Inline calls run one at a time on the connection's reader, and their
		// handlers keep nothing of ctx: one context serves them all, with no
		// allocation per call.
		c.inlineAuth = authorized{Context: ctx, a: a}
		return &c.inlineAuth, nil
	}
	return &authorized{Context: ctx, a: a}, nil
}

// authorized is a call's context carrying the authority the gate resolved for it:
// one allocation per call, where context.WithValue took two (its node and the
// boxed Authority). Every other key, and cancellation, is ctx's.
type authorized struct {
	context.Context
	a auth.Authority
}

func (c *authorized) Value(key any) any {
	if key == (authorityKey{}) {
		return &c.a
	}
	return c.Context.Value(key)
}

// authority resolves the connection's credential under cfg. The principal was
// fixed at initialize: when the credential now maps to no principal (the user left
// the roster, the token was revoked) or to another one, the call fails with -32010
// and the client must initialize again. A change of admin status alone follows
// along, and caller() sees it.
func (c *connState) authority(cfg config.Config) (auth.Authority, error) {
	h := c.session.Load()
	cred, err := c.credential()
	if err != nil {
		return auth.Authority{}, err
	}
	a, err := c.srv.policy().Resolve(cfg, cred)
	if err != nil {
		return a, jsonrpc.Errorf(protocol.CodeUnauthenticated, "authentication failed: %v", err)
	}
	if a.Principal.ID != h.principal.ID {
		return a, jsonrpc.Errorf(protocol.CodeUnauthenticated,
			"authentication failed: this connection's credential now maps to %s, not %s; initialize again",
			a.Principal.ID, h.principal.ID)
	}
	if a.Principal != h.principal {
		next := *h
		next.principal = a.Principal
		c.session.CompareAndSwap(h, &next) // a concurrent call may have done it already
	}
	return a, nil
}

// authorityFrom returns the authority the gate resolved for this call; none (nothing
// allowed) outside the gate.
func authorityFrom(ctx context.Context) auth.Authority {
	if a, ok := ctx.Value(authorityKey{}).(*auth.Authority); ok {
		return *a
	}
	return auth.Authority{}
}
