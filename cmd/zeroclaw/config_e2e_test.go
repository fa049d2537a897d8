//go:build unix

package main

import (
	"encoding/json/jsontext"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/wait"
)

// zeroclaw runs the client `zeroclaw args...` with HOME=home.
func zeroclaw(t *testing.T, home string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := command(home, args...)
	// A -race binary sleeps a second at exit by default; a client run is short.
	cmd.Env = append(cmd.Env, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	o, e, err := run(t, cmd)
	return o, e, exitCode(err)
}

func TestConfigGetAndSetOverTheCLI(t *testing.T) {
	h := home(t)
	startDaemon(t, h, nil)
	for _, tt := range []struct {
		prop, value, want string
	}{
		{"agents.default.model", "gpt-4o", `"gpt-4o"`}, // not JSON: taken as a string
		{"agents.default.system_prompt", `"be brief"`, `"be brief"`},
		{"rpc.max_local_connections", "64", `64`},
		{"wss.enabled", "true", `true`},
		{"agents.default.tools", `["shell","read_file"]`, `["shell","read_file"]`},
	} {
		out, errOut, code := zeroclaw(t, h, "config", "set", tt.prop, tt.value)
		if code != 0 || out != "set "+tt.prop+"\n" {
			t.Fatalf("config set %s %s: exit %d, %q, %q", tt.prop, tt.value, code, out, errOut)
		}
		out, errOut, code = zeroclaw(t, h, "config", "get", tt.prop)
		if code != 0 || out != tt.want+"\n" {
			t.Errorf("config get %s: exit %d, %q, %q; want %s", tt.prop, code, out, errOut, tt.want)
		}
	}
	out, _, code := zeroclaw(t, h, "config", "get")
	if code != 0 || !strings.Contains(out, `"model": "gpt-4o"`) || !strings.Contains(out, `"trust_daemon_uid": true`) {
		t.Errorf("config get: exit %d\n%s", code, out)
	}
	cfg, err := config.Load(filepath.Join(h, ".zeroclaw"))
	if err != nil || cfg.Agents["default"].Model != "gpt-4o" || cfg.RPC.MaxLocalConnections != 64 {
		t.Errorf("config.toml after the CLI writes: %v, %v", cfg, err)
	}
}

func TestCLIErrorsExitNonZeroWithTheDaemonsMessage(t *testing.T) {
	h := home(t)
	startDaemon(t, h, nil)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"config", "get", "agents.default.colour"}, "unknown property: agents.default.colour"},
		{[]string{"config", "set", "wss.port", "many"}, "invalid value for wss.port"},
		{[]string{"config", "set", "wss.port", "0"}, "wss.port = 0: must be between 1 and 65535"},
		{[]string{"config", "set", "wss.port"}, "accepts 2 arg(s)"},
		{[]string{"pair", "--user", "ghost"}, "no [users.ghost]"},
		{[]string{"pair", "--list", "--revoke", "x"}, "do not combine"},
	} {
		out, errOut, code := zeroclaw(t, h, tt.args...)
		if code == 0 || out != "" || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one line with %q", tt.args, code, out, errOut, tt.want)
		}
	}
}

