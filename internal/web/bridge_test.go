//go:build unix

package web_test

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// docs/protocol.md, "The web client": without the cookie every request is 401, and
// nothing but the login page is served; a wrong token gets no cookie.
func TestWithoutALoginOnlyTheLoginPageIsServed(t *testing.T) {
	s := newStack(t, "")
	res, body := get(t, nil, s.base+"/")
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `id="login-form"`) || strings.Contains(body, "composer") {
		t.Fatalf("GET / without a login: %s\n%s", res.Status, body)
	}
	for _, path := range []string{"/app.js", "/rpc.js", "/index.html", "/app.css", "/auth", "/nothing-here", "/rpc"} {
		if res, body := get(t, nil, s.base+path); res.StatusCode != http.StatusUnauthorized || strings.Contains(body, "import") {
			t.Errorf("GET %s without a login: %s %q", path, res.Status, body)
		}
	}
	// The login page's own script and style are served, and hold no secret.
	if res, _ := get(t, nil, s.base+"/login.js"); res.StatusCode != http.StatusOK {
		t.Errorf("GET /login.js: %s", res.Status)
	}
	// An upgrade without the cookie is refused before it is one.
	if _, res, err := s.dialTab(nil, s.base); err == nil || res == nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("upgrade without a login: %v %v", res, err)
	}
	// A wrong token: 401 and no cookie.
	for _, body := range []string{`{"token":"wrong"}`, `{"token":""}`, `not json`} {
		req, _ := http.NewRequest("POST", s.base+"/login", strings.NewReader(body))
		req.Header.Set("Origin", s.base)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusNoContent || len(res.Cookies()) != 0 {
			t.Errorf("login with %s: %s, cookies %v", body, res.Status, res.Cookies())
		}
	}
	// A forged cookie is no login.
	req, _ := http.NewRequest("GET", s.base+"/app.js", nil)
	req.AddCookie(&http.Cookie{Name: "zeroclaw_web", Value: s.token})
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /app.js with a forged cookie: %v %v", res.Status, err)
	}

	// The right token: the cookie, HttpOnly and SameSite=Strict, then the app.
	req, _ = http.NewRequest("POST", s.base+"/login", strings.NewReader(`{"token":"`+s.token+`"}`))
	req.Header.Set("Origin", s.base)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cookie := res.Header.Get("Set-Cookie")
	if res.StatusCode != http.StatusNoContent || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
		t.Fatalf("login: %s, Set-Cookie %q", res.Status, cookie)
	}
	c := s.httpClient()
	res, body = get(t, c, s.base+"/")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `id="composer"`) {
		t.Fatalf("GET / logged in: %s", res.Status)
	}
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "connect-src 'self'", "default-src 'none'"} {
		if !strings.Contains(csp, want) || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("Content-Security-Policy %q lacks %s", csp, want)
		}
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, " on") && strings.Contains(body, "onclick=") {
		t.Error("the app's page has inline script")
	}
	if res, _ := get(t, c, s.base+"/app.js"); res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Errorf("GET /app.js logged in: %s %s", res.Status, res.Header.Get("Content-Type"))
	}
}

// docs/protocol.md, "The web client": an upgrade or a login from another origin is
// refused (403), even with the cookie.
func TestAForeignOriginIsRefused(t *testing.T) {
	s := newStack(t, "")
	c := s.httpClient()
	for _, origin := range []string{"http://evil.example", "https://" + strings.TrimPrefix(s.base, "http://"), "null", ""} {
		_, res, err := s.dialTab(c, origin)
		if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
			t.Errorf("upgrade from origin %q: %v, %v", origin, res, err)
		}
		req, _ := http.NewRequest("POST", s.base+"/login", strings.NewReader(`{"token":"`+s.token+`"}`))
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden || len(res.Cookies()) != 0 {
			t.Errorf("login from origin %q: %s", origin, res.Status)
		}
	}
	// A name rebound to 127.0.0.1 is a foreign origin too, even when Origin and Host
	// agree.
	req, _ := http.NewRequest("GET", s.base+"/", nil)
	req.Host = "rebound.example:" + strings.Split(s.base, ":")[2]
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("a request for host %s: %v %v", req.Host, res.Status, err)
	}
	tb, _, err := s.dialTab(c, s.base)
	if err != nil {
		t.Fatalf("upgrade from the server's own origin: %v", err)
	}
	if r := tb.call("initialize", `{"protocolVersion":1}`); r["principal"].(frame)["id"] != "operator" {
		t.Errorf("initialize over the bridge: %v", r)
	}
}

// docs/protocol.md, "The web client": a message over the daemon's frame limit is
// refused as on the socket: one -32600 frame_too_large with the limit, then the close.
func TestAnOversizeFrameIsRefusedAsOnTheSocket(t *testing.T) {
	s := newStack(t, "")
	tb := s.openTab()
	big := `{"jsonrpc":"2.0","method":"status","params":{"pad":"` + strings.Repeat("x", 8<<20) + `"},"id":2}`
	tb.send(big)
	m, err := tb.recv(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := m["error"].(frame)
	data, _ := e["data"].(frame)
	if m["id"] != nil || e["code"] != float64(-32600) || data["reason"] != "frame_too_large" || data["limit_bytes"] != float64(8<<20) {
		t.Fatalf("oversize frame: %v", m)
	}
	_, err = tb.recv(30 * time.Second)
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("after frame_too_large: %v, want close 1009", err)
	}
	// The bridge goes on for other tabs.
	s.openTab().call("status", "{}")
}

