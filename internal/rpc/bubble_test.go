package rpc

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// startBubbleServer is startServerWith for a test inside a synctest bubble: the same
// Server, session manager and store, with connections over net.Pipe (real sockets
// are not bubble-compatible; net.Pipe and its deadlines are). The server's timers
// (handshake, frame, write stall, queue wait, approval expiry) then run on the
// bubble's clock, so a test sees a rule hold up to the last instant before its
// deadline and take effect at it, exactly, without waiting for real time.
//
// Call it from inside synctest.Test; the server is shut down, inside the bubble,
// when the test ends. Tools that start processes (shell) are not for bubbles: a
// process runs on the real clock.
func startBubbleServer(t *testing.T, cfg Config, conf config.Config, opts session.Options) *harness {
	t.Helper()
	dir := t.TempDir()
	cfg.DaemonUID = os.Getuid()
	cfg.DataDir, cfg.Endpoint = dir, "pipe"
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
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Store = st
	cfg.Sessions = session.NewManager(catalog, opts)
	cfg.Store = st
	h := &harness{srv: NewServer(cfg)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var clients []net.Conn
	h.pipe = func(t *testing.T) net.Conn {
		c, s := net.Pipe()
		mu.Lock()
		clients = append(clients, c)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.srv.ServeStream(s, Peer{Label: "pipe:test", UID: os.Getuid(), PID: -1})
		}()
		return c
	}
	h.stopFn = sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cfg.Sessions.Shutdown(ctx); err != nil {
			t.Errorf("sessions shutdown: %v", err)
		}
		if err := h.srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		mu.Lock()
		for _, c := range clients {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
		st.Close()
	})
	t.Cleanup(h.stopFn)
	return h
}
