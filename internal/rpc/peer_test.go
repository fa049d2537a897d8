package rpc

import (
	"bufio"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// peer is an asynchronous test client: it matches responses to calls, collects
// session/update notifications in order, and answers the daemon's requests with a
// handler of the test's choice.
type peer struct {
	t    *testing.T
	conn net.Conn
	wmu  sync.Mutex
	next atomic.Int64

	mu      sync.Mutex
	waiters map[string]chan map[string]any
	updates chan map[string]any
	// onRequest answers a daemon->client request; its return value is the raw
	// response line to send, or "" to send nothing.
	onRequest func(req map[string]any) string
	requests  chan map[string]any // every daemon->client request, for assertions
	closed    chan struct{}
	arrivals  atomic.Int64 // every message gets "_n", its arrival order
	strays    atomic.Int64 // responses nobody waited for
	// bubbled peers run on a synctest bubble's clock, where waiting costs nothing:
	// they wait for an answer as long as any rule of the daemon may take.
	bubbled bool
}

// patience is how long the peer waits for a response or an update.
func (p *peer) patience() time.Duration {
	if p.bubbled {
		return 24 * time.Hour
	}
	return 30 * time.Second
}

func (h *harness) peer(t *testing.T, capabilities string) *peer {
	t.Helper()
	p := &peer{
		t: t, conn: h.dial(t),
		waiters:  make(map[string]chan map[string]any),
		updates:  make(chan map[string]any, 1<<16),
		requests: make(chan map[string]any, 64),
		closed:   make(chan struct{}),
		bubbled:  h.pipe != nil,
	}
	go p.read()
	params := `{"protocolVersion":1}`
	if capabilities != "" {
		params = `{"protocolVersion":1,"clientCapabilities":` + capabilities + `}`
	}
	if _, err := p.call("initialize", params); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return p
}

func (p *peer) read() {
	defer close(p.closed)
	r := bufio.NewReaderSize(p.conn, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var m map[string]any
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		m["_n"] = float64(p.arrivals.Add(1))
		switch {
		case m["method"] == "session/update":
			u := m["params"].(map[string]any)
			u["_n"] = m["_n"]
			p.updates <- u
		case m["method"] != nil:
			p.requests <- m
			if p.onRequest != nil {
				if reply := p.onRequest(m); reply != "" {
					p.send(reply)
				}
			}
		default:
			id := fmt.Sprint(m["id"])
			p.mu.Lock()
			ch := p.waiters[id]
			delete(p.waiters, id)
			p.mu.Unlock()
			if ch != nil {
				ch <- m
			} else {
				p.strays.Add(1)
			}
		}
	}
}

func (p *peer) send(line string) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	p.conn.Write([]byte(line + "\n"))
}

// start sends a request and returns a channel for its response.
func (p *peer) start(method, params string) <-chan map[string]any {
	id := fmt.Sprint(p.next.Add(1))
	ch := make(chan map[string]any, 1)
	p.mu.Lock()
	p.waiters[id] = ch
	p.mu.Unlock()
	if params == "" {
		params = "{}"
	}
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s,"id":%s}`, method, params, id))
	return ch
}

// rpcError is a JSON-RPC error a call answered with.
type rpcError struct {
	Code    int64
	Message string
	Data    map[string]any
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s %v", e.Code, e.Message, e.Data) }

// call sends a request and waits for its result.
func (p *peer) call(method, params string) (map[string]any, error) {
	p.t.Helper()
	return p.await(p.start(method, params))
}

func (p *peer) await(ch <-chan map[string]any) (map[string]any, error) {
	p.t.Helper()
	select {
	case m := <-ch:
		if e, ok := m["error"].(map[string]any); ok {
			d, _ := e["data"].(map[string]any)
			return nil, &rpcError{Code: int64(e["code"].(float64)), Message: fmt.Sprint(e["message"]), Data: d}
		}
		res, _ := m["result"].(map[string]any)
		if res != nil {
			res["_n"] = m["_n"]
		}
		return res, nil
	case <-time.After(p.patience()):
		p.t.Fatalf("no response within %s", p.patience())
	case <-p.closed:
		p.t.Fatal("connection closed while waiting for a response")
	}
	return nil, nil
}

// must calls and fails the test on an error.
func (p *peer) must(method, params string) map[string]any {
	p.t.Helper()
	res, err := p.call(method, params)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, params, err)
	}
	return res
}

// update waits for the next session/update.
func (p *peer) update() map[string]any {
	p.t.Helper()
	select {
	case u := <-p.updates:
		return u
	case <-time.After(p.patience()):
		p.t.Fatalf("no session/update within %s", p.patience())
	}
	return nil
}

// updateOf skips updates until one of type typ arrives.
func (p *peer) updateOf(typ string) map[string]any {
	p.t.Helper()
	u, _ := p.until(typ)
	return u
}

// until returns the first update of type typ and every update before it.
func (p *peer) until(typ string) (map[string]any, []map[string]any) {
	p.t.Helper()
	var before []map[string]any
	for {
		u := p.update()
		if u["type"] == typ {
			return u, before
		}
		before = append(before, u)
	}
}

// drain returns the updates received so far.
func (p *peer) drain() []map[string]any {
	var out []map[string]any
	for {
		select {
		case u := <-p.updates:
			out = append(out, u)
		default:
			return out
		}
	}
}

func (p *peer) newSession(params string) string {
	p.t.Helper()
	if params == "" {
		params = `{"agentAlias":"default"}`
	}
	return p.must("session/new", params)["sessionId"].(string)
}

func quote(s string) string {
	b, _ := jsontext.AppendQuote(nil, s)
	return string(b)
}
