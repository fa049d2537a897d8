package rpc

import (
	"bytes"
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/memory"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// confServer is a real Server over a config dir on disk, wired as the daemon wires
// it (config writes rebuild the session catalog), on real Unix sockets. Each uid
// gets its own socket whose connections come in as that uid, so one test can be
// the operator and a roster user at once; the daemon's own uid gets the real peer
// credentials.
type confServer struct {
	t        *testing.T
	srv      *Server
	live     *config.Live
	pairings *auth.Pairings
	dir      string // config dir; the data dir is dir/data
	logs     *lockedBuffer

	mu        sync.Mutex
	lns       map[int]*harness
	listeners []net.Listener
	wg        sync.WaitGroup
}

// lockedBuffer collects the server's log, written by its goroutines, and lets a
// test wait for a line (await).
type lockedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed by the next write; nil until someone awaits
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	return l.b.Write(p)
}

// await waits, woken by each write, until the log contains s; it fails the test
// after 10 s.
func (l *lockedBuffer) await(t *testing.T, s string) {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		l.mu.Lock()
		if strings.Contains(l.b.String(), s) {
			l.mu.Unlock()
			return
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("no %q in the log within 10 s:\n%s", s, l.String())
		}
	}
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newConfServer starts a server whose config.toml holds body ("" for none).
func newConfServer(t *testing.T, body string) *confServer {
	t.Helper()
	dir, err := os.MkdirTemp("", "zccf")
	if err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	os.Mkdir(dataDir, 0o700)
	if body != "" {
		if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	getenv := func(string) string { return "" }
	catalog, err := session.BuildCatalog(cfg, dataDir, getenv)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := store.Open(filepath.Join(dataDir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var live *config.Live
	memories := memory.New(memory.Options{Store: st, Logger: log, Config: func() config.Config { return live.Current() }})
	if err := memories.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	sessions := session.NewManager(catalog, session.Options{Logger: log, Store: st, Memory: memories})
	live = config.NewLive(cfg, config.LiveOptions{Dir: dir, Logger: log, Views: func(c config.Config) (func(), error) {
		next, err := session.BuildCatalog(c, dataDir, getenv)
		if err != nil {
			return nil, err
		}
		return func() { sessions.SetCatalog(next) }, nil
	}})
	pairings, err := auth.OpenPairings(filepath.Join(dataDir, auth.PairingsFile))
	if err != nil {
		t.Fatal(err)
	}
	s := &confServer{t: t, live: live, pairings: pairings, dir: dir, logs: logs, lns: make(map[int]*harness)}
	s.srv = NewServer(Config{
		DataDir: dataDir, Endpoint: filepath.Join(dir, "op.sock"), DaemonUID: os.Getuid(),
		Sessions: sessions, Store: st, Logger: log, Config: live, Pairings: pairings, Memory: memories,
	})
	t.Cleanup(func() {
		s.mu.Lock()
		for _, ln := range s.listeners {
			ln.Close()
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sessions.Shutdown(ctx)
		s.srv.Shutdown(ctx)
		s.wg.Wait()
		os.RemoveAll(dir)
	})
	return s
}

// as returns a harness whose connections come in as uid.
func (s *confServer) as(uid int) *harness {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.lns[uid]; ok {
		return h
	}
	addr := filepath.Join(s.dir, fmt.Sprintf("%d.sock", uid))
	ln, err := net.Listen("unix", addr)
	if err != nil {
		s.t.Fatal(err)
	}
	h := &harness{srv: s.srv, addr: addr}
	s.lns[uid] = h
	s.listeners = append(s.listeners, ln)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			peer := Peer{Label: fmt.Sprintf("test:uid=%d", uid), UID: uid, PID: -1}
			if uid == os.Getuid() {
				p := endpoint.PeerOf(nc)
				peer = Peer{Label: p.Label, UID: p.UID, PID: p.PID}
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.srv.ServeStream(nc, peer)
			}()
		}
	}()
	return h
}

// operator is a connection as the daemon's own user.
func (s *confServer) operator(t *testing.T) *peer { return s.as(os.Getuid()).peer(t, "") }

func (s *confServer) file() string {
	b, err := os.ReadFile(filepath.Join(s.dir, config.FileName))
	if err != nil && !os.IsNotExist(err) {
		s.t.Fatal(err)
	}
	return string(b)
}

// whole is config/get without a prop, as raw JSON.
func whole(t *testing.T, p *peer) string {
	t.Helper()
	res := p.must("config/get", `{}`)
	delete(res, "_n")
	b, _ := json.Marshal(res, json.Deterministic(true))
	return string(b)
}

func sets(kv ...string) string {
	var b strings.Builder
	b.WriteString(`{"sets":[`)
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"prop":%q,"value":%s}`, kv[i], kv[i+1])
	}
	b.WriteString(`]}`)
	return b.String()
}

func wantCode(t *testing.T, err error, code int64) *rpcError {
	t.Helper()
	e, ok := err.(*rpcError)
	if !ok || e.Code != code {
		t.Fatalf("err = %v, want code %d", err, code)
	}
	return e
}

// The seed's example, byte for byte.
func TestSeedSetManyCreatesAUserInOneRequest(t *testing.T) {
	s := newConfServer(t, "")
	s.operator(t).must("config/set", `{"prop":"permission_profiles.operator.grants","value":["config:read","sessions:execute"]}`)

	c := s.as(os.Getuid()).client(t)
	c.initialize()
	c.send(`{"jsonrpc":"2.0","method":"config/set-many","params":{"sets":[{"prop":"users.example.uid","value":1001},{"prop":"users.example.permission_profiles","value":["operator"]}]},"id":2}`)
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"jsonrpc":"2.0","result":{"props":["users.example.uid","users.example.permission_profiles"],"set":true},"id":2}` + "\n"
	if string(line) != want {
		t.Fatalf("got  %s\nwant %s", line, want)
	}
	got := s.operator(t).must("config/get", `{"prop":"users.example"}`)
	if v, _ := json.Marshal(got["value"], json.Deterministic(true)); string(v) != `{"permission_profiles":["operator"],"uid":1001}` {
		t.Errorf("users.example = %s", v)
	}
	loaded, err := config.Load(s.dir)
	if err != nil || *loaded.Users["example"].UID != 1001 || !reflect.DeepEqual(loaded, s.live.Current()) {
		t.Fatalf("config.toml does not load to the live config: %v", err)
	}
	// The new user is who uid 1001 now is.
	u := s.as(1001).peer(t, "")
	if _, err := u.call("status", ""); wantCode(t, err, -32012).Data["grant"] != "system:read" {
		t.Errorf("status as user:example: %v", err)
	}
}

