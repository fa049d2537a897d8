package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/mcp"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/metrics"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/version"
)

// telemetry is what the daemon tells an operator (docs/protocol.md, "Metrics and
// traces"): the registry every part reports to, the optional /metrics listener and
// the optional OTLP trace export.
type telemetry struct {
	metrics  *metrics.Metrics
	tracer   *metrics.Tracer   // nil: no [telemetry] otlp_endpoint
	listener *metrics.Listener // nil: no [metrics] listen
	// sessions is set once the session manager is built, before anything scrapes.
	sessions *session.Manager
}

// startTelemetry builds the registry and starts the exporter; the listener starts
// with serve, once the gauges' sources exist.
func startTelemetry(cfg config.Config, dataDir string, servers *mcp.Manager, getenv func(string) string, log *slog.Logger) (*telemetry, error) {
	t := &telemetry{}
	db := filepath.Join(dataDir, "sessions.db")
	t.metrics = metrics.New(metrics.Sources{
		ActiveSessions: func() int { return t.sessions.Live() },
		MCPServers: func() map[string]int {
			counts := map[string]int{}
			for _, s := range servers.Status() {
				counts[s.State]++
			}
			return counts
		},
		StoreFiles: map[string]string{"db": db, "wal": db + "-wal"},
	})
	if e := cfg.Telemetry.OTLPEndpoint; e != "" {
		tr, err := metrics.NewTracer(e, version.Version, getenv, log)
		if err != nil {
			return nil, err
		}
		t.tracer = tr
		log.Info("exporting traces over OTLP/HTTP") // not the URL: it may hold credentials
	}
	return t, nil
}

// serve starts the [metrics] listen listener, if configured; a port already
// taken fails the start.
func (t *telemetry) serve(cfg config.Config, log *slog.Logger) error {
	if cfg.Metrics.Listen == "" {
		return nil
	}
	l, err := metrics.Listen(cfg.Metrics.Listen, t.metrics, log)
	if err != nil {
		return fmt.Errorf("starting the metrics listener: %w", err)
	}
	t.listener = l
	log.Info("serving metrics", "addr", l.Addr().String(), "path", "/metrics")
	return nil
}

// close stops the listener and sends the spans still queued, within a second or
// two: an unreachable collector never holds the exit for long.
func (t *telemetry) close(log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if t.listener != nil {
		if err := t.listener.Close(ctx); err != nil {
			log.Warn("closing the metrics listener", "err", err)
		}
	}
	if err := t.tracer.Close(ctx); err != nil {
		log.Warn("spans still queued at exit were dropped", "err", err)
	}
}
