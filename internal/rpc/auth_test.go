package rpc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
)

// roster: "alice" (uid 4242) may run sessions of the full agent and read status;
// "bob" (uid 4343) holds no grant at all; "boss" (uid 4444) is an admin.
const roster = `
[agents.full]
provider = "echo"
autonomy = "full"

[permission_profiles.runner]
grants = ["sessions:execute", "sessions:read", "system:read"]
agents = ["full"]

[permission_profiles.nothing]

[permission_profiles.admin]
admin = true

[users.alice]
uid = 4242
permission_profiles = ["runner"]

[users.bob]
uid = 4343
permission_profiles = ["nothing"]

[users.boss]
uid = 4444
permission_profiles = ["admin"]
`

func TestAPeerOutsideTheRosterFailsInitialize(t *testing.T) {
	s := newConfServer(t, roster)
	c := s.as(5555).client(t)
	c.send(`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}`)
	m := c.recv()
	if e, _ := m["error"].(map[string]any); e["code"] != float64(-32010) {
		t.Fatalf("initialize = %v, want -32010", m)
	}
	c.send(`{"jsonrpc":"2.0","method":"status","id":2}`)
	if e, _ := c.recv()["error"].(map[string]any); e["code"] != float64(-32010) || e["message"] != "first call must be initialize" {
		t.Fatalf("status after a failed initialize: %v", e)
	}
}

func TestInitializeNamesThePrincipal(t *testing.T) {
	s := newConfServer(t, roster)
	for uid, want := range map[int]string{os.Getuid(): "operator/true", 4242: "user:alice/false", 4444: "user:boss/true"} {
		p := s.as(uid).peer(t, "")
		res := p.must("initialize", `{"protocolVersion":1}`)
		pr := res["principal"].(map[string]any)
		if got := fmt.Sprintf("%v/%v", pr["id"], pr["admin"]); got != want {
			t.Errorf("uid %d: principal %s, want %s", uid, got, want)
		}
	}
}

func TestEachMethodNeedsItsGrant(t *testing.T) {
	s := newConfServer(t, roster)
	bob := s.as(4343).peer(t, "")
	for _, tt := range []struct{ method, params, grant string }{
		{"status", ``, "system:read"},
		{"session/new", `{"agentAlias":"default"}`, "sessions:execute"},
		{"session/prompt", `{"sessionId":"x","prompt":"hi"}`, "sessions:execute"},
		{"session/close", `{"sessionId":"x"}`, "sessions:execute"},
		{"session/attach", `{"sessionId":"x"}`, "sessions:execute"},
		{"config/get", ``, "config:read"},
		{"config/set", `{"prop":"wss.port","value":1}`, "config:update"},
		{"config/set-many", sets("wss.port", `1`), "config:update"},
		{"pairing/create", ``, "admin"},
		{"pairing/list", ``, "admin"},
		{"pairing/revoke", `{"user":"bob"}`, "admin"},
	} {
		_, err := bob.call(tt.method, tt.params)
		if e := wantCode(t, err, -32012); e.Data["grant"] != tt.grant {
			t.Errorf("%s: %v, want data.grant %s", tt.method, e, tt.grant)
		}
	}
	alice := s.as(4242).peer(t, "")
	if res := alice.must("status", ""); res["serverVersion"] != ServerVersion {
		t.Errorf("status as alice = %v", res)
	}
	_, err := alice.call("config/get", "")
	wantCode(t, err, -32012)
}

func TestConfigWritesNeedEveryPath(t *testing.T) {
	s := newConfServer(t, restricted)
	p := s.as(4242).peer(t, "")
	p.must("config/set", `{"prop":"agents.default.model","value":"mine"}`)
	p.must("config/set-many", sets("users.new.uid", `5000`, "users.new.permission_profiles", `["limited"]`))
	_, err := p.call("config/set", `{"prop":"agents.default.provider","value":"echo"}`)
	if e := wantCode(t, err, -32012); e.Data["prop"] != "agents.default.provider" || e.Data["index"] != nil {
		t.Errorf("single forbidden set: %v", e)
	}
	// One forbidden path refuses the batch, even after allowed ones; the index is
	// the first forbidden entry's.
	_, err = p.call("config/set-many", sets("agents.default.model", `"a"`, "security.trust_daemon_uid", `false`, "rpc.replay_events", `5`))
	if e := wantCode(t, err, -32012); e.Data["index"] != float64(1) || e.Data["grant"] != "config:update" {
		t.Errorf("batch: %v", e)
	}
	if v := p.must("config/get", `{"prop":"agents.default.model"}`)["value"]; v != "mine" {
		t.Errorf("model = %v: the refused batch's allowed entry was applied", v)
	}
}

