//go:build unix

package web_test

import (
	"context"
	"encoding/json/v2"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// tab is a browser tab's WebSocket as a test drives it.
type tab struct {
	t  testing.TB
	ws *websocket.Conn
	id int
}

type frame = map[string]any

// dialTab opens /rpc with the cookie of c (nil: none) and the given Origin.
func (s *stack) dialTab(c *http.Client, origin string) (*tab, *http.Response, error) {
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	if c != nil {
		u, _ := url.Parse(s.base)
		for _, ck := range c.Jar.Cookies(u) {
			h.Add("Cookie", ck.Name+"="+ck.Value)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, res, err := websocket.Dial(ctx, "ws"+s.base[len("http"):]+"/rpc", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, res, err
	}
	ws.SetReadLimit(64 << 20)
	tb := &tab{t: s.t, ws: ws}
	s.t.Cleanup(func() { ws.CloseNow() })
	return tb, res, nil
}

// openTab is dialTab logged in and from the server's own origin, initialized.
func (s *stack) openTab() *tab {
	s.t.Helper()
	tb, _, err := s.dialTab(s.httpClient(), s.base)
	if err != nil {
		s.t.Fatal(err)
	}
	tb.call("initialize", `{"protocolVersion":1}`)
	return tb
}

func (tb *tab) send(msg string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tb.ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		tb.t.Fatal(err)
	}
}

func (tb *tab) recv(timeout time.Duration) (frame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, b, err := tb.ws.Read(ctx)
	if err != nil {
		return nil, err
	}
	var m frame
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %s", err, b)
	}
	return m, nil
}

// request sends a request and returns its id.
func (tb *tab) request(method, params string) float64 {
	tb.id++
	tb.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s,"id":%d}`, method, params, tb.id))
	return float64(tb.id)
}

// call sends a request and waits for its response, handing the notifications met
// meanwhile to seen (when not nil); an error response fails the test.
func (tb *tab) callSeeing(method, params string, seen func(frame)) frame {
	tb.t.Helper()
	id := tb.request(method, params)
	for {
		m, err := tb.recv(60 * time.Second)
		if err != nil {
			tb.t.Fatalf("%s: %v", method, err)
		}
		if m["id"] == id {
			if m["error"] != nil {
				tb.t.Fatalf("%s: %v", method, m["error"])
			}
			r, _ := m["result"].(frame)
			return r
		}
		if seen != nil && m["method"] != nil {
			seen(m)
		}
	}
}

func (tb *tab) call(method, params string) frame { return tb.callSeeing(method, params, nil) }