func TestConfigGetAndSetOverTheWire(t *testing.T) {
	s := newConfServer(t, "")
	p := s.operator(t)
	if res := p.must("config/get", `{"prop":"rpc.max_local_connections"}`); res["prop"] != "rpc.max_local_connections" || res["value"] != float64(512) {
		t.Errorf("get = %v", res)
	}
	if res := p.must("config/get", `{"prop":"agents.default.model"}`); res["value"] != nil {
		t.Errorf("an unset property = %v, want null", res)
	}
	if !strings.Contains(whole(t, p), `"security":{"trust_daemon_uid":true}`) {
		t.Errorf("whole config = %s", whole(t, p))
	}
	for _, tt := range []struct{ params, want string }{
		{`{"prop":"rpc.max_local_connections","value":"64"}`, `64`},
		{`{"prop":"wss.enabled","value":"true"}`, `true`},
		{`{"prop":"agents.default.tools","value":["shell","read_file"]}`, `["shell","read_file"]`},
	} {
		res := p.must("config/set", tt.params)
		var in map[string]any
		json.Unmarshal([]byte(tt.params), &in)
		if res["prop"] != in["prop"] || res["set"] != true || len(res) != 3 { // prop, set and the harness's _n
			t.Errorf("set %s = %v", tt.params, res)
		}
		got := p.must("config/get", fmt.Sprintf(`{"prop":%q}`, in["prop"]))
		if v, _ := json.Marshal(got["value"]); string(v) != tt.want {
			t.Errorf("after set %s: %s", tt.params, v)
		}
	}
	for _, tt := range []struct{ method, params, reason, param string }{
		{"config/get", `{"prop":"agents.default.nope"}`, "unknown_property", ""},
		{"config/set", `{"prop":"nope.nope","value":1}`, "unknown_property", ""},
		{"config/set", `{"prop":"agents.default","value":{}}`, "not_settable", ""},
		{"config/set", `{"prop":"wss.port","value":"many"}`, "invalid_value", ""},
		{"config/set", `{"prop":"wss.port","value":0}`, "invalid_config", ""},
		{"config/set", `{"prop":"wss.port"}`, "", "value"},
		{"config/set", `{"value":1}`, "", "prop"},
		{"config/set-many", `{"sets":[]}`, "count", "sets"},
		{"config/set-many", `{}`, "count", "sets"},
		{"config/set-many", `{"sets":[{"prop":"wss.port"}]}`, "", "sets"},
	} {
		_, err := p.call(tt.method, tt.params)
		e := wantCode(t, err, -32602)
		if tt.reason != "" && e.Data["reason"] != tt.reason || tt.param != "" && e.Data["param"] != tt.param {
			t.Errorf("%s %s: %v", tt.method, tt.params, e)
		}
		if tt.reason == "unknown_property" && !strings.Contains(e.Message, "nope") {
			t.Errorf("%s: the message does not name the property: %s", tt.params, e.Message)
		}
		if tt.method == "config/set" && e.Data["index"] != nil {
			t.Errorf("config/set error with an index: %v", e)
		}
	}
	var many strings.Builder
	many.WriteString(`{"sets":[`)
	for i := range 257 {
		if i > 0 {
			many.WriteByte(',')
		}
		many.WriteString(`{"prop":"wss.port","value":1}`)
	}
	many.WriteString(`]}`)
	if _, err := p.call("config/set-many", many.String()); wantCode(t, err, -32602).Data["limit"] != float64(256) {
		t.Errorf("257 entries: %v", err)
	}
}

