package wss_test

import (
	"context"
	"crypto/tls"
	"encoding/json/v2"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/rpc"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	. "github.com/zeroclaw-labs/zeroclaw-go/internal/wss"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// daemon is the daemon's wiring in process: an rpc.Server behind a WSS listener on
// a free port, with a user "alice" in the roster.
type daemon struct {
	url         string
	fingerprint string
	pairings    *auth.Pairings
	srv         *rpc.Server
	dataDir     string
}

type daemonOptions struct {
	pingAfter, pongWait time.Duration
	origins             []string
	dataDir             string // "" means a fresh temporary one
}

func startDaemon(t testing.TB, o daemonOptions) *daemon {
	t.Helper()
	dir := o.dataDir
	if dir == "" {
		dir = t.TempDir()
	}
	conf := config.Default()
	conf.PermissionProfiles = map[string]config.PermissionProfile{
		"chat": {Grants: []string{"sessions:execute", "sessions:read", "system:read", "files:create"}, Agents: []string{"*"}},
	}
	uid := 1 << 20 // a uid nobody connects with: alice connects over WSS only
	conf.Users = map[string]config.User{"alice": {UID: &uid, PermissionProfiles: []string{"chat"}}}
	if err := conf.Validate(); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	catalog, err := session.BuildCatalog(conf, dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pairings, err := auth.OpenPairings(filepath.Join(dir, auth.PairingsFile))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := LoadCertificate(dir, "", "")
	if err != nil {
		t.Fatal(err)
	}
	sessions := session.NewManager(catalog, session.Options{Logger: log, Store: st})
	srv := rpc.NewServer(rpc.Config{
		DataDir: dir, Endpoint: "test", DaemonUID: os.Getuid(), Sessions: sessions, Logger: log,
		Config:   config.NewLive(conf, config.LiveOptions{Logger: log}),
		Pairings: pairings, Fingerprint: cert.Fingerprint,
	})
	ln, err := Listen(WithKeepalive(Config{
		Addr:        "127.0.0.1:0",
		Certificate: cert,
		Serve: func(f jsonrpc.Framer, remote string) {
			srv.Serve(f, rpc.Peer{Label: "wss:" + remote, UID: -1, PID: -1, Remote: true})
		},
		AllowedOrigins: func() []string { return o.origins },
		Logger:         log,
	}, o.pingAfter, o.pongWait))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The daemon's order: stop accepting, end the turns, end the connections.
		ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sessions.Shutdown(ctx)
		srv.Shutdown(ctx)
		if err := ln.Wait(ctx); err != nil {
			t.Errorf("WSS connections still open: %v", err)
		}
		st.Close()
	})
	return &daemon{url: "wss://" + ln.Addr().String(), fingerprint: ln.Fingerprint(), pairings: pairings, srv: srv, dataDir: dir}
}

