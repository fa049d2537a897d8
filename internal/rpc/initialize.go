package rpc

import (
	"context"
	"crypto/rand"
	"encoding/json/jsontext"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// ClientInfo names the client program, for logs.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ClientCapabilities is what the client declared it can answer.
type ClientCapabilities struct {
	// Elicitation is present ({"form":{}}) when the client answers elicitation/create.
	Elicitation *struct {
		Form *struct{} `json:"form"`
	} `json:"elicitation"`
}

type initializeParams struct {
	ProtocolVersion    *int64             `json:"protocolVersion"`
	ClientInfo         ClientInfo         `json:"clientInfo"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
	AuthToken          string             `json:"authToken"`
}

type initializeResult struct {
	ProtocolVersion int            `json:"protocolVersion"`
	ServerVersion   string         `json:"serverVersion"`
	ServerPID       int            `json:"serverPid"`
	InstanceID      string         `json:"instanceId"`
	Principal       auth.Principal `json:"principal"`
	Methods         []string       `json:"methods"`
}

// initialize negotiates the protocol version and fixes the connection's principal.
// A failing initialize leaves the connection as it was; a repeated one answers again.
func (s *Server) initialize(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	var p initializeParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	version := int64(ProtocolVersion)
	if p.ProtocolVersion != nil {
		version = *p.ProtocolVersion
	}
	if version != ProtocolVersion {
		return nil, jsonrpc.NewError(protocol.CodeVersionMismatch, "unsupported protocol version",
			map[string]any{"supported": []int{ProtocolVersion}, "requested": version})
	}
	// On a local endpoint the operating system vouches for the peer: its uid is the
	// credential. A remote peer is its pairing token. A local peer that presents one
	// (zeroclaw web, for a tab logged in with it) takes that token's principal, which
	// may only narrow its own (narrow).
	cred, pairing := auth.Local(c.peer.UID), ""
	if c.peer.Remote {
		hash, ok := s.cfg.Pairings.Verify(p.AuthToken)
		if !ok {
			if p.AuthToken == "" {
				return nil, errNoToken
			}
			return nil, jsonrpc.NewError(protocol.CodeUnauthenticated,
				"authentication failed: authToken is not a paired token (revoked, or never paired)",
				map[string]any{"reason": "auth_token_invalid"})
		}
		cred, pairing = auth.Credential{UID: -1, Pairing: hash}, hash
	} else if p.AuthToken != "" {
		var err error
		if cred, pairing, err = s.narrow(cred, p.AuthToken); err != nil {
			return nil, err
		}
	}
	a, err := s.policy().Resolve(s.cfg.Config.Current(), cred)
	if err != nil {
		return nil, jsonrpc.Errorf(protocol.CodeUnauthenticated, "authentication failed: %v", err)
	}
	if pairing != "" {
		if err := c.track(pairing); err != nil {
			return nil, err
		}
	}
	principal := a.Principal
	c.session.Store(&handshake{principal: principal, pairing: pairing, client: p.ClientInfo, capabilities: p.ClientCapabilities})
	if !c.initialized.Swap(true) {
		c.log.Info("initialized", "principal", principal.ID, "client", p.ClientInfo.Name, "clientVersion", p.ClientInfo.Version)
	}
	return initializeResult{
		ProtocolVersion: ProtocolVersion,
		ServerVersion:   ServerVersion,
		ServerPID:       s.pid,
		InstanceID:      s.instanceID,
		Principal:       principal,
		Methods:         s.names,
	}, nil
}

// newInstanceID makes the id of one daemon start (docs/protocol.md, "initialize"): a
// client that sees it change across a reconnect knows the daemon restarted, and that
// turns running before were interrupted rather than still streaming.
func newInstanceID() string { return "inst_" + rand.Text() }
