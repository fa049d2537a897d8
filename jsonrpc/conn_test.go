package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json/v2"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// unixPair returns the server's and the dialling peer's ends of a real Unix socket.
func unixPair(t *testing.T) (server, peer net.Conn) {
	t.Helper()
	dir, err := os.MkdirTemp("", "zcconn")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", dir+"/c.sock")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	peer, err = net.Dial("unix", dir+"/c.sock")
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	ln.Close()
	os.RemoveAll(dir)
	return server, peer
}

// pair returns a Conn serving h on one end of a real Unix socket, and the raw other end.
func pair(t *testing.T, h Handler, opts Options) (*Conn, net.Conn, *bufio.Reader) {
	t.Helper()
	server, peer := unixPair(t)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c := NewConn(NewNDJSON(server), h, opts)
	ran := make(chan struct{})
	go func() {
		c.Run()
		close(ran)
	}()
	t.Cleanup(func() {
		peer.Close()
		c.Close()
		<-ran
	})
	return c, peer, bufio.NewReader(peer)
}

func readMsg(t *testing.T, peer net.Conn, r *bufio.Reader) map[string]any {
	t.Helper()
	peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("%v: %q", err, line)
	}
	return m
}

func write(t *testing.T, peer net.Conn, line string) {
	t.Helper()
	if _, err := peer.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
}

func TestOutboundCallsUseTheirOwnIdsAndPendingMap(t *testing.T) {
	// The peer's request with id "zc-out-0" and our call with id "zc-out-0" are in
	// flight at the same time, in opposite directions, and must not be confused.
	release := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		<-release
		return "peer's call answered", nil
	})
	c, peer, r := pair(t, h, Options{})
	write(t, peer, `{"jsonrpc":"2.0","method":"slow","id":"zc-out-0"}`)

	type answer struct {
		v   map[string]string
		err error
	}
	got := make(chan answer, 1)
	go func() {
		var v map[string]string
		err := c.Call(context.Background(), "elicitation/create", map[string]string{"message": "Continue?"}, &v)
		got <- answer{v, err}
	}()
	req := readMsg(t, peer, r)
	if req["id"] != "zc-out-0" || req["method"] != "elicitation/create" {
		t.Fatalf("outbound request = %v, want id zc-out-0", req)
	}
	write(t, peer, `{"jsonrpc":"2.0","result":{"action":"accept"},"id":"zc-out-0"}`)
	a := <-got
	if a.err != nil || a.v["action"] != "accept" {
		t.Fatalf("Call = %v, %v", a.v, a.err)
	}
	close(release)
	if m := readMsg(t, peer, r); m["id"] != "zc-out-0" || m["result"] != "peer's call answered" {
		t.Fatalf("the peer's own request got %v", m)
	}
	// Ids count up per connection.
	go c.Call(context.Background(), "x", nil, nil)
	if m := readMsg(t, peer, r); m["id"] != "zc-out-1" {
		t.Fatalf("second call id = %v, want zc-out-1", m["id"])
	}
}

func TestExplicitNullResultIsASuccess(t *testing.T) {
	c, peer, r := pair(t, HandlerFunc(nil), Options{})
	errc := make(chan error, 1)
	go func() { errc <- c.Call(context.Background(), "elicitation/create", nil, &struct{}{}) }()
	m := readMsg(t, peer, r)
	write(t, peer, fmt.Sprintf(`{"jsonrpc":"2.0","result":null,"id":%q}`, m["id"]))
	if err := <-errc; err != nil {
		t.Fatalf("Call with result null = %v, want success", err)
	}
}

func TestErrorObjectResolvesTheCallAsAFailure(t *testing.T) {
	c, peer, r := pair(t, HandlerFunc(nil), Options{})
	errc := make(chan error, 1)
	go func() { errc <- c.Call(context.Background(), "m", nil, nil) }()
	m := readMsg(t, peer, r)
	write(t, peer, fmt.Sprintf(`{"jsonrpc":"2.0","error":{"code":-5,"message":"declined","data":{"k":1}},"id":%q}`, m["id"]))
	var e *Error
	if err := <-errc; !errors.As(err, &e) || e.Code != -5 || e.Message != "declined" || string(e.Data) != `{"k":1}` {
		t.Fatalf("Call = %v, want the peer's error", err)
	}
}

