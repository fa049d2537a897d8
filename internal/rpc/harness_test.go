package rpc

import (
	"bufio"
	"context"
	"encoding/json/v2"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is a real Server on a real Unix socket, or over net.Pipe inside a
// synctest bubble (bubble_test.go).
type harness struct {
	srv    *Server
	addr   string
	stopFn func()
	// pipe, when set, dials the server in a bubble; addr is then unused.
	pipe func(t *testing.T) net.Conn
}

func startServer(t *testing.T, cfg Config) *harness {
	t.Helper()
	return startServerWith(t, cfg, config.Default(), session.Options{})
}

// startServerWith also sets the configuration its agents come from and the session
// limits. Agents' workspaces default to a temporary data dir.
func startServerWith(t *testing.T, cfg Config, conf config.Config, opts session.Options) *harness {
	t.Helper()
	dir, err := os.MkdirTemp("", "zcrpc")
	if err != nil {
		t.Fatal(err)
	}
	addr := dir + "/s.sock"
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DaemonUID = os.Getuid()
	cfg.DataDir, cfg.Endpoint = dir, addr
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Logger == nil {
		opts.Logger = cfg.Logger
	}
	catalog, err := session.BuildCatalog(conf, dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if opts.Store == nil {
		st, err := store.Open(dir+"/sessions.db", store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		opts.Store = st
	}
	cfg.Sessions = session.NewManager(catalog, opts)
	cfg.Store = opts.Store
	h := &harness{srv: NewServer(cfg), addr: addr}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := endpoint.PeerOf(nc)
				h.srv.ServeStream(nc, Peer{Label: p.Label, UID: p.UID, PID: p.PID})
			}()
		}
	}()
	h.stopFn = sync.OnceFunc(func() {
		ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cfg.Sessions.Shutdown(ctx); err != nil {
			t.Errorf("sessions shutdown: %v", err)
		}
		if err := h.srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		wg.Wait()
		os.RemoveAll(dir)
	})
	t.Cleanup(h.stopFn)
	return h
}

// stop shuts the server down as the daemon does; the cleanup does it otherwise.
func (h *harness) stop(t *testing.T) { h.stopFn() }

func (h *harness) dial(t *testing.T) net.Conn {
	t.Helper()
	if h.pipe != nil {
		return h.pipe(t)
	}
	c, err := net.Dial("unix", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// client is a minimal line client for tests that are not transcripts.
type client struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func (h *harness) client(t *testing.T) *client {
	c := h.dial(t)
	return &client{t: t, conn: c, r: bufio.NewReader(c)}
}

func (c *client) send(line string) {
	c.t.Helper()
	c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.conn.Write([]byte(line + "\n")); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// recv reads one message; it fails the test on timeout.
func (c *client) recv() map[string]any {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("recv: %v (partial %q)", err, line)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		c.t.Fatalf("recv: %v in %q", err, line)
	}
	return m
}

// expectEOF waits for the server to close the connection.
func (c *client) expectEOF(within time.Duration) error {
	c.conn.SetReadDeadline(time.Now().Add(within))
	line, err := c.r.ReadBytes('\n')
	if err == nil {
		return fmt.Errorf("got %q, want the connection closed", line)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("connection still open after %s", within)
	}
	return nil
}

func (c *client) initialize() {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":"init"}`)
	if m := c.recv(); m["result"] == nil {
		c.t.Fatalf("initialize failed: %v", m)
	}
}