func TestLaterEntriesWinAndPropsComeBackInRequestOrder(t *testing.T) {
	s := newConfServer(t, "")
	p := s.operator(t)
	res := p.must("config/set-many", sets("agents.default.model", `"a"`, "wss.port", `9000`, "agents.default.model", `"b"`))
	if b, _ := json.Marshal(res["props"]); string(b) != `["agents.default.model","wss.port","agents.default.model"]` {
		t.Errorf("props = %s", b)
	}
	if v := p.must("config/get", `{"prop":"agents.default.model"}`)["value"]; v != "b" {
		t.Errorf("model = %v, want the later entry's", v)
	}
}

// restricted is a roster with user "limited" (uid 4242): config:read and
// config:update, but only for agents.default.model and users.*.
const restricted = `
[permission_profiles.limited]
grants = ["config:read", "config:update", "system:read", "sessions:execute"]
config_write_paths = ["agents.default.model", "users.*"]
agents = ["default"]

[users.limited]
uid = 4242
permission_profiles = ["limited"]
`

// Every failure leaves config.toml byte for byte as it was, config/get unchanged,
// and the agent views as they were.
func TestFailedSetManyChangesNothing(t *testing.T) {
	for _, tt := range []struct {
		name  string
		as    int // 0: the operator
		setup func(s *confServer)
		sets  string
		code  int64
		index any
	}{
		{name: "invalid value at index 2", sets: sets("agents.coder.provider", `"echo"`, "agents.default.model", `"x"`, "wss.port", `"lots"`),
			code: -32602, index: float64(2)},
		{name: "invalid candidate at index 2", sets: sets("agents.coder.provider", `"echo"`, "users.x.uid", `7`, "users.x.permission_profiles", `["ghost"]`),
			code: -32602, index: float64(2)},
		{name: "unknown property at index 2", sets: sets("agents.coder.provider", `"echo"`, "agents.default.model", `"x"`, "agents.default.colour", `"red"`),
			code: -32602, index: float64(2)},
		{name: "views refuse index 1", sets: sets("agents.coder.provider", `"echo"`, "agents.coder.tools", `["no_such_tool"]`),
			code: -32602, index: float64(1)},
		{name: "commit fails", sets: sets("agents.coder.provider", `"echo"`, "agents.default.model", `"x"`),
			setup: func(s *confServer) {
				// A directory where the temporary file must go fails the write even
				// for root (CI runs as root, so permissions cannot make it fail).
				os.Mkdir(filepath.Join(s.dir, config.FileName+".tmp"), 0o700)
			}, code: -32603, index: nil},
		{name: "forbidden path at index 2", as: 4242, sets: sets("agents.default.model", `"x"`, "users.limited.uid", `4242`, "agents.coder.provider", `"echo"`),
			code: -32012, index: float64(2)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newConfServer(t, restricted)
			op := s.operator(t)
			op.must("config/set", `{"prop":"agents.default.system_prompt","value":"before"}`) // config.toml now exists
			fileBefore, getBefore := s.file(), whole(t, op)
			if tt.setup != nil {
				tt.setup(s)
			}
			p := op
			if tt.as != 0 {
				p = s.as(tt.as).peer(t, "")
			}
			_, err := p.call("config/set-many", tt.sets)
			e := wantCode(t, err, tt.code)
			if e.Data["index"] != tt.index {
				t.Errorf("error %v: want data.index %v", e, tt.index)
			}
			if tt.code == -32012 && (e.Data["grant"] != "config:update" || e.Data["prop"] != "agents.coder.provider") {
				t.Errorf("forbidden error %v: want the grant and the path", e)
			}
			if s.file() != fileBefore {
				t.Errorf("config.toml changed:\n%s\n---\n%s", fileBefore, s.file())
			}
			if got := whole(t, op); got != getBefore {
				t.Errorf("config/get changed:\n%s\n---\n%s", getBefore, got)
			}
			if _, err := op.call("session/new", `{"agentAlias":"coder"}`); err == nil {
				t.Error("the refused candidate's agent views were installed")
			}
		})
	}
}

