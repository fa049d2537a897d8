package rpc

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Checks that fail closed (issue 12): what cannot be verified is refused.

// A local peer whose credentials the kernel would not give (endpoint.PeerOf
// reports uid -1) was taken for the daemon's own user, the admin operator. It is
// now nobody: initialize refuses it, and nothing else is served.
func TestAPeerWhoseCredentialsCannotBeReadIsRefusedAtInitialize(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no uids: a pipe peer is the daemon's user by the pipe's ACL")
	}
	s := newConfServer(t, roster)
	c := s.as(-1).client(t) // what PeerOf yields when SO_PEERCRED fails
	c.send(`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}`)
	m := c.recv()
	e, _ := m["error"].(map[string]any)
	if e["code"] != float64(-32010) {
		t.Fatalf("initialize without peer credentials = %v, want -32010", m)
	}
	c.send(`{"jsonrpc":"2.0","method":"config/get","id":2}`)
	if e, _ := c.recv()["error"].(map[string]any); e["code"] != float64(-32010) {
		t.Fatalf("config/get after the refused initialize: %v", e)
	}
	// The daemon's own user, with readable credentials, is still the operator.
	if p := s.operator(t).must("initialize", `{"protocolVersion":1}`); fmt.Sprint(p["principal"]) != "map[admin:true id:operator]" {
		t.Errorf("operator initialize = %v", p)
	}
}

// A non-admin's cwd is checked with links resolved, as the tools resolve them: a
// link inside the agent's workspace that points outside does not widen the
// session's root. A link to a directory inside is fine, and the session keeps the
// resolved path.
func TestALinkInTheWorkspacePointingOutsideIsNotACwd(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	s := newConfServer(t, roster)
	ws := filepath.Join(s.dir, "data", "workspaces", "full")
	outside := t.TempDir()
	inside := filepath.Join(ws, "sub")
	if err := os.MkdirAll(inside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(inside, filepath.Join(ws, "shortcut")); err != nil {
		t.Fatal(err)
	}
	alice := s.as(4242).peer(t, "")

	_, err := alice.call("session/new", fmt.Sprintf(`{"agentAlias":"full","cwd":%q}`, filepath.Join(ws, "escape")))
	if e := wantCode(t, err, -32602); e.Data["param"] != "cwd" {
		t.Errorf("error data %v, want param cwd", e.Data)
	}
	_, err = alice.call("session/new", fmt.Sprintf(`{"agentAlias":"full","cwd":%q}`, filepath.Join(ws, "escape", ".")))
	wantCode(t, err, -32602)

	real, err := filepath.EvalSymlinks(inside)
	if err != nil {
		t.Fatal(err)
	}
	r := alice.must("session/new", fmt.Sprintf(`{"agentAlias":"full","cwd":%q,"keep_siblings":true}`, filepath.Join(ws, "shortcut")))
	if r["workspaceDir"] != real {
		t.Errorf("workspaceDir = %v, want the resolved %s", r["workspaceDir"], real)
	}
	// The resolved root is what the tools confine to: the outside stays out of reach.
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o600)
	res := alice.must("session/prompt", prompt(r["sessionId"].(string), `/tool read_file {"path":"../escape/secret"}`))
	if res["text"] == nil || strings.Contains(res["text"].(string), "s3cret") {
		t.Errorf("a file outside the workspace was read: %v", res)
	}
	// An admin may pick any existing directory, as before.
	if r := s.operator(t).must("session/new", fmt.Sprintf(`{"agentAlias":"full","cwd":%q}`, outside)); r["workspaceDir"] != outside {
		t.Errorf("admin cwd = %v", r)
	}
}