func (d *daemon) token(t testing.TB, user string) string {
	t.Helper()
	tok, err := d.pairings.Create(user)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (d *daemon) dial(t testing.TB, opts ...client.Option) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, d.url, append([]client.Option{client.WithFingerprint(d.fingerprint)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wantCode(t *testing.T, err error, code int64) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("err = %v, want code %d", err, code)
	}
	return e
}

func TestInitializeOverWSSNeedsAPairingToken(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	ctx := testCtx(t)

	_, err := d.dial(t).Initialize(ctx)
	wantCode(t, err, protocol.CodeUnauthenticated)
	_, err = d.dial(t, client.WithToken("zc_not-a-paired-token")).Initialize(ctx)
	wantCode(t, err, protocol.CodeUnauthenticated)
	noToken := d.dial(t)
	err = noToken.Call(ctx, "status", nil, nil)
	wantCode(t, err, protocol.CodeUnauthenticated)

	op, err := d.dial(t, client.WithToken(d.token(t, ""))).Initialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if op.Principal.ID != "operator" || !op.Principal.Admin {
		t.Fatalf("operator token: principal = %+v", op.Principal)
	}
	alice := d.dial(t, client.WithToken(d.token(t, "alice")))
	r, err := alice.Initialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Principal.ID != "user:alice" || r.Principal.Admin {
		t.Fatalf("alice's token: principal = %+v", r.Principal)
	}
	// alice's grants apply: status yes, config no, pairing (admin) no.
	if _, err := alice.Status(ctx); err != nil {
		t.Fatal(err)
	}
	wantCode(t, alice.Call(ctx, "config/get", map[string]any{"prop": "wss.port"}, nil), protocol.CodeForbidden)
	wantCode(t, alice.Call(ctx, "pairing/list", nil, nil), protocol.CodeForbidden)
}

func TestPinnedFingerprintMismatchFailsTheDial(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	ctx := testCtx(t)
	_, err := client.Dial(ctx, d.url, client.WithFingerprint(strings.Repeat("ab", 32)))
	if err == nil || !strings.Contains(err.Error(), "fingerprint") {
		t.Fatalf("dial with a wrong pin: err = %v", err)
	}
	// Without a pin, the self-signed certificate fails the system roots.
	if _, err := client.Dial(ctx, d.url); err == nil {
		t.Fatal("dial without a pin verified a self-signed certificate")
	}
}

func TestEchoTurnStreamsUpdatesOverWSS(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	ctx := testCtx(t)
	c := d.dial(t, client.WithToken(d.token(t, "alice")))
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := c.NewSession(ctx, client.NewSessionParams{AgentAlias: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var text strings.Builder
	var types []string
	r, err := c.Prompt(ctx, s.SessionID, "hello over wss", nil, func(u client.Update) {
		mu.Lock()
		defer mu.Unlock()
		types = append(types, u.Type)
		if u.Type == "agent_message_chunk" {
			text.WriteString(u.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if r.StopReason != "end_turn" || !strings.Contains(text.String(), "echo: hello over wss") {
		t.Fatalf("result %+v, streamed %q (%v)", r, text.String(), types)
	}
}

func TestChunkedUploadsAreLocalOnly(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	ctx := testCtx(t)
	c := d.dial(t, client.WithToken(d.token(t, "")))
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := c.NewSession(ctx, client.NewSessionParams{AgentAlias: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"file/upload/begin", "file/upload/chunk", "file/upload/commit"} {
		err := c.Call(ctx, m, map[string]any{"session_id": s.SessionID, "name": "a.txt", "size_bytes": 3, "upload_id": "x"}, nil)
		if e := wantCode(t, err, protocol.CodeForbidden); e.Reason() != "local_only" {
			t.Fatalf("%s: reason = %q, data %s", m, e.Reason(), e.Data)
		}
	}
}

func TestRevokingATokenClosesItsConnections(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	ctx := testCtx(t)
	c := d.dial(t, client.WithToken(d.token(t, "alice")))
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	// The operator sees the connection in pairing/list.
	op := d.dial(t, client.WithToken(d.token(t, "")))
	if _, err := op.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Pairings []struct {
			User        *string `json:"user"`
			Connections int     `json:"connections"`
		} `json:"pairings"`
	}
	if err := op.Call(ctx, "pairing/list", nil, &list); err != nil {
		t.Fatal(err)
	}
	conns := map[string]int{}
	for _, p := range list.Pairings {
		name := ""
		if p.User != nil {
			name = *p.User
		}
		conns[name] += p.Connections
	}
	if conns["alice"] != 1 || conns[""] != 1 {
		t.Fatalf("pairing/list connections %v, want alice 1 and the operator's token 1", conns)
	}
	if ok, err := d.pairings.Revoke("alice"); !ok || err != nil {
		t.Fatalf("revoke = %v, %v", ok, err)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the revoked token's connection is still open")
	}
}

func TestSilentPeerIsPingedAndClosedWithoutAPong(t *testing.T) {
	d := startDaemon(t, daemonOptions{pingAfter: 100 * time.Millisecond, pongWait: 150 * time.Millisecond})
	ctx := testCtx(t)

	// A client that reads answers pings: idle for several ping intervals, it stays.
	live := d.dial(t, client.WithToken(d.token(t, "")))
	if _, err := live.Initialize(ctx); err != nil {
		t.Fatal(err)
	}

	// A peer that never reads never answers a ping.
	mute := rawDial(t, d, nil)
	deadline := time.Now().Add(5 * time.Second)
	for d.srv.Connections() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the silent peer is still connected (%d connections)", d.srv.Connections())
		}
		time.Sleep(20 * time.Millisecond)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, _, err := mute.Read(rctx); err == nil {
		t.Fatal("the silent peer's connection still delivers messages")
	}
	if _, err := live.Status(ctx); err != nil {
		t.Fatalf("the reading client was closed too: %v", err)
	}
}

// rawDial opens a WebSocket with the library directly, for what our client never does.
func rawDial(t *testing.T, d *daemon, header http.Header) *websocket.Conn {
	t.Helper()
	ws, resp, err := dialRaw(d, header)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	t.Cleanup(func() { ws.CloseNow() })
	return ws
}

func dialRaw(d *daemon, header http.Header) (*websocket.Conn, *http.Response, error) {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return websocket.Dial(ctx, d.url, &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}, HTTPHeader: header})
}

func TestBrowserOriginIsRefusedUnlessAllowed(t *testing.T) {
	d := startDaemon(t, daemonOptions{origins: []string{"https://app.example.com"}})
	_, resp, err := dialRaw(d, http.Header{"Origin": {"https://evil.example.com"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign origin: err = %v, resp = %v", err, resp)
	}
	// Even the daemon's own host is a browser origin to refuse.
	_, resp, err = dialRaw(d, http.Header{"Origin": {"https://" + strings.TrimPrefix(d.url, "wss://")}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("same-host origin: err = %v, resp = %v", err, resp)
	}
	rawDial(t, d, http.Header{"Origin": {"https://app.example.com"}})
	rawDial(t, d, nil) // no Origin: not a browser
}

// call sends one request as a text message and returns the next message.
func rawCall(t *testing.T, ws *websocket.Conn, typ websocket.MessageType, msg string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ws.Write(ctx, typ, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	_, b, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func errorOf(m map[string]any) (code float64, data map[string]any) {
	e, _ := m["error"].(map[string]any)
	code, _ = e["code"].(float64)
	data, _ = e["data"].(map[string]any)
	return code, data
}

func TestBinaryMessageGetsInvalidRequestAndTheConnectionStays(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	ws := rawDial(t, d, nil)
	m := rawCall(t, ws, websocket.MessageBinary, `{"jsonrpc":"2.0","method":"status","id":1}`)
	if code, data := errorOf(m); code != -32600 || data["reason"] != "binary_message" {
		t.Fatalf("binary message: %v", m)
	}
	init := `{"jsonrpc":"2.0","method":"initialize","params":{"authToken":"` + d.token(t, "") + `"},"id":2}`
	if m := rawCall(t, ws, websocket.MessageText, init); m["result"] == nil {
		t.Fatalf("initialize after a binary message: %v", m)
	}
}

func TestOversizeMessageIsRefusedThenClosed(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	ws := rawDial(t, d, nil)
	ws.SetReadLimit(1 << 20)
	big := `{"jsonrpc":"2.0","method":"status","id":1,"pad":"` + strings.Repeat("x", jsonrpc.MaxFrameBytes) + `"}`
	m := rawCall(t, ws, websocket.MessageText, big)
	code, data := errorOf(m)
	if code != -32600 || data["reason"] != "frame_too_large" || data["limit_bytes"] != float64(jsonrpc.MaxFrameBytes) {
		t.Fatalf("oversize message: %v", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := ws.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("after frame_too_large: err = %v, want close status 1009", err)
	}
}

func TestCertificateIsCreatedOnceAndReused(t *testing.T) {
	dir := t.TempDir()
	first := startDaemon(t, daemonOptions{dataDir: dir})
	for name, mode := range map[string]os.FileMode{CertFile: 0o644, KeyFile: 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), mode)
		}
	}
	again := startDaemon(t, daemonOptions{dataDir: dir})
	if first.fingerprint != again.fingerprint || len(first.fingerprint) != 64 {
		t.Fatalf("fingerprints %q then %q", first.fingerprint, again.fingerprint)
	}
	// The pin handed out by pairing/create is the served certificate's.
	ctx := testCtx(t)
	c := again.dial(t, client.WithToken(again.token(t, "")))
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Fingerprint string `json:"fingerprint"`
	}
	if err := c.Call(ctx, "pairing/create", nil, &r); err != nil {
		t.Fatal(err)
	}
	if r.Fingerprint != again.fingerprint {
		t.Fatalf("pairing/create fingerprint = %q, served %q", r.Fingerprint, again.fingerprint)
	}
}
