//go:build unix

package web_test

import (
	"bufio"
	"context"
	"encoding/json/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/web"
)

const aliceRoster = `
[permission_profiles.runner]
grants = ["sessions:execute", "sessions:read", "system:read", "files:create"]
agents = ["*"]

[users.alice]
uid = 4242
permission_profiles = ["runner"]
`

// daemonCall sends one request on a fresh local connection (after initialize) and
// returns its result.
func daemonCall(t testing.TB, sock, method, params string) map[string]any {
	t.Helper()
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(nc)
	var res map[string]any
	for i, line := range []string{
		`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}`,
		`{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `,"id":2}`,
	} {
		nc.Write([]byte(line + "\n"))
		b, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		if m["error"] != nil {
			t.Fatalf("%s: %v", method, m["error"])
		}
		if i == 1 {
			res, _ = m["result"].(map[string]any)
		}
	}
	return res
}

// docs/protocol.md, "The web client": off loopback the login is a pairing token,
// which the bridge passes as initialize's authToken, so the tab has that user's
// principal and not the bridge's own (here the operator's); over TLS the cookie is
// Secure and the origin must be https.
func TestOffLoopbackATabHasThePairingTokensPrincipal(t *testing.T) {
	s := &stack{t: t}
	s.home = t.TempDir()
	s.sock = s.home + "/.zeroclaw/data/daemon.sock"
	writeConfig(t, s.home, aliceRoster)
	s.startDaemon()
	alice := daemonCall(t, s.sock, "pairing/create", `{"user":"alice"}`)["token"].(string)
	operator := daemonCall(t, s.sock, "pairing/create", `{}`)["token"].(string)

	srv := web.NewServer(web.Options{
		Dial:   func(ctx context.Context) (net.Conn, error) { return (&net.Dialer{}).DialContext(ctx, "unix", s.sock) },
		Remote: true, TLS: true,
	})
	ts := httptest.NewTLSServer(srv)
	t.Cleanup(ts.Close)
	c := ts.Client()
	post := func(token, origin string) *http.Response {
		req, _ := http.NewRequest("POST", ts.URL+"/login", strings.NewReader(`{"token":"`+token+`"}`))
		req.Header.Set("Origin", origin)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := post(srv.Token(), ts.URL); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the loopback token off loopback: %s", res.Status)
	}
	if res := post("zc_not_paired", ts.URL); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("an unpaired token: %s", res.Status)
	}
	if res := post(alice, strings.Replace(ts.URL, "https:", "http:", 1)); res.StatusCode != http.StatusForbidden {
		t.Errorf("login from the http origin: %s", res.Status)
	}
	res := post(alice, ts.URL)
	ck := res.Header.Get("Set-Cookie")
	if res.StatusCode != http.StatusNoContent || !strings.Contains(ck, "Secure") || !strings.Contains(ck, "HttpOnly") {
		t.Fatalf("alice's login: %s %q", res.Status, ck)
	}
	cookie := res.Cookies()[0]

	dial := func(origin string) (*websocket.Conn, *http.Response, error) {
		h := http.Header{"Origin": {origin}}
		h.Add("Cookie", cookie.Name+"="+cookie.Value)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return websocket.Dial(ctx, "wss"+strings.TrimPrefix(ts.URL, "https")+"/rpc", &websocket.DialOptions{HTTPClient: c, HTTPHeader: h})
	}
	if _, res, err := dial(strings.Replace(ts.URL, "https:", "http:", 1)); err == nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("an upgrade from the http origin: %v", err)
	}
	ws, _, err := dial(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	tb := &tab{t: t, ws: ws}
	// The tab's own authToken (the operator's) is replaced by its login's.
	r := tb.call("initialize", `{"protocolVersion":1,"authToken":"`+operator+`"}`)
	if p := r["principal"].(frame); p["id"] != "user:alice" || p["admin"] != false {
		t.Fatalf("the tab's principal: %v", p)
	}
	tb.request("pairing/list", "{}")
	if m, err := tb.recv(30 * time.Second); err != nil || m["error"].(frame)["code"] != float64(-32012) {
		t.Fatalf("pairing/list as alice: %v %v", m, err)
	}
	// Being local, the bridge's connection may upload (WSS peers may not).
	sid := tb.call("session/new", `{"agentAlias":"default"}`)["sessionId"].(string)
	tb.call("file/upload/begin", `{"session_id":"`+sid+`","size_bytes":3,"filename":"a.txt"}`)
}
