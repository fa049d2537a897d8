package metrics

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Sources are what the gauges read at scrape time. Each must answer at once,
// without taking a session's lock; a nil source reads as nothing (no series).
type Sources struct {
	// ActiveSessions is the number of live sessions (an atomic of the session layer).
	ActiveSessions func() int
	// MCPServers counts the configured MCP servers by state.
	MCPServers func() map[string]int
	// StoreFiles are the store's files by label ("db", "wal"), stat'ed at scrape.
	StoreFiles map[string]string
}

// Metrics is the daemon's registry with every collector of docs/protocol.md,
// "Metrics and traces". A nil *Metrics is valid and records nothing; every method
// is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	llmRequests  *prometheus.CounterVec // provider, model, success
	tokensIn     prometheus.Counter
	tokensOut    prometheus.Counter
	toolCalls    *prometheus.CounterVec // tool, success
	turns        *prometheus.CounterVec // stop_reason
	lagged       prometheus.Counter
	turnDuration prometheus.Histogram
	firstToken   prometheus.Histogram
	toolDuration *prometheus.HistogramVec // tool
	connections  *prometheus.GaugeVec     // transport
	rpc          rpcCollector             // the RPC families (rpc.go)

	// The label values that come from configuration or from clients (tool and
	// model names) are bounded: past maxValues distinct ones, "other".
	tools, models, providers labelSet

	handler http.Handler
}

// New builds a registry with the daemon's collectors and the Go runtime's and the
// process's.
func New(src Sources) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.llmRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zeroclaw_llm_requests_total", Help: "Model calls, by provider, model and whether they succeeded.",
	}, []string{"provider", "model", "success"})
	m.tokensIn = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zeroclaw_tokens_input_total", Help: "Input tokens the models reported, all calls.",
	})
	m.tokensOut = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zeroclaw_tokens_output_total", Help: "Output tokens the models reported, all calls.",
	})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zeroclaw_tool_calls_total", Help: "Tool calls run, by tool and whether they succeeded.",
	}, []string{"tool", "success"})
	m.turns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zeroclaw_turns_total", Help: "Turns ended, by stop reason.",
	}, []string{"stop_reason"})
	m.lagged = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zeroclaw_lagged_total", Help: "Connections detached from a session because they fell behind (lagged).",
	})
	m.turnDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "zeroclaw_turn_duration_seconds", Help: "Turns, from start to end.",
		Buckets: prometheus.ExponentialBuckets(0.005, 3, 12), // 5 ms .. 15 min
	})
	m.firstToken = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "zeroclaw_llm_first_token_seconds", Help: "Model calls, from the request to the first streamed output.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10), // 5 ms .. 19 min
	})
	m.toolDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "zeroclaw_tool_duration_seconds", Help: "Tool calls, by tool, from start to result.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms .. 4 min
	}, []string{"tool"})
	m.connections = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "zeroclaw_connections", Help: "Open connections, by transport (unix, pipe, wss).",
	}, []string{"transport"})
	m.reg.MustRegister(m.llmRequests, m.tokensIn, m.tokensOut, m.toolCalls, m.turns, m.lagged,
		m.turnDuration, m.firstToken, m.toolDuration, m.connections, &m.rpc,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&gauges{src: src})
	m.tools.limit, m.models.limit, m.providers.limit = maxValues, maxValues, maxValues
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

// Handler serves the Prometheus exposition at /metrics.
func (m *Metrics) Handler() http.Handler { return m.handler }

// TextContentType is the content type of Scrape's text: Prometheus text format 0.0.4.
const TextContentType = "text/plain; version=0.0.4; charset=utf-8"

// Scrape renders what /metrics serves, in the text format (metrics/scrape).
func (m *Metrics) Scrape() (contentType, text string) {
	w := &bufferWriter{header: http.Header{}}
	req, _ := http.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	m.handler.ServeHTTP(w, req)
	ct := w.header.Get("Content-Type")
	if ct == "" {
		ct = TextContentType
	}
	return ct, w.buf.String()
}

// bufferWriter is the http.ResponseWriter Scrape renders into.
type bufferWriter struct {
	header http.Header
	buf    bytes.Buffer
}

func (w *bufferWriter) Header() http.Header         { return w.header }
func (w *bufferWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }
func (w *bufferWriter) WriteHeader(int)             {}

// Lagged counts one connection detached from a session as lagged.
func (m *Metrics) Lagged() {
	if m != nil {
		m.lagged.Inc()
	}
}

// Connected counts a connection opened on transport ("unix", "pipe", "wss");
// the function it returns counts it closed.
func (m *Metrics) Connected(transport string) (closed func()) {
	if m == nil {
		return func() {}
	}
	g := m.connections.WithLabelValues(transport)
	g.Inc()
	return g.Dec
}

// TurnEnded records a turn that ended with stopReason after d.
func (m *Metrics) TurnEnded(stopReason string, d time.Duration) {
	if m == nil {
		return
	}
	m.turns.WithLabelValues(stopReason).Inc()
	m.turnDuration.Observe(d.Seconds())
}

// ModelCall records one model call: its provider and model, whether it succeeded,
// the time to its first output (negative: none came), and the tokens it used.
func (m *Metrics) ModelCall(provider, model string, ok bool, firstToken time.Duration, in, out int) {
	if m == nil {
		return
	}
	m.llmRequests.WithLabelValues(m.providers.value(provider), m.models.value(model), strconv.FormatBool(ok)).Inc()
	if firstToken >= 0 {
		m.firstToken.Observe(firstToken.Seconds())
	}
	if in > 0 {
		m.tokensIn.Add(float64(in))
	}
	if out > 0 {
		m.tokensOut.Add(float64(out))
	}
}

// ToolCall records one tool call that ran for d; tool "" is a tool the model
// named that does not exist (label "unknown").
func (m *Metrics) ToolCall(tool string, ok bool, d time.Duration) {
	if m == nil {
		return
	}
	name := "unknown"
	if tool != "" {
		name = m.tools.value(tool)
	}
	m.toolCalls.WithLabelValues(name, strconv.FormatBool(ok)).Inc()
	m.toolDuration.WithLabelValues(name).Observe(d.Seconds())
}

// maxValues bounds the distinct values of a label fed by names from configuration
// or clients (a client declares its own tools): past it, "other".
const maxValues = 256

// labelSet admits at most limit distinct label values.
type labelSet struct {
	mu    sync.Mutex
	seen  map[string]struct{}
	limit int
}

func (l *labelSet) value(v string) string {
	if v == "" {
		return "none"
	}
	if len(v) > 128 {
		return "other"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[v]; ok {
		return v
	}
	if len(l.seen) >= l.limit {
		return "other"
	}
	if l.seen == nil {
		l.seen = make(map[string]struct{})
	}
	l.seen[v] = struct{}{}
	return v
}
