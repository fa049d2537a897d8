package rpc

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

func TestConnectionBeyondTheLimitGetsOneErrorAndIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		connectionLimit(t, startBubbleServer(t, Config{MaxConnections: 2}, config.Default(), session.Options{}))
	})
}

func connectionLimit(t *testing.T, h *harness) {
	a, b := h.client(t), h.client(t)
	a.initialize()
	b.initialize()
	c := h.client(t)
	m := c.recv()
	e, _ := m["error"].(map[string]any)
	if e["code"] != float64(-32004) || m["id"] != nil {
		t.Fatalf("got %v, want a -32004 error with id null", m)
	}
	if d, _ := e["data"].(map[string]any); d["reason"] != "connection_limit" || d["limit"] != float64(2) {
		t.Errorf("data = %v, want reason connection_limit and limit 2", e["data"])
	}
	if err := c.expectEOF(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	// The refused connection is not counted: closing one admits a new one.
	a.conn.Close()
	synctest.Wait() // the server has seen the close, and done with it
	if n := h.srv.Connections(); n != 1 {
		t.Fatalf("%d connections counted after one closed, want 1", n)
	}
	d := h.client(t)
	d.initialize()
}

// readNothingUntil requires that nothing arrives on c before the instant at.
func (c *client) readNothingUntil(at time.Time) {
	c.t.Helper()
	c.conn.SetReadDeadline(at)
	line, err := c.r.ReadBytes('\n')
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		c.t.Fatalf("before %s: got %q, %v; want nothing yet", at.Format(time.StampNano), line, err)
	}
}

func TestNoInitializeWithin30SecondsClosesWithoutReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startBubbleServer(t, Config{}, config.Default(), session.Options{})
		start := time.Now()
		c := h.client(t)
		ok := h.client(t)
		c.send(`{"jsonrpc":"2.0","method":"status","id":1}`) // refused, does not count
		if m := c.recv(); m["error"] == nil {
			t.Fatalf("status before initialize: %v", m)
		}
		ok.initialize()
		c.readNothingUntil(start.Add(HandshakeTimeout - time.Nanosecond))
		if err := c.expectEOF(time.Minute); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != HandshakeTimeout {
			t.Errorf("closed %s after connect, want exactly %s", d, HandshakeTimeout)
		}
		// An initialized connection stays, however long it idles.
		time.Sleep(time.Hour)
		ok.send(`{"jsonrpc":"2.0","method":"status","id":2}`)
		if m := ok.recv(); m["result"] == nil {
			t.Fatalf("status an hour after initialize: %v", m)
		}
	})
}

func TestOversizeLineGetsFrameTooLargeThenClose(t *testing.T) {
	h := startServer(t, Config{})
	c := h.client(t)
	c.initialize()
	// One byte over the cap, newline included: the content alone is 8 MiB.
	line := `{"jsonrpc":"2.0","method":"status","params":{"pad":"` +
		strings.Repeat("x", 8<<20) + `"},"id":1}`
	go c.conn.Write([]byte(line + "\n")) // the server stops reading midway
	m := c.recv()
	e, _ := m["error"].(map[string]any)
	d, _ := e["data"].(map[string]any)
	if e["code"] != float64(-32600) || m["id"] != nil || d["reason"] != "frame_too_large" || d["limit_bytes"] != float64(8388608) {
		t.Fatalf("got %v, want -32600 frame_too_large with limit_bytes 8388608 and id null", m)
	}
	if err := c.expectEOF(5 * time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestLineOfExactlyTheCapIsServed(t *testing.T) {
	h := startServer(t, Config{})
	c := h.client(t)
	c.initialize()
	head := `{"jsonrpc":"2.0","method":"status","params":{"pad":"`
	tail := `"},"id":"max"}`
	pad := 8<<20 - 1 - len(head) - len(tail) // the newline is the 8,388,608th byte
	var b bytes.Buffer
	b.WriteString(head)
	b.WriteString(strings.Repeat("y", pad))
	b.WriteString(tail)
	go c.conn.Write(append(b.Bytes(), '\n'))
	if m := c.recv(); m["id"] != "max" || m["result"] == nil {
		t.Fatalf("got %v, want the status result for a line of exactly 8 MiB", m)
	}
}

func TestUnfinishedLineGetsFrameTimeoutAfter30SecondsThenClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startBubbleServer(t, Config{}, config.Default(), session.Options{})
		c := h.client(t)
		c.initialize()
		time.Sleep(time.Hour) // idle between lines is not a timeout
		c.send(`{"jsonrpc":"2.0","method":"status","id":1}`)
		if m := c.recv(); m["result"] == nil {
			t.Fatalf("status after idling: %v", m)
		}
		start := time.Now()
		c.conn.Write([]byte(`{"jsonrpc":"2.0","meth`))
		c.readNothingUntil(start.Add(jsonrpc.FrameTimeout - time.Nanosecond))
		m := c.recv()
		e, _ := m["error"].(map[string]any)
		d, _ := e["data"].(map[string]any)
		if e["code"] != float64(-32600) || d["reason"] != "frame_timeout" || m["id"] != nil {
			t.Fatalf("got %v, want -32600 frame_timeout with id null", m)
		}
		if d := time.Since(start); d != jsonrpc.FrameTimeout {
			t.Errorf("frame_timeout %s after the line started, want exactly %s", d, jsonrpc.FrameTimeout)
		}
		if err := c.expectEOF(time.Minute); err != nil {
			t.Fatal(err)
		}
	})
}

func TestWriteStalledFor30SecondsClosesTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startBubbleServer(t, Config{}, config.Default(), session.Options{})
		c := h.client(t)
		c.initialize()
		// net.Pipe buffers nothing: the answer's write stalls until the client reads,
		// and this client never does.
		c.send(`{"jsonrpc":"2.0","method":"status","id":1}`)
		start := time.Now()
		time.Sleep(jsonrpc.WriteStallTimeout - time.Nanosecond)
		synctest.Wait()
		if n := h.srv.Connections(); n != 1 {
			t.Fatalf("%d connections %s into the stall, want it still open", n, time.Since(start))
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n := h.srv.Connections(); n != 0 {
			t.Fatalf("%d connections after a %s stall, want it closed", n, jsonrpc.WriteStallTimeout)
		}
	})
}

func TestStalledWriterIsClosed(t *testing.T) {
	h := startServer(t, Config{WriteTimeout: 300 * time.Millisecond})
	c := h.client(t)
	c.initialize()
	// Ask for far more than the socket buffers hold and never read.
	req := []byte(`{"jsonrpc":"2.0","method":"status","id":1}` + "\n")
	var batch []byte
	for range 512 {
		batch = append(batch, req...)
	}
	deadline := time.Now().Add(20 * time.Second)
	for h.srv.Connections() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server kept a connection whose peer stopped reading")
		}
		c.conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		c.conn.Write(batch)
	}
}

func TestHalfClosedClientStillGetsItsAnswers(t *testing.T) {
	h := startServer(t, Config{})
	c := h.client(t)
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":0}` + "\n")
	for i := 1; i <= 20; i++ {
		b.WriteString(`{"jsonrpc":"2.0","method":"status","id":` + string(rune('0'+i%10)) + "}\n")
	}
	c.conn.Write([]byte(b.String()))
	c.conn.(interface{ CloseWrite() error }).CloseWrite()
	for range 21 {
		if m := c.recv(); m["result"] == nil {
			t.Fatalf("got %v", m)
		}
	}
	if err := c.expectEOF(5 * time.Second); err != nil {
		t.Fatal(err)
	}
}
