package metrics

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestAFullSpanQueueDropsInsteadOfWaiting(t *testing.T) {
	exp := &blockedExporter{release: make(chan struct{})}
	q := newSpanQueue(exp, slog.New(slog.NewTextHandler(io.Discard, nil)))
	span := tracetest.SpanStub{Name: "s"}.Snapshot()
	// The exporter blocks in its first request; the queue fills behind it, and
	// every OnEnd past its capacity returns at once, the span dropped.
	for range QueueSpans + batchSpans + 100 {
		q.OnEnd(span)
	}
	q.warn.mu.Lock()
	dropped := q.warn.pending
	q.warn.mu.Unlock()
	if dropped == 0 && q.warn.warned.Load() == 0 {
		t.Fatal("no span dropped past the queue's capacity")
	}
	close(exp.release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

type blockedExporter struct {
	release chan struct{}
	spans   atomic.Int64
}

func (e *blockedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	<-e.release
	e.spans.Add(int64(len(spans)))
	return nil
}

func (e *blockedExporter) Shutdown(context.Context) error { return nil }

func TestDroppedSpansWarnAtMostOnceAMinute(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	w := dropWarning{now: func() time.Time { return now }}
	if n, ok := w.add(3); !ok || n != 3 {
		t.Fatalf("first drop: %d, %v; want a warning for 3", n, ok)
	}
	for range 10 {
		now = now.Add(5 * time.Second)
		if _, ok := w.add(2); ok && now.Sub(time.Unix(1_000_000, 0)) < DropWarnPeriod {
			t.Fatalf("a second warning %s after the first", now.Sub(time.Unix(1_000_000, 0)))
		}
	}
	now = now.Add(15 * time.Second) // 65 s after the first
	if n, ok := w.add(1); !ok || n != 2*10+1 {
		t.Fatalf("after a minute: %d, %v; want a warning for the 21 dropped since", n, ok)
	}
}

func TestClientNamedLabelValuesAreBounded(t *testing.T) {
	m := New(Sources{})
	for i := range maxValues + 50 {
		m.ToolCall(fmt.Sprintf("client_tool_%d", i), true, time.Millisecond)
	}
	m.ToolCall(strings.Repeat("x", 200), true, time.Millisecond)
	_, text := m.Scrape()
	if n := strings.Count(text, "zeroclaw_tool_calls_total{"); n != maxValues+1 {
		t.Errorf("%d tool series, want %d and one \"other\"", n, maxValues+1)
	}
	if !strings.Contains(text, `zeroclaw_tool_calls_total{success="true",tool="other"} 51`) {
		t.Error("the values past the bound are not counted under other")
	}
}

func TestOutcomesNameTheErrorCodes(t *testing.T) {
	m := New(Sources{})
	r := m.Method("session/prompt")
	start := time.Now()
	r.Done(0, start, 0)
	r.Done(1, start, -32602)
	r.Done(2, start, -32603)
	r.Done(Shards+3, start, -1) // not one of the daemon's
	_, text := m.Scrape()
	for _, want := range []string{
		`zeroclaw_rpc_requests_total{method="session/prompt",outcome="ok"} 1`,
		`zeroclaw_rpc_requests_total{method="session/prompt",outcome="invalid_params"} 1`,
		`zeroclaw_rpc_requests_total{method="session/prompt",outcome="internal_error"} 1`,
		`zeroclaw_rpc_requests_total{method="session/prompt",outcome="error"} 1`,
		`zeroclaw_rpc_duration_seconds_count{method="session/prompt"} 4`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s", want)
		}
	}
}

func TestANilMetricsRecordsNothing(t *testing.T) {
	var m *Metrics
	m.Method("status").Done(0, time.Now(), 0)
	m.Connected("unix")()
	m.Lagged()
	m.TurnEnded("end_turn", time.Second)
	m.ModelCall("echo", "echo", true, 0, 1, 1)
	m.ToolCall("shell", true, time.Second)
}

func TestCheckEndpoint(t *testing.T) {
	for _, good := range []string{"http://127.0.0.1:4318", "https://collector.example.com/otel/"} {
		if err := CheckEndpoint(good); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:4318", "ftp://x", "http://", "http://x/?a=b", "http://x/#f"} {
		if CheckEndpoint(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := TracesURL("http://c:4318/otel/"); got != "http://c:4318/otel/v1/traces" {
		t.Errorf("TracesURL: %s", got)
	}
}
