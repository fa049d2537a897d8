package jsonrpc

import (
	"encoding/json/jsontext"
	"fmt"
	"runtime"
	"testing"
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