func TestPendingCallsFailWhenTheConnectionCloses(t *testing.T) {
	c, peer, r := pair(t, HandlerFunc(nil), Options{})
	errc := make(chan error, 2)
	for range 2 {
		go func() { errc <- c.Call(context.Background(), "m", nil, nil) }()
	}
	readMsg(t, peer, r)
	readMsg(t, peer, r)
	peer.Close()
	for range 2 {
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Fatalf("Call = %v, want ErrClosed", err)
		}
	}
	if err := c.Call(context.Background(), "m", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Call after close = %v, want ErrClosed", err)
	}
}

func TestUnknownResponseIdIsIgnored(t *testing.T) {
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) { return 1, nil })
	_, peer, r := pair(t, h, Options{})
	write(t, peer, `{"jsonrpc":"2.0","result":{},"id":"zc-out-77"}`)
	write(t, peer, `{"jsonrpc":"2.0","method":"ping","id":1}`)
	if m := readMsg(t, peer, r); m["id"] != float64(1) {
		t.Fatalf("got %v, want only the answer to ping", m)
	}
}

func TestSlowCallDoesNotBlockAnother(t *testing.T) {
	release := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "slow" {
			<-release
		}
		return req.Method, nil
	})
	_, peer, r := pair(t, h, Options{})
	write(t, peer, `{"jsonrpc":"2.0","method":"slow","id":1}`)
	write(t, peer, `{"jsonrpc":"2.0","method":"fast","id":2}`)
	if m := readMsg(t, peer, r); m["result"] != "fast" {
		t.Fatalf("first answer %v, want fast", m)
	}
	close(release)
	if m := readMsg(t, peer, r); m["result"] != "slow" {
		t.Fatalf("second answer %v, want slow", m)
	}
}

func TestInFlightLimitStopsReading(t *testing.T) {
	const limit = 4
	var running, peak atomic.Int32
	release := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		running.Add(-1)
		return nil, nil
	})
	_, peer, r := pair(t, h, Options{MaxInFlight: limit})
	for i := range limit + 3 {
		write(t, peer, fmt.Sprintf(`{"jsonrpc":"2.0","method":"m","id":%d}`, i))
	}
	deadline := time.Now().Add(5 * time.Second)
	for running.Load() < limit && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a wrongly unbounded server would start more now
	if got := running.Load(); got != limit {
		t.Fatalf("%d handlers running, want %d", got, limit)
	}
	close(release)
	for range limit + 3 { // nothing was dropped
		readMsg(t, peer, r)
	}
	if p := peak.Load(); p > limit {
		t.Fatalf("peak %d handlers, limit %d", p, limit)
	}
}

func TestHandlerPanicAnswersInternalError(t *testing.T) {
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) { panic("boom") })
	_, peer, r := pair(t, h, Options{})
	write(t, peer, `{"jsonrpc":"2.0","method":"m","id":1}`)
	m := readMsg(t, peer, r)
	if e, _ := m["error"].(map[string]any); e["code"] != float64(CodeInternalError) || strings.Contains(fmt.Sprint(e), "boom") {
		t.Fatalf("got %v, want -32603 without the panic text", m)
	}
}

func TestNotificationsAreNeverAnswered(t *testing.T) {
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "fail" {
			return nil, Errorf(CodeInvalidParams, "bad")
		}
		return "ok", nil
	})
	c, peer, r := pair(t, h, Options{})
	write(t, peer, `{"jsonrpc":"2.0","method":"fail"}`)
	write(t, peer, `{"jsonrpc":"2.0","method":"ok"}`)
	write(t, peer, `{"jsonrpc":"2.0","method":"ok","id":"last"}`)
	if m := readMsg(t, peer, r); m["id"] != "last" {
		t.Fatalf("got %v, want only the answer to the request", m)
	}
	if err := c.Notify("session/update", map[string]any{"type": "agent_message_chunk"}); err != nil {
		t.Fatal(err)
	}
	if m := readMsg(t, peer, r); m["method"] != "session/update" || m["id"] != nil {
		t.Fatalf("notification = %v", m)
	}
}