func TestViewsFollowACommit(t *testing.T) {
	s := newConfServer(t, "")
	p := s.operator(t)
	_, err := p.call("session/new", `{"agentAlias":"coder"}`)
	wantCode(t, err, -32602)
	p.must("config/set-many", sets("agents.coder.provider", `"echo"`, "agents.coder.autonomy", `"full"`))
	sid := p.newSession(`{"agentAlias":"coder"}`)
	if res := p.must("session/prompt", prompt(sid, "hi")); res["text"] != "echo: hi" {
		t.Errorf("prompt = %v", res)
	}
}

// 50 concurrent set-many from several connections: each commit is one serial step.
// Every file a reader sees parses and is the state after some prefix of a serial
// order, and no batch is lost.
func TestConcurrentSetManyIsSerializable(t *testing.T) {
	s := newConfServer(t, "")
	const conns, per = 5, 10
	peers := make([]*peer, conns)
	for i := range peers {
		peers[i] = s.operator(t)
	}
	stop := make(chan struct{})
	var reads atomic.Int64
	readerDone := make(chan error, 1)
	go func() {
		seen := map[string]bool{}
		for {
			select {
			case <-stop:
				readerDone <- nil
				return
			default:
			}
			cfg, err := config.Load(s.dir)
			if err != nil {
				readerDone <- fmt.Errorf("a reader saw a config.toml that does not load: %w", err)
				return
			}
			reads.Add(1)
			model, prompt := cfg.Agents["default"].Model, cfg.Agents["default"].SystemPrompt
			if strings.TrimPrefix(model, "m") != strings.TrimPrefix(prompt, "p") {
				readerDone <- fmt.Errorf("half a batch on disk: model %q, prompt %q", model, prompt)
				return
			}
			if model != "" {
				if _, ok := cfg.Users["u"+strings.TrimPrefix(model, "m")]; !ok {
					readerDone <- fmt.Errorf("model %s without its user", model)
					return
				}
			}
			for u := range seen { // a later file never loses an earlier batch
				if _, ok := cfg.Users[u]; !ok {
					readerDone <- fmt.Errorf("user %s vanished", u)
					return
				}
			}
			for u := range cfg.Users {
				seen[u] = true
			}
		}
	}()
	var wg sync.WaitGroup
	for c, p := range peers {
		for j := range per {
			n := c*per + j
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := p.call("config/set-many", sets(
					fmt.Sprintf("users.u%d.uid", n), fmt.Sprint(10000+n),
					"agents.default.model", fmt.Sprintf(`"m%d"`, n),
					"agents.default.system_prompt", fmt.Sprintf(`"p%d"`, n),
				))
				if err != nil {
					t.Errorf("batch %d: %v", n, err)
				}
			}()
		}
	}
	wg.Wait()
	close(stop)
	if err := <-readerDone; err != nil {
		t.Fatal(err)
	}
	loaded, err := config.Load(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Users) != conns*per {
		t.Fatalf("%d users on disk, want %d: lost updates", len(loaded.Users), conns*per)
	}
	if !reflect.DeepEqual(loaded, s.live.Current()) {
		t.Fatal("the file and the live config differ")
	}
	if got := whole(t, peers[0]); got != string(canonical(t, loaded.MaskedJSON())) {
		t.Errorf("config/get = %s\nfile = %s", got, loaded.MaskedJSON())
	}
	t.Logf("the reader loaded config.toml %d times", reads.Load())
}

