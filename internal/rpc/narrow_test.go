package rpc

import (
	"os"
	"testing"
	"time"
)

// docs/protocol.md, "The web client": a local connection's authToken narrows it to
// the token's principal, and never widens it.
func TestALocalAuthTokenNarrowsThePrincipal(t *testing.T) {
	s := newConfServer(t, roster)
	op := s.operator(t)
	alice := op.must("pairing/create", `{"user":"alice"}`)["token"].(string)
	boss := op.must("pairing/create", `{"user":"boss"}`)["token"].(string)

	// The operator's own uid, narrowed to alice: alice's principal and grants.
	p := s.as(os.Getuid()).peer(t, "")
	res := p.must("initialize", `{"protocolVersion":1,"authToken":"`+alice+`"}`)
	if pr := res["principal"].(map[string]any); pr["id"] != "user:alice" || pr["admin"] != false {
		t.Fatalf("narrowed principal = %v, want user:alice", pr)
	}
	_, err := p.call("pairing/list", "")
	wantCode(t, err, -32012) // alice is no admin
	_, err = p.call("config/get", "")
	wantCode(t, err, -32012) // nor may she read the config
	p.must("session/new", `{"agentAlias":"full"}`)

	// Alice's own uid with her own token: the same principal, allowed.
	a := s.as(4242).peer(t, "")
	if pr := a.must("initialize", `{"protocolVersion":1,"authToken":"`+alice+`"}`)["principal"].(map[string]any); pr["id"] != "user:alice" {
		t.Fatalf("alice with her token = %v", pr)
	}
	// Alice's uid with an admin's token would widen her: refused, and the connection
	// stays as it was (alice, who may not list pairings).
	w := s.as(4242).peer(t, "")
	_, err = w.call("initialize", `{"protocolVersion":1,"authToken":"`+boss+`"}`)
	if e := wantCode(t, err, -32012); e.Data["reason"] != "auth_token_widens" {
		t.Errorf("widening token: %v", e)
	}
	_, err = w.call("pairing/list", "")
	wantCode(t, err, -32012)

	// A token that is not paired fails as over WSS.
	_, err = s.as(os.Getuid()).peer(t, "").call("initialize", `{"protocolVersion":1,"authToken":"zc_nope"}`)
	if e := wantCode(t, err, -32010); e.Data["reason"] != "auth_token_invalid" {
		t.Errorf("unpaired token: %v", e)
	}

	// Revoking alice's token closes the connection that narrowed to it.
	op.must("pairing/revoke", `{"user":"alice"}`)
	select {
	case <-p.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection narrowed to a revoked token is still open")
	}
}