// A message with line breaks reaches the daemon as one line; one that is not JSON
// answers -32700 as the daemon would, and the tab goes on.
func TestAMessageIsOneLine(t *testing.T) {
	s := newStack(t, "")
	tb := s.openTab()
	tb.send("{\"jsonrpc\":\"2.0\",\n\"method\":\"status\",\r\n\"params\":{},\"id\":7}")
	if m, err := tb.recv(30 * time.Second); err != nil || m["id"] != float64(7) || m["result"] == nil {
		t.Fatalf("a message with line breaks: %v %v", m, err)
	}
	tb.send("{\"jsonrpc\":\"2.0\",\n\"method\":\"status\",\"id\":8")
	if m, err := tb.recv(30 * time.Second); err != nil || m["error"].(frame)["code"] != float64(-32700) {
		t.Fatalf("broken JSON with a line break: %v %v", m, err)
	}
	tb.call("status", "{}")
}

// docs/protocol.md, "The web client": a tab that stops reading holds up only its own
// connection: another tab on the same session streams whole turns and gets answers
// meanwhile, and the stalled tab, once it reads again, has every update in order up
// to its lagged notice, from which session/attach catches up.
//
// The daemon lags a connection whose backlog passes rpc.replay_bytes (4 MiB here)
// once the bridge's outbox and the sockets' buffers are full. Turns of 200 KB
// prompts (400 KB of updates, so that the tab that reads is never that far behind
// even while the echo provider outruns it) go on until the daemon's log says it
// lagged one: a few seconds, well within the 20 s after which the bridge pings the
// silent tab and closes it.
func TestAStalledTabIsLaggedNotTheBridge(t *testing.T) {
	s := newStack(t, "[rpc]\nreplay_events = 200\nreplay_bytes = 4194304\n")
	stalled := s.openTab()
	sid := stalled.call("session/new", `{"agentAlias":"default"}`)["sessionId"].(string)
	stalledSince := time.Now()
	reader := s.openTab()
	reader.call("session/attach", `{"sessionId":"`+sid+`"}`)
	line := strings.Repeat("y", 2000)
	prompt := strings.TrimSuffix(strings.Repeat(line+`\n`, 100), `\n`)
	const lagLogged = "a connection's backlog passed rpc.replay_bytes"
	var last float64
	turn := 0
	for ; !strings.Contains(s.daemon.Stderr.String(), lagLogged); turn++ {
		if turn == 100 {
			t.Fatalf("a tab that read nothing of 100 turns of 400 KB of updates was not lagged (rpc.replay_bytes = 4 MiB); daemon log:\n%s", s.daemon.Stderr)
		}
		res := reader.callSeeing("session/prompt", `{"sessionId":"`+sid+`","prompt":"`+prompt+`"}`, func(m frame) {
			p, _ := m["params"].(frame)
			if p["type"] == "lagged" {
				t.Fatalf("the tab that reads was lagged: %v", p)
			}
			if p["seq"] != nil {
				last = p["seq"].(float64)
			}
		})
		if res["stopReason"] != "end_turn" {
			t.Fatalf("turn %d: %v", turn, res)
		}
		start := time.Now()
		reader.call("status", "{}")
		t.Logf("turn %d: status answered in %s while a tab is stalled", turn, time.Since(start))
	}
	t.Logf("the daemon lagged the stalled tab's connection after %d turns, %s after it stopped reading", turn, time.Since(stalledSince))
	// Now the stalled tab reads: updates in seq order with no gap, up to its lagged
	// notice.
	var seq float64
	for lagged := false; !lagged; {
		m, err := stalled.recv(60 * time.Second)
		if err != nil {
			t.Fatalf("the stalled tab after seq %v: %v", seq, err)
		}
		p, _ := m["params"].(frame)
		switch {
		case p["type"] == "lagged":
			lagged = true
			if seq != 0 && p["afterSeq"] != seq {
				t.Fatalf("lagged afterSeq %v, last seq read %v", p["afterSeq"], seq)
			}
			seq = p["afterSeq"].(float64)
		case p["seq"] != nil:
			if n := p["seq"].(float64); seq != 0 && n != seq+1 {
				t.Fatalf("the stalled tab read seq %v after %v", n, seq)
			} else {
				seq = n
			}
			if seq >= last {
				t.Fatalf("the stalled tab read every update (to seq %v) with no lagged notice, though the daemon logged one", seq)
			}
		}
	}
	t.Logf("the stalled tab: lagged at seq %v of %v", seq, last)
	// It catches up as any client: the replay, or replay_truncated when the log
	// (200 updates here) no longer holds what it missed.
	var got float64
	if _, err := attachAfter(stalled, sid, seq, &got); err != nil {
		if !strings.Contains(err.Error(), "no longer kept") {
			t.Fatalf("catching up: %v", err)
		}
		t.Logf("catching up: %v", err)
	} else if got != last {
		t.Fatalf("after catching up the stalled tab is at seq %v, want %v", got, last)
	}
	stalled.call("status", "{}")
}

// attachAfter is session/attach {afterSeq}, following the replayed seqs into got;
// a replay_truncated answer is returned as an error.
func attachAfter(tb *tab, sid string, after float64, got *float64) (frame, error) {
	id := tb.request("session/attach", `{"sessionId":"`+sid+`","afterSeq":`+formatSeq(after)+`}`)
	*got = after
	for {
		m, err := tb.recv(60 * time.Second)
		if err != nil {
			return nil, err
		}
		if m["id"] == id {
			if e, ok := m["error"].(frame); ok {
				return nil, errors.New(e["message"].(string))
			}
			return m["result"].(frame), nil
		}
		if p, _ := m["params"].(frame); p["seq"] != nil {
			if n := p["seq"].(float64); n != *got+1 {
				return nil, errors.New("a gap in the replay")
			} else {
				*got = n
			}
		}
	}
}

func formatSeq(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