func canonical(t *testing.T, v jsontext.Value) []byte {
	var m map[string]any
	if err := json.Unmarshal(v, &m); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(m, json.Deterministic(true))
	return b
}

func TestSecretsNeverLeaveTheDaemon(t *testing.T) {
	const secret, next = "sk-live-0123456789", "sk-next-9876543210"
	s := newConfServer(t, "[providers.remote]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \""+secret+"\"\n")
	p := s.operator(t)
	var out []string
	out = append(out, whole(t, p))
	for _, prop := range []string{"providers", "providers.remote", "providers.remote.api_key"} {
		res := p.must("config/get", fmt.Sprintf(`{"prop":%q}`, prop))
		b, _ := json.Marshal(res)
		out = append(out, string(b))
	}
	if v := p.must("config/get", `{"prop":"providers.remote.api_key"}`)["value"]; v != "***" {
		t.Errorf("api_key = %v, want ***", v)
	}
	p.must("config/set", fmt.Sprintf(`{"prop":"providers.remote.api_key","value":%q}`, next))
	// A refused batch carrying a secret does not echo it either.
	_, err := p.call("config/set-many", sets("providers.remote.api_key", fmt.Sprintf("%q", secret+"x"), "providers.remote.kind", `"gpt"`))
	out = append(out, err.Error())
	_, err = p.call("config/set", fmt.Sprintf(`{"prop":"providers.remote.api_key","value":[%q]}`, secret))
	out = append(out, err.Error())
	out = append(out, whole(t, p))
	for _, o := range out {
		if strings.Contains(o, secret) || strings.Contains(o, next) {
			t.Errorf("secret in output: %s", o)
		}
	}
	if strings.Contains(s.logs.String(), "sk-") {
		t.Errorf("secret in the log:\n%s", s.logs.String())
	}
	if !strings.Contains(s.logs.String(), "providers.remote.api_key") {
		t.Errorf("the write was not logged by property name:\n%s", s.logs.String())
	}
	if loaded, _ := config.Load(s.dir); loaded.Providers["remote"].APIKey != next {
		t.Error("the new key did not reach config.toml")
	}
}
