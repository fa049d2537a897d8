package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Listener is the opt-in HTTP listener of [metrics] listen: GET /metrics serves
// the registry in the Prometheus text format; every other path is 404.
type Listener struct {
	ln  net.Listener
	srv *http.Server
	log *slog.Logger
}

// Listen binds addr (host:port; port 0 picks a free one, which Addr tells) and
// serves m there until Close. A port already taken fails here, naming the key.
func Listen(addr string, m *Metrics, log *slog.Logger) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen = %q: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	l := &Listener{ln: ln, log: log, srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}
	go func() {
		if err := l.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the metrics listener stopped", "err", err)
		}
	}()
	return l, nil
}

// Addr is the address the listener is bound to.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Close stops the listener, letting scrapes in flight finish within ctx.
func (l *Listener) Close(ctx context.Context) error {
	err := l.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return l.srv.Close()
	}
	return err
}
