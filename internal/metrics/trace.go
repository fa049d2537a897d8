package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Limits of the span queue between the turns and the exporter: a turn only ever
// puts a span in a channel or drops it, whatever the collector does.
const (
	QueueSpans     = 2048             // spans waiting for export; more are dropped
	batchSpans     = 512              // spans per OTLP request at most
	BatchInterval  = time.Second      // a partial batch waits this long
	exportTimeout  = 10 * time.Second // one OTLP request at most
	DropWarnPeriod = time.Minute      // one warning about dropped spans at most per period
)

// Tracer exports the spans of turns, model calls and tool calls over OTLP/HTTP
// ([telemetry] otlp_endpoint). A nil *Tracer exports nothing.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	queue    *spanQueue
}

// CheckEndpoint tells whether endpoint is a base URL spans can be POSTed under
// (<endpoint>/v1/traces): http or https, a host, no query or fragment.
func CheckEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("want an http:// or https:// base URL, such as http://127.0.0.1:4318")
	}
	return nil
}

// TracesURL is where spans are POSTed for the base URL endpoint, as the
// OTEL_EXPORTER_OTLP_ENDPOINT variable is read.
func TracesURL(endpoint string) string { return strings.TrimRight(endpoint, "/") + "/v1/traces" }

// NewTracer starts exporting to the OTLP/HTTP collector at the base URL endpoint,
// with the OTEL_EXPORTER_OTLP_* variables of getenv (nil: the process's) that
// apply beside it (otlp.go). Nothing is sent until the first span ends; an
// unreachable collector only costs dropped spans and a warning in log at most
// once a minute.
func NewTracer(endpoint, serviceVersion string, getenv func(string) string, log *slog.Logger) (*Tracer, error) {
	if err := CheckEndpoint(endpoint); err != nil {
		return nil, fmt.Errorf("telemetry.otlp_endpoint: %w", err)
	}
	exp, err := newOTLPExporter(TracesURL(endpoint), serviceVersion, getenv)
	if err != nil {
		return nil, fmt.Errorf("telemetry.otlp_endpoint: %w", err)
	}
	q := newSpanQueue(exp, log)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(q),
		sdktrace.WithResource(resource.NewSchemaless(
			attribute.String("service.name", "zeroclaw"),
			attribute.String("service.version", serviceVersion),
		)),
	)
	return &Tracer{provider: tp, tracer: tp.Tracer("github.com/zeroclaw-labs/zeroclaw-go/internal/metrics"), queue: q}, nil
}

// Close exports what is queued, waiting at most until ctx ends, and stops.
func (t *Tracer) Close(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// spanQueue is the span processor: ended spans go into a bounded channel (or are
// dropped when it is full), and one goroutine sends them in batches.
type spanQueue struct {
	exp   sdktrace.SpanExporter
	spans chan sdktrace.ReadOnlySpan
	log   *slog.Logger
	warn  dropWarning

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func newSpanQueue(exp sdktrace.SpanExporter, log *slog.Logger) *spanQueue {
	q := &spanQueue{exp: exp, spans: make(chan sdktrace.ReadOnlySpan, QueueSpans), log: log,
		stop: make(chan struct{}), done: make(chan struct{}), warn: dropWarning{now: time.Now}}
	go q.run()
	return q
}

func (q *spanQueue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd never waits: a full queue drops the span.
func (q *spanQueue) OnEnd(s sdktrace.ReadOnlySpan) {
	select {
	case q.spans <- s:
	default:
		q.dropped(1, "the span queue is full")
	}
}

// ForceFlush does nothing: the daemon never forces a flush (Shutdown sends what
// is queued), and a forced one would make its caller wait on the collector.
func (q *spanQueue) ForceFlush(context.Context) error { return nil }

func (q *spanQueue) Shutdown(ctx context.Context) error {
	q.stopOnce.Do(func() { close(q.stop) })
	select {
	case <-q.done:
	case <-ctx.Done():
	}
	return q.exp.Shutdown(ctx)
}

func (q *spanQueue) run() {
	defer close(q.done)
	batch := make([]sdktrace.ReadOnlySpan, 0, batchSpans)
	tick := time.NewTicker(BatchInterval)
	defer tick.Stop()
	for {
		select {
		case s := <-q.spans:
			if batch = append(batch, s); len(batch) == batchSpans {
				batch = q.export(batch)
			}
		case <-tick.C:
			batch = q.export(batch)
		case <-q.stop:
			for {
				select {
				case s := <-q.spans:
					if batch = append(batch, s); len(batch) == batchSpans {
						batch = q.export(batch)
					}
				default:
					q.export(batch)
					return
				}
			}
		}
	}
}

func (q *spanQueue) export(batch []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	if len(batch) == 0 {
		return batch
	}
	ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
	err := q.exp.ExportSpans(ctx, batch)
	cancel()
	if re, ok := errors.AsType[*rejectedError](err); ok {
		q.dropped(re.Rejected, err.Error())
	} else if err != nil {
		q.dropped(len(batch), err.Error())
	}
	clear(batch)
	return batch[:0]
}

func (q *spanQueue) dropped(n int, why string) {
	if total, ok := q.warn.add(n); ok {
		q.log.Warn("telemetry: spans dropped; the OTLP collector is slow or unreachable", "spans", total, "reason", why)
	}
}

// dropWarning counts dropped spans and allows one warning per DropWarnPeriod,
// which reports the spans dropped since the last one.
type dropWarning struct {
	now     func() time.Time
	mu      sync.Mutex
	pending int
	last    time.Time
	warned  atomic.Int64 // warnings given, for tests
}

func (w *dropWarning) add(n int) (total int, warn bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending += n
	now := w.now()
	if !w.last.IsZero() && now.Sub(w.last) < DropWarnPeriod {
		return 0, false
	}
	w.last = now
	total, w.pending = w.pending, 0
	w.warned.Add(1)
	return total, true
}
