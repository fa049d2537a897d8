package wss

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// Config builds a Listener. Addr, Certificate and Serve are required.
type Config struct {
	Addr        string // host:port to listen on
	Certificate Certificate
	// Serve serves one upgraded connection until it closes; remoteAddr is the peer's
	// ip:port. It is called on a goroutine of its own per connection.
	Serve func(f jsonrpc.Framer, remoteAddr string)
	// AllowedOrigins returns the browser origins that may connect ([wss]
	// allowed_origins, read at each upgrade so a config change applies). nil: none.
	AllowedOrigins func() []string
	Logger         *slog.Logger // nil means slog.Default()

	// Keepalive, PingAfter and PongWait when zero; tests shorten them.
	pingAfter, pongWait time.Duration
}

// Listener accepts TLS WebSocket connections.
type Listener struct {
	cfg  Config
	log  *slog.Logger
	ln   net.Listener
	http *http.Server

	mu      sync.Mutex
	serving int           // upgraded connections being served
	idle    chan struct{} // closed when serving drops to 0 while Wait waits
	done    chan struct{} // closed when the http server's Serve returns
}

// Listen starts listening on cfg.Addr and serving in the background.
func Listen(cfg Config) (*Listener, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.pingAfter <= 0 {
		cfg.pingAfter = PingAfter
	}
	if cfg.pongWait <= 0 {
		cfg.pongWait = PongWait
	}
	tcp, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	l := &Listener{cfg: cfg, log: cfg.Logger, done: make(chan struct{})}
	l.ln = tls.NewListener(tcp, &tls.Config{
		Certificates: []tls.Certificate{cfg.Certificate.TLS},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"http/1.1"}, // a WebSocket upgrade is HTTP/1.1
	})
	l.http = &http.Server{
		Handler:           http.HandlerFunc(l.upgrade),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(l.done)
		l.http.Serve(l.ln)
	}()
	return l, nil
}

// Addr is the address the listener accepts on (with the real port when 0 was asked).
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Fingerprint is the served certificate's SHA-256 fingerprint, lowercase hex.
func (l *Listener) Fingerprint() string { return l.cfg.Certificate.Fingerprint }

// Close stops accepting, and drops connections not upgraded yet. Upgraded
// connections are not closed here: they belong to the server that serves them (its
// Shutdown ends them); Wait waits for them.
func (l *Listener) Close() error {
	err := l.http.Close()
	<-l.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Wait waits, at most until ctx ends, until every upgraded connection has been served
// and its closing handshake is over.
func (l *Listener) Wait(ctx context.Context) error {
	// A count under a mutex, not a WaitGroup: a connection may be upgraded while
	// Wait runs (its handler was past the accept when Close returned), and a
	// WaitGroup's Add from zero must not race with its Wait.
	l.mu.Lock()
	if l.serving == 0 {
		l.mu.Unlock()
		return nil
	}
	if l.idle == nil {
		l.idle = make(chan struct{})
	}
	idle := l.idle
	l.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// upgrade refuses browser origins not allowed, upgrades, and serves the connection.
func (l *Listener) upgrade(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" && !l.originAllowed(origin) {
		// A browser page may open a WebSocket to any address, with its user's cookies
		// and network position; only origins the operator listed may do so.
		l.log.Warn("WebSocket upgrade refused: origin not allowed", "remote", r.RemoteAddr, "origin", origin)
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		InsecureSkipVerify: true, // the Origin is checked above, more strictly
	})
	if err != nil {
		l.log.Info("WebSocket upgrade failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	l.mu.Lock()
	l.serving++
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		if l.serving--; l.serving == 0 && l.idle != nil {
			close(l.idle)
			l.idle = nil
		}
		l.mu.Unlock()
	}()
	f := NewFramer(ws)
	var keepalive sync.WaitGroup
	keepalive.Go(func() {
		f.Keepalive(l.cfg.pingAfter, l.cfg.pongWait, func() {
			l.log.Info("closing WebSocket: no pong", "remote", r.RemoteAddr, "after", l.cfg.pongWait)
		})
	})
	l.cfg.Serve(f, r.RemoteAddr)
	f.Close()
	<-f.Done()
	keepalive.Wait()
}

func (l *Listener) originAllowed(origin string) bool {
	if l.cfg.AllowedOrigins == nil {
		return false
	}
	origin = strings.TrimSuffix(origin, "/")
	return slices.ContainsFunc(l.cfg.AllowedOrigins(), func(o string) bool {
		return strings.EqualFold(strings.TrimSuffix(o, "/"), origin)
	})
}
