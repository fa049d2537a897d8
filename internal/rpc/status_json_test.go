package rpc

import (
	"context"
	"encoding/json/v2"
	"log/slog"
	"os"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

func TestStatusEncodingMatchesEncodingJSON(t *testing.T) {
	for _, r := range []statusResult{
		{},
		{ServerVersion: ServerVersion, ProtocolVersion: 1, PID: 4242, UptimeMs: 1 << 40, DataDir: `/tmp/"quoted"\dir`,
			Endpoint: "/tmp/é/<sock>&\u2028", Connections: 3, ActiveSessions: 2, Sessions: []session.Info{
				{SessionID: "s1", AgentAlias: "default", State: "idle"}, {SessionID: "s\n2", AgentAlias: "a\tb", State: "running"}}},
		{PID: -1, UptimeMs: -5, Sessions: []session.Info{}},
	} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.AppendJSON(nil)
		if err != nil || string(got) != string(want) {
			t.Errorf("AppendJSON = %s, %v\nwant %s", got, err, want)
		}
	}
	for _, bad := range []statusResult{{DataDir: "\xff"}, {Sessions: []session.Info{{State: "\xfe"}}}} {
		if _, err := json.Marshal(bad); err == nil {
			t.Fatal("encoding/json took invalid UTF-8: the test's premise is wrong")
		}
		if _, err := bad.AppendJSON(nil); err == nil {
			t.Errorf("AppendJSON(%+v) took invalid UTF-8", bad)
		}
	}
}

// A status call through the gate allocates nothing when no session is live: status
// is inline, so its authorized context is the connection's own; the result and the
// authority box nothing, and the server's fixed members are encoded once.
func TestStatusCallAllocations(t *testing.T) {
	h := startServer(t, Config{})
	c := &connState{srv: h.srv, peer: Peer{UID: os.Getuid()}, log: slog.New(slog.DiscardHandler)}
	c.session.Store(&handshake{principal: auth.Operator()})
	c.initialized.Store(true)
	req := &jsonrpc.Request{ID: jsonrpc.ID("1"), Method: "status"}
	ctx := context.Background()
	var buf []byte
	call := func() {
		res, err := c.Handle(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if buf, err = res.(jsonrpc.Appender).AppendJSON(buf[:0]); err != nil {
			t.Fatal(err)
		}
	}
	call()
	var got map[string]any
	if err := json.Unmarshal(buf, &got); err != nil || got["endpoint"] != h.addr || got["pid"] != float64(os.Getpid()) {
		t.Fatalf("status answered %s (%v)", buf, err)
	}
	if n := testing.AllocsPerRun(100, call); n > 0 {
		t.Errorf("%.1f allocations per status call, want none", n)
	}
}
