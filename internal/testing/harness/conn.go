package harness

import (
	"bufio"
	"encoding/json/v2"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// Conn is a line client of JSON-RPC over any connection (a Unix socket, a named
// pipe): no client package, no framing help. Each frame is read within a deadline.
type Conn struct {
	Conn net.Conn      // closed at the test's cleanup
	R    *bufio.Reader // buffers what was read from Conn; read it for what is not a frame

	t      testing.TB
	within time.Duration
}

// NewConn is a Conn over c that reads each frame within, and closes c at the
// test's cleanup.
func NewConn(t testing.TB, c net.Conn, within time.Duration) *Conn {
	t.Cleanup(func() { c.Close() })
	return &Conn{Conn: c, R: bufio.NewReader(c), t: t, within: within}
}

// Write writes s as it is: a part of a frame, several frames.
func (c *Conn) Write(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.Conn, s); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// Send writes line and its newline.
func (c *Conn) Send(line string) {
	c.t.Helper()
	c.Write(line + "\n")
}

// Recv reads the next frame, whatever it is.
func (c *Conn) Recv() map[string]any {
	c.t.Helper()
	c.Conn.SetReadDeadline(time.Now().Add(c.within))
	line, err := c.R.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("read a frame: %v (got %q)", err, line)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		c.t.Fatalf("frame %q: %v", line, err)
	}
	return m
}

// RecvID reads frames until the response with id (as JSON decodes it: float64(2),
// "x", nil), skipping requests and notifications; another response fails t.
func (c *Conn) RecvID(id any) map[string]any {
	c.t.Helper()
	for {
		m := c.Recv()
		if _, isRequest := m["method"]; isRequest {
			continue
		}
		if m["id"] != id {
			c.t.Fatalf("response %v while waiting for id %v", m, id)
		}
		return m
	}
}

// Call sends line and returns the next frame.
func (c *Conn) Call(line string) map[string]any {
	c.t.Helper()
	c.Send(line)
	return c.Recv()
}

// CallID sends line and returns the response with id (see RecvID).
func (c *Conn) CallID(line string, id any) map[string]any {
	c.t.Helper()
	c.Send(line)
	return c.RecvID(id)
}

// Initialize sends initialize (protocol version 1) with id (1, "init") and returns
// its result.
func (c *Conn) Initialize(id any) map[string]any {
	c.t.Helper()
	b, err := json.Marshal(id)
	if err != nil {
		c.t.Fatal(err)
	}
	var want any // id as a response carries it back
	if err := json.Unmarshal(b, &want); err != nil {
		c.t.Fatal(err)
	}
	m := c.CallID(`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":`+string(b)+`}`, want)
	res, ok := m["result"].(map[string]any)
	if !ok {
		c.t.Fatalf("initialize: %v", m)
	}
	return res
}

// Closed reports whether the peer closed the connection within the given time.
func (c *Conn) Closed(within time.Duration) bool {
	c.Conn.SetReadDeadline(time.Now().Add(within))
	_, err := c.R.ReadBytes('\n')
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}