func TestAgentsAreLimitedToTheProfiles(t *testing.T) {
	s := newConfServer(t, roster)
	alice := s.as(4242).peer(t, "")
	_, err := alice.call("session/new", `{"agentAlias":"default"}`)
	if e := wantCode(t, err, -32012); e.Data["reason"] != "agent_not_allowed" || e.Data["agentAlias"] != "default" {
		t.Errorf("session/new default: %v", e)
	}
	sid := alice.newSession(`{"agentAlias":"full"}`)
	alice.must("session/prompt", prompt(sid, "hi"))
	// The operator takes the agent away: alice's next prompt to it is refused.
	s.operator(t).must("config/set", `{"prop":"permission_profiles.runner.agents","value":["default"]}`)
	_, err = alice.call("session/prompt", prompt(sid, "again"))
	if e := wantCode(t, err, -32012); e.Data["agentAlias"] != "full" {
		t.Errorf("prompt after the agent was withdrawn: %v", e)
	}
}

func TestSessionsAreIsolatedBetweenPrincipals(t *testing.T) {
	s := newConfServer(t, roster)
	op := s.operator(t)
	opSID := op.newSession(`{"agentAlias":"full","sessionId":"op-session"}`)
	alice := s.as(4242).peer(t, "")
	aliceSID := alice.newSession(`{"agentAlias":"full"}`)

	for _, call := range []struct{ method, params string }{
		{"session/prompt", prompt(opSID, "hi")},
		{"session/cancel", fmt.Sprintf(`{"sessionId":%q}`, opSID)},
		{"session/close", fmt.Sprintf(`{"sessionId":%q}`, opSID)},
		{"session/attach", fmt.Sprintf(`{"sessionId":%q}`, opSID)},
	} {
		_, err := alice.call(call.method, call.params)
		_, missingErr := alice.call(call.method, strings.ReplaceAll(call.params, opSID, "no-such-session"))
		e, m := wantCode(t, err, -32000), wantCode(t, missingErr, -32000)
		if strings.ReplaceAll(e.Message, opSID, "ID") != strings.ReplaceAll(m.Message, "no-such-session", "ID") {
			t.Errorf("%s: another's session (%v) answers unlike a missing one (%v)", call.method, e, m)
		}
	}
	_, err := alice.call("session/new", `{"agentAlias":"full","sessionId":"op-session"}`)
	if e := wantCode(t, err, -32602); e.Data["reason"] != "session_id_taken" {
		t.Errorf("session/new with the operator's id: %v", e)
	}
	status := alice.must("status", "")
	if list := status["sessions"].([]any); len(list) != 1 || list[0].(map[string]any)["sessionId"] != aliceSID {
		t.Errorf("alice's status lists %v", list)
	}
	// An admin sees and may use everyone's sessions.
	if list := op.must("status", "")["sessions"].([]any); len(list) != 2 {
		t.Errorf("the operator's status lists %v", list)
	}
	op.must("session/prompt", prompt(aliceSID, "admin here"))
}

func TestAuthorityFollowsConfigChanges(t *testing.T) {
	s := newConfServer(t, roster)
	op := s.operator(t)
	alice := s.as(4242).peer(t, "")
	alice.must("status", "")

	// A grant withdrawn from the profile: alice's next call on the open connection
	// is refused.
	op.must("config/set", `{"prop":"permission_profiles.runner.grants","value":["sessions:execute"]}`)
	_, err := alice.call("status", "")
	if e := wantCode(t, err, -32012); e.Data["grant"] != "system:read" {
		t.Errorf("status after the grant went: %v", e)
	}
	// Given back.
	op.must("config/set", `{"prop":"permission_profiles.runner.grants","value":["system:read"]}`)
	alice.must("status", "")

	// Made an admin through a new profile: admin power applies at once.
	op.must("config/set", `{"prop":"users.alice.permission_profiles","value":["runner","admin"]}`)
	alice.must("pairing/list", "")

	// Removed from the roster (her entry now has another uid): her credential maps
	// to no principal, so the call fails authentication, -32010.
	op.must("config/set", `{"prop":"users.alice.uid","value":4999}`)
	_, err = alice.call("status", "")
	wantCode(t, err, -32010)
	// A new connection cannot initialize either.
	c := s.as(4242).client(t)
	c.send(`{"jsonrpc":"2.0","method":"initialize","id":1}`)
	if e, _ := c.recv()["error"].(map[string]any); e["code"] != float64(-32010) {
		t.Errorf("initialize after removal: %v", e)
	}
	// The uid now maps to another principal: the open connection must initialize again.
	op.must("config/set-many", sets("users.carol.uid", `4242`, "users.carol.permission_profiles", `["runner"]`))
	_, err = alice.call("status", "")
	if e := wantCode(t, err, -32010); !strings.Contains(e.Message, "user:carol") {
		t.Errorf("after the uid moved to carol: %v", e)
	}
	res := alice.must("initialize", `{"protocolVersion":1}`)
	if res["principal"].(map[string]any)["id"] != "user:carol" {
		t.Errorf("re-initialize = %v", res)
	}
	alice.must("status", "")
}