func TestClientCommandsWithoutADaemonSayHowToStartOne(t *testing.T) {
	h := home(t)
	socket := filepath.Join(h, ".zeroclaw", "data", "daemon.sock")
	for _, args := range [][]string{{"config", "get"}, {"config", "set", "wss.port", "1"}, {"pair"}, {"pair", "--list"}} {
		out, errOut, code := zeroclaw(t, h, args...)
		if code == 0 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, socket) || !strings.Contains(errOut, "zeroclaw daemon") {
			t.Errorf("%v without a daemon: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

func TestPairPrintsTheTokenLastAndStoresOnlyItsHash(t *testing.T) {
	h := home(t)
	startDaemon(t, h, nil)
	token := func(args ...string) string {
		t.Helper()
		out, errOut, code := zeroclaw(t, h, append([]string{"pair"}, args...)...)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		last := lines[len(lines)-1]
		if code != 0 || !strings.HasPrefix(last, "zc_") || len(last) != 46 || len(lines) < 2 {
			t.Fatalf("pair %v: exit %d, %q, %q", args, code, out, errOut)
		}
		return last
	}
	op := token()
	if _, _, code := zeroclaw(t, h, "config", "set", "users.alice.uid", "4242"); code != 0 {
		t.Fatal("config set users.alice.uid failed")
	}
	alice := token("--user", "alice")

	path := filepath.Join(h, ".zeroclaw", "data", "pairings.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{op, alice} {
		if strings.Contains(string(data), strings.TrimPrefix(tok, "zc_")) {
			t.Errorf("pairings.json holds a token: %s", data)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("pairings.json mode %v", fi.Mode().Perm())
	}
	out, _, code := zeroclaw(t, h, "pair", "--list")
	if code != 0 || !strings.Contains(out, "the operator") || !strings.Contains(out, "user alice") {
		t.Errorf("pair --list: exit %d\n%s", code, out)
	}
	out, _, code = zeroclaw(t, h, "pair", "--revoke", "alice")
	if code != 0 || !strings.Contains(out, "revoked the pairing tokens of alice") {
		t.Errorf("pair --revoke alice: exit %d, %q", code, out)
	}
	out, _, code = zeroclaw(t, h, "pair", "--revoke", "alice")
	if code != 0 || !strings.Contains(out, "alice had no pairing tokens") {
		t.Errorf("second revoke: exit %d, %q", code, out)
	}
	if out, _, _ := zeroclaw(t, h, "pair", "--list"); strings.Contains(out, "alice") {
		t.Errorf("pair --list after revoke:\n%s", out)
	}
}

func TestSecretsStayOutOfOutputAndLogs(t *testing.T) {
	const secret, next = "sk-e2e-secret-0001", "sk-e2e-secret-0002"
	h := home(t)
	os.MkdirAll(filepath.Join(h, ".zeroclaw"), 0o700)
	os.WriteFile(filepath.Join(h, ".zeroclaw", "config.toml"),
		[]byte("[providers.remote]\nkind = \"anthropic\"\napi_key = \""+secret+"\"\n"), 0o600)
	d := startDaemon(t, h, nil, "--log-level", "debug")
	var outputs []string
	for _, args := range [][]string{
		{"config", "get"}, {"config", "get", "providers.remote.api_key"}, {"config", "get", "providers"},
		{"config", "set", "providers.remote.api_key", next},
		{"config", "set", "providers.remote.api_key", `["` + secret + `"]`},
		{"config", "get", "providers.remote"},
	} {
		out, errOut, _ := zeroclaw(t, h, args...)
		outputs = append(outputs, out, errOut)
	}
	if !strings.Contains(outputs[2], `"***"`) {
		t.Errorf("config get providers.remote.api_key = %q, want \"***\"", outputs[2])
	}
	c := dial(t, d.socket)
	c.initialize()
	raw := c.call(`{"jsonrpc":"2.0","method":"config/get","id":2}`)
	outputs = append(outputs, fmt.Sprint(raw))
	for _, o := range append(outputs, d.stderr.String()) {
		if strings.Contains(o, secret) || strings.Contains(o, next) {
			t.Errorf("a secret leaked: %s", o)
		}
	}
	if cfg, _ := config.Load(filepath.Join(h, ".zeroclaw")); cfg.Providers["remote"].APIKey != next {
		t.Error("the new key did not reach config.toml")
	}
}

// --- Several uids. The daemon runs as nobody; the test, as root, connects as
// another user. The operator's connections come through a relay the test binary
// runs as nobody (below), so the daemon sees nobody's uid on them.

const (
	relayListenEnv = "ZEROCLAW_TEST_RELAY_LISTEN"
	relayTargetEnv = "ZEROCLAW_TEST_RELAY_TARGET"
)

// init turns the test binary into the relay when asked: it accepts connections on
// one socket and joins each to a connection on the other, so connections arrive
// with the relay's uid.
func init() {
	listen, target := os.Getenv(relayListenEnv), os.Getenv(relayTargetEnv)
	if listen == "" {
		return
	}
	ln, err := net.Listen("unix", listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(2)
	}
	for {
		in, err := ln.Accept()
		if err != nil {
			os.Exit(0)
		}
		go func() {
			defer in.Close()
			out, err := net.Dial("unix", target)
			if err != nil {
				return
			}
			defer out.Close()
			go io.Copy(out, in)
			io.Copy(in, out)
		}()
	}
}

// asNobody prepares a daemon home owned by nobody and returns its credential.
func asNobody(t *testing.T) (dir string, cred *syscall.Credential) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: the daemon runs as nobody and the test connects as root")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	h := home(t)
	if err := os.Chown(h, uid, gid); err != nil {
		t.Fatal(err)
	}
	// nobody must be able to run the binary and the relay.
	if err := os.Chmod(filepath.Dir(binary), 0o755); err != nil {
		t.Fatal(err)
	}
	return h, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

func launchAs(t *testing.T, h string, cred *syscall.Credential) *daemon {
	t.Helper()
	cmd := command(h, "daemon")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	d := &daemon{t: t, cmd: cmd, home: h, stderr: &syncBuffer{}, exited: make(chan struct{})}
	d.socket = filepath.Join(h, ".zeroclaw", "data", "daemon.sock")
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.err = cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.exited
		if t.Failed() {
			t.Logf("daemon stderr:\n%s", d.stderr.String())
		}
	})
	d.waitReady()
	return d
}

// relayAs starts the relay as cred in front of the daemon's socket and returns the
// socket to dial for connections as that user.
func relayAs(t *testing.T, d *daemon, cred *syscall.Credential) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	relay := filepath.Join(filepath.Dir(binary), "relay.test")
	if _, err := os.Stat(relay); err != nil {
		data, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(relay, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(d.home, "op.sock")
	cmd := exec.Command(relay)
	cmd.Env = append(os.Environ(), relayListenEnv+"="+sock, relayTargetEnv+"="+d.socket)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	wait.For(t, "the relay answering", 30*time.Second, func() bool {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return sock
}

// rpc sends one request and returns its result, or its error object.
func (c *rpcConn) rpc(method, params string) (result, rpcErr map[string]any) {
	c.t.Helper()
	if params == "" {
		params = "{}"
	}
	v := jsontext.Value(params)
	if err := v.Compact(); err != nil { // one line on the wire
		c.t.Fatalf("params %s: %v", params, err)
	}
	params = string(v)
	c.send(`{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `,"id":"x"}`)
	for {
		m := c.recv()
		if m["method"] != nil {
			continue // a notification
		}
		r, _ := m["result"].(map[string]any)
		e, _ := m["error"].(map[string]any)
		return r, e
	}
}

func (c *rpcConn) must(method, params string) map[string]any {
	c.t.Helper()
	r, e := c.rpc(method, params)
	if e != nil {
		c.t.Fatalf("%s %s: %v", method, params, e)
	}
	return r
}

func wantError(t *testing.T, e map[string]any, code int, dataKey, dataValue string) {
	t.Helper()
	data, _ := e["data"].(map[string]any)
	if e == nil || e["code"] != float64(code) || (dataKey != "" && data[dataKey] != dataValue) {
		t.Fatalf("error %v: want code %d with data.%s = %s", e, code, dataKey, dataValue)
	}
}

func TestAuthorizationAcrossUIDs(t *testing.T) {
	h, nobody := asNobody(t)
	d := launchAs(t, h, nobody)
	opSock := relayAs(t, d, nobody)
	op := dial(t, opSock)
	if p := op.initialize()["principal"].(map[string]any); p["id"] != "operator" || p["admin"] != true {
		t.Fatalf("nobody's principal = %v", p)
	}

	t.Run("no roster entry", func(t *testing.T) {
		c := dial(t, d.socket)
		_, e := c.rpc("initialize", `{"protocolVersion":1}`)
		wantError(t, e, -32010, "", "")
	})

	// Root becomes user:x, whose profile lacks config:update.
	op.must("config/set-many", `{"sets":[
		{"prop":"permission_profiles.p.grants","value":["config:read","sessions:execute","system:read"]},
		{"prop":"permission_profiles.p.agents","value":["default"]},
		{"prop":"users.x.uid","value":0},
		{"prop":"users.x.permission_profiles","value":["p"]}]}`)
	root := dial(t, d.socket)
	if p := root.initialize()["principal"].(map[string]any); p["id"] != "user:x" || p["admin"] != false {
		t.Fatalf("root's principal = %v", p)
	}

	t.Run("profile without config:update", func(t *testing.T) {
		_, e := root.rpc("config/set", `{"prop":"agents.default.model","value":"m"}`)
		wantError(t, e, -32012, "grant", "config:update")
		if r := root.must("config/get", `{"prop":"users.x.uid"}`); r["value"] != float64(0) {
			t.Errorf("config/get = %v", r)
		}
	})

	t.Run("restricted config_write_paths", func(t *testing.T) {
		op.must("config/set-many", `{"sets":[
			{"prop":"permission_profiles.p.grants","value":["config:read","config:update","sessions:execute","system:read"]},
			{"prop":"permission_profiles.p.config_write_paths","value":["agents.default.model"]}]}`)
		root.must("config/set", `{"prop":"agents.default.model","value":"mine"}`)
		_, e := root.rpc("config/set-many", `{"sets":[{"prop":"agents.default.model","value":"again"},{"prop":"rpc.max_local_connections","value":9}]}`)
		wantError(t, e, -32012, "prop", "rpc.max_local_connections")
		if e["data"].(map[string]any)["index"] != float64(1) {
			t.Errorf("error %v: want data.index 1", e)
		}
		if r := op.must("config/get", `{"prop":"agents.default.model"}`); r["value"] != "mine" {
			t.Errorf("model = %v", r["value"])
		}
		path := filepath.Join(h, ".zeroclaw", "config.toml")
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o600 || st.Uid != nobody.Uid {
			t.Errorf("config.toml: mode %v, owner %d; want 0600 and the daemon's user", fi.Mode().Perm(), st.Uid)
		}
	})

	t.Run("session isolation", func(t *testing.T) {
		opSID := op.must("session/new", `{"agentAlias":"default","sessionId":"op-1"}`)["sessionId"].(string)
		mine := root.must("session/new", `{"agentAlias":"default"}`)["sessionId"].(string)
		_, e := root.rpc("session/prompt", `{"sessionId":"`+opSID+`","prompt":"hi"}`)
		wantError(t, e, -32000, "", "")
		_, e = root.rpc("session/new", `{"agentAlias":"default","sessionId":"`+opSID+`"}`)
		wantError(t, e, -32602, "reason", "session_id_taken")
		sessions := root.must("status", "")["sessions"].([]any)
		if len(sessions) != 1 || sessions[0].(map[string]any)["sessionId"] != mine {
			t.Errorf("root sees %v", sessions)
		}
		if n := len(op.must("status", "")["sessions"].([]any)); n != 2 {
			t.Errorf("the operator sees %d sessions, want both", n)
		}
	})

	t.Run("grant revoked by a concurrent write", func(t *testing.T) {
		root.must("status", "")
		op.must("config/set", `{"prop":"permission_profiles.p.grants","value":["config:read"]}`)
		_, e := root.rpc("status", "")
		wantError(t, e, -32012, "grant", "system:read")
		_, e = root.rpc("session/new", `{"agentAlias":"default"}`)
		wantError(t, e, -32012, "grant", "sessions:execute")
	})
}