func TestPipelinedInlineAnswersAllArriveInOrder(t *testing.T) {
	h := HandlerFunc(func(_ context.Context, req *Request) (any, error) { return string(req.ID), nil })
	_, peer, r := pair(t, h, Options{Schedule: func(*Request) Schedule { return Inline }})
	var batch strings.Builder
	for i := range 200 {
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","method":"fast","id":%d}`+"\n", i)
	}
	if _, err := peer.Write([]byte(batch.String())); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if m := readMsg(t, peer, r); m["id"] != float64(i) {
			t.Fatalf("answer %d: %v", i, m)
		}
	}
}

func TestHeldInlineAnswerDoesNotWaitForASlowCall(t *testing.T) {
	release := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "slow" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return "ok", nil
	})
	_, peer, r := pair(t, h, Options{MaxInFlight: 1, Schedule: func(req *Request) Schedule {
		if req.Method == "fast" {
			return Inline
		}
		return Spawn
	}})
	defer close(release)
	// One write: the fast answer is held while the slow calls are read, and the
	// second slow call waits for a free slot.
	write(t, peer, `{"jsonrpc":"2.0","method":"fast","id":1}`+"\n"+
		`{"jsonrpc":"2.0","method":"slow","id":2}`+"\n"+
		`{"jsonrpc":"2.0","method":"slow","id":3}`)
	if m := readMsg(t, peer, r); m["id"] != float64(1) {
		t.Fatalf("first answer %v, want the fast call's", m)
	}
}

// Requests served in place are answered from the framer's buffer; every other frame
// of the same read (a call served on a goroutine, one too large or with an escaped
// method name, a malformed frame, a response) is still served from a copy, so what
// a handler that outlives the read sees is intact.
func TestInPlaceRequestsAmongOtherFrames(t *testing.T) {
	release := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "slow" {
			<-release // the reader has read, and reused its buffer for, every frame after
		}
		return req.Method + " " + string(req.ID) + " " + string(req.Params), nil
	})
	inPlace := func(req *Request) bool { return req.Method == "fast" }
	_, peer, r := pair(t, h, Options{Schedule: func(r *Request) Schedule {
		if inPlace(r) {
			return InPlace
		}
		return Spawn
	}})
	big := `{"pad":"` + strings.Repeat("x", inPlaceMax) + `"}`
	frames := []string{
		`{"jsonrpc":"2.0","method":"fast","id":1,"params":{"n":1}}`,
		`{"jsonrpc":"2.0","method":"slow","id":"s","params":{"keep":"me"}}`,
		`{"jsonrpc":"2.0","method":"fast","id":2,"params":[2]}`,
		`{"jsonrpc":"2.0","method":"f\u0061st","id":3}`,
		`{"jsonrpc":"2.0","method":"fast","id":4,"params":` + big + `}`,
		`{"jsonrpc":"2.0","method":"fast","id":5`,
		`{"jsonrpc":"2.0","result":1,"id":"zc-out-99"}`,
		`{"jsonrpc":"1.0","method":"fast","id":6}`,
		`{"jsonrpc":"2.0","method":"fast","id":7}`,
	}
	write(t, peer, strings.Join(frames, "\n"))
	want := []struct {
		id     any
		result string
		code   float64
	}{
		{float64(1), `fast 1 {"n":1}`, 0},
		{float64(2), `fast 2 [2]`, 0},
		{float64(3), `fast 3 `, 0},
		{float64(4), `fast 4 ` + big, 0},
		{nil, "", CodeParseError},
		{float64(6), "", CodeInvalidRequest},
		{float64(7), `fast 7 `, 0},
	}
	for _, w := range want {
		m := readMsg(t, peer, r)
		if w.code != 0 {
			if e, _ := m["error"].(map[string]any); m["id"] != w.id || e["code"] != w.code {
				t.Fatalf("got %v, want error %v for id %v", m, w.code, w.id)
			}
			continue
		}
		if m["id"] != w.id || m["result"] != w.result {
			t.Fatalf("got %v, want %q for id %v", m, w.result, w.id)
		}
	}
	close(release)
	if m := readMsg(t, peer, r); m["id"] != "s" || m["result"] != `slow "s" {"keep":"me"}` {
		t.Fatalf("the call served on a goroutine got %v", m)
	}
}