func TestUntrustedDaemonUIDIsNotTheOperator(t *testing.T) {
	s := newConfServer(t, "[security]\ntrust_daemon_uid = false\n")
	c := s.as(os.Getuid()).client(t)
	c.send(`{"jsonrpc":"2.0","method":"initialize","id":1}`)
	if e, _ := c.recv()["error"].(map[string]any); e["code"] != float64(-32010) {
		t.Fatalf("initialize as the daemon's uid without trust: %v", e)
	}
}

// A revocation that lands while a batch waits for the config write lock refuses it:
// authority is resolved under the lock, not before.
func TestRevocationWhileWaitingForTheLockRefusesTheBatch(t *testing.T) {
	s := newConfServer(t, restricted)
	p := s.as(4242).peer(t, "")
	p.must("config/get", `{"prop":"wss.port"}`)
	tx, err := s.live.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	resp := p.start("config/set-many", sets("agents.default.model", `"queued"`))
	s.logs.await(t, config.WaitingMessage)
	// Someone else's write, committed while the batch waits, withdraws config:update.
	if err := tx.Commit([]config.Entry{{Prop: "permission_profiles.limited.grants", Value: []byte(`["config:read"]`)}}); err != nil {
		t.Fatal(err)
	}
	tx.End()
	_, err = p.await(resp)
	if e := wantCode(t, err, -32012); e.Data["grant"] != "config:update" {
		t.Errorf("queued batch: %v", e)
	}
	if v := p.must("config/get", `{"prop":"agents.default.model"}`)["value"]; v != nil {
		t.Errorf("model = %v: the refused batch was applied", v)
	}
}

func TestPairingMethods(t *testing.T) {
	s := newConfServer(t, roster)
	op := s.operator(t)
	opTok := op.must("pairing/create", "")
	if opTok["user"] != nil || opTok["fingerprint"] != "" || !strings.HasPrefix(opTok["token"].(string), "zc_") {
		t.Fatalf("pairing/create = %v", opTok)
	}
	aliceTok := op.must("pairing/create", `{"user":"alice"}`)
	if aliceTok["user"] != "alice" {
		t.Fatalf("pairing/create alice = %v", aliceTok)
	}
	_, err := op.call("pairing/create", `{"user":"ghost"}`)
	if e := wantCode(t, err, -32602); e.Data["reason"] != "unknown_user" {
		t.Errorf("unknown user: %v", e)
	}
	list := op.must("pairing/list", "")["pairings"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["user"] != nil || list[1].(map[string]any)["user"] != "alice" ||
		!strings.HasSuffix(list[1].(map[string]any)["createdAt"].(string), "Z") {
		t.Fatalf("pairing/list = %v", list)
	}

	path := filepath.Join(s.dir, "data", auth.PairingsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []any{opTok["token"], aliceTok["token"]} {
		if strings.Contains(string(data), strings.TrimPrefix(tok.(string), "zc_")) {
			t.Errorf("%s holds a token", path)
		}
		if _, ok := s.pairings.Verify(tok.(string)); !ok {
			t.Errorf("token %s does not verify", tok)
		}
	}
	if fi, _ := os.Stat(path); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("%s mode %v", path, fi.Mode().Perm())
	}

	if res := op.must("pairing/revoke", `{"user":"alice"}`); res["user"] != "alice" || res["revoked"] != true {
		t.Errorf("revoke alice = %v", res)
	}
	if res := op.must("pairing/revoke", `{"user":"alice"}`); res["revoked"] != false {
		t.Errorf("second revoke = %v", res)
	}
	if res := op.must("pairing/revoke", `{"user":null}`); res["user"] != nil || res["revoked"] != true {
		t.Errorf("revoke the operator's = %v", res)
	}
	_, err = op.call("pairing/revoke", ``)
	wantCode(t, err, -32602)
	if list := op.must("pairing/list", "")["pairings"].([]any); len(list) != 0 {
		t.Errorf("after revoking all: %v", list)
	}
	// An admin user may pair too; a plain one may not.
	s.as(4444).peer(t, "").must("pairing/create", `{"user":"bob"}`)
	_, err = s.as(4242).peer(t, "").call("pairing/list", "")
	wantCode(t, err, -32012)
}
