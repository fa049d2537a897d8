package jsonrpc

import (
	"encoding/json/jsontext"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// A backlog of notifications, queued while the peer does not read, is held in
// buffers of about streamChunk bytes, not in one buffer grown by doubling (which
// allocated and copied several times the backlog); every notification arrives, in
// order, once the peer reads.
func TestNotificationBacklogIsNotRegrown(t *testing.T) {
	c, peer, r := pair(t, HandlerFunc(nil), Options{OutboundFrames: 1 << 16, OutboundBytes: 64 << 20})
	const n = 20000
	params := make([]jsontext.Value, n)
	total := 0
	for i := range params {
		params[i] = jsontext.Value(fmt.Sprintf(`{"sessionId":"sess_0123456789abcdef","seq":%d,"type":"agent_message_chunk","text":"word "}`, i))
		total += len(params[i]) + len(`{"jsonrpc":"2.0","method":"u","params":}`) + 1
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, p := range params {
		if err := c.Notify("u", p); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	// The backlog is about 2.7 MB: most of it waits, since the peer reads nothing
	// yet (a socket buffer takes a few hundred KiB). Its buffers, and the params
	// boxed for Notify, take about 1.5 times that (2 under the race detector, whose
	// pool drops some buffers); one buffer grown by doubling took 6 times.
	if got := after.TotalAlloc - before.TotalAlloc; got > uint64(total)*3 {
		t.Errorf("queuing %d bytes of notifications allocated %d bytes", total, got)
	}
	for i := range n {
		m := readMsg(t, peer, r)
		p, _ := m["params"].(map[string]any)
		if m["method"] != "u" || p["seq"] != float64(i) {
			t.Fatalf("notification %d: %v", i, m)
		}
	}
}

// A notification written straight into the stream (NotifyValue, or Notify of a
// plain method) is byte for byte what AppendRequest makes; a method that needs
// escaping goes the long way, also exactly; and the straight path allocates nothing
// once its buffers exist.
func TestNotificationsWrittenIntoTheStreamAreExact(t *testing.T) {
	c, peer, r := pair(t, HandlerFunc(nil), Options{OutboundFrames: 1 << 16, OutboundBytes: 64 << 20})
	params := jsontext.Value(`{"sessionId":"s","seq":1,"type":"agent_message_chunk","text":"a \"b\" é\n"}`)
	send := []struct {
		method string
		params jsontext.Value
		value  bool
	}{
		{"session/update", params, true},
		{"session/update", params, false},
		{"session/update", nil, true},
		{`odd "method" é`, params, true},
		{"tab\tmethod", params, false},
	}
	for _, s := range send {
		var err error
		if s.value {
			err = c.NotifyValue(s.method, s.params)
		} else {
			err = c.Notify(s.method, s.params)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range send {
		want, err := AppendRequest(nil, nil, s.method, s.params)
		if err != nil {
			t.Fatal(err)
		}
		peer.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want)+"\n" {
			t.Errorf("method %q:\n got %s\nwant %s", s.method, got, want)
		}
	}
	if raceEnabled {
		return // the race detector's pool drops buffers
	}
	// Keep the writer busy with a backlog, so that queuing reuses the stream's buffer.
	allocs := testing.AllocsPerRun(1000, func() {
		if err := c.NotifyValue("session/update", params); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0.05 {
		t.Errorf("NotifyValue allocates %.2f times per notification", allocs)
	}
}
