//go:build unix

package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The traces of docs/protocol.md, "Metrics and traces": the real daemon exports
// over OTLP/HTTP to a collector in the test, which decodes the protobuf.

// collector is an OTLP/HTTP trace receiver under base; each request's spans go to
// spans. answer, when set, decides the response (and may block).
type collector struct {
	srv      *httptest.Server
	base     string
	spans    chan *tracepb.Span
	raw      chan []byte   // each request's decoded body
	hits     chan struct{} // a token per request
	mu       sync.Mutex
	resource []*commonpb.KeyValue
	answer   func(w http.ResponseWriter)
}

func newCollector(t *testing.T, answer func(w http.ResponseWriter)) *collector {
	c := &collector{base: "/otel", spans: make(chan *tracepb.Span, 1000), raw: make(chan []byte, 100),
		hits: make(chan struct{}, 1000), answer: answer}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != c.base+"/v1/traces" {
			t.Errorf("collector: %s %s, want POST %s/v1/traces", r.Method, r.URL.Path, c.base)
			http.NotFound(w, r)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Errorf("collector: %v", err)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		select {
		case c.hits <- struct{}{}:
		default:
		}
		if c.answer != nil {
			c.answer(w)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Errorf("collector: undecodable request: %v", err)
			return
		}
		select {
		case c.raw <- b:
		default:
		}
		for _, rs := range req.ResourceSpans {
			c.mu.Lock()
			c.resource = rs.GetResource().GetAttributes()
			c.mu.Unlock()
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans <- s
				}
			}
		}
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) endpoint() string { return c.srv.URL + c.base }

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch {
		case v.GetArrayValue() != nil:
			var parts []string
			for _, e := range v.GetArrayValue().GetValues() {
				parts = append(parts, e.GetStringValue())
			}
			m[kv.Key] = strings.Join(parts, ",")
		case v.GetStringValue() != "":
			m[kv.Key] = v.GetStringValue()
		default:
			m[kv.Key] = fmt.Sprint(v.GetIntValue())
		}
	}
	return m
}

func telemetryConfig(endpoint string) string {
	return fmt.Sprintf("[telemetry]\notlp_endpoint = %q\n\n[agents.default]\nprovider = \"echo\"\nautonomy = \"full\"\n", endpoint)
}

func TestTracesReachAnOTLPCollectorWithTheGenAIAttributesAndNoText(t *testing.T) {
	col := newCollector(t, nil)
	h := home(t)
	writeConfig(t, h, telemetryConfig(col.endpoint()))
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	sid := c.must("session/new", `{"agentAlias":"default"}`)["sessionId"].(string)
	const secret = "hush-prompt-91c2"
	r := c.must("session/prompt", `{"sessionId":"`+sid+`","prompt":"`+secret+`\n/tool list_dir {}"}`)
	if r["stopReason"] != "end_turn" {
		t.Fatalf("turn: %v", r)
	}

	// One turn with a tool: its span, two model calls (the tool call, the answer)
	// and one tool call.
	byName := map[string][]*tracepb.Span{}
	deadline := time.After(30 * time.Second)
	for len(byName["invoke_agent default"]) < 1 || len(byName["chat echo"]) < 2 || len(byName["execute_tool list_dir"]) < 1 {
		select {
		case s := <-col.spans:
			byName[s.Name] = append(byName[s.Name], s)
		case <-deadline:
			t.Fatalf("spans received within 30 s: %v", byName)
		}
	}
	turn := byName["invoke_agent default"][0]
	ta := attrs(turn.Attributes)
	for k, v := range map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "echo",
		"gen_ai.provider.name": "echo", "gen_ai.agent.name": "default", "gen_ai.response.finish_reasons": "end_turn"} {
		if ta[k] != v {
			t.Errorf("turn span %s = %q, want %q (all: %v)", k, ta[k], v, ta)
		}
	}
	if ta["gen_ai.usage.input_tokens"] == "" || ta["gen_ai.usage.input_tokens"] == "0" || ta["gen_ai.usage.output_tokens"] == "" {
		t.Errorf("turn span usage: %v", ta)
	}
	for _, s := range byName["chat echo"] {
		a := attrs(s.Attributes)
		if a["gen_ai.operation.name"] != "chat" || a["gen_ai.request.model"] != "echo" || a["gen_ai.provider.name"] != "echo" ||
			a["gen_ai.usage.input_tokens"] == "" || a["gen_ai.usage.output_tokens"] == "" {
			t.Errorf("model call span attributes: %v", a)
		}
		if s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("model call span kind %v, want client", s.Kind)
		}
	}
	tool := byName["execute_tool list_dir"][0]
	if a := attrs(tool.Attributes); a["gen_ai.operation.name"] != "execute_tool" || a["gen_ai.tool.name"] != "list_dir" {
		t.Errorf("tool span attributes: %v", a)
	}
	for _, s := range append(byName["chat echo"], tool) {
		if !bytes.Equal(s.TraceId, turn.TraceId) || !bytes.Equal(s.ParentSpanId, turn.SpanId) {
			t.Errorf("span %s is not a child of the turn's span", s.Name)
		}
	}
	col.mu.Lock()
	res := attrs(col.resource)
	col.mu.Unlock()
	if res["service.name"] != "zeroclaw" {
		t.Errorf("resource %v, want service.name zeroclaw", res)
	}
	// No prompt, no output, no session id, no path: in no attribute of any request.
	for {
		select {
		case b := <-col.raw:
			for _, bad := range []string{secret, "echo: ", sid, h} {
				if bytes.Contains(b, []byte(bad)) {
					t.Errorf("an OTLP request carries %q", bad)
				}
			}
			continue
		default:
		}
		break
	}
}

func TestAStalledCollectorNeverHoldsATurn(t *testing.T) {
	holding := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	col := newCollector(t, func(w http.ResponseWriter) {
		once.Do(func() { close(holding) })
		<-release // the export waits here, as on a collector that never answers
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	defer close(release)
	h := home(t)
	writeConfig(t, h, telemetryConfig(col.endpoint()))
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	sid := c.must("session/new", `{"agentAlias":"default"}`)["sessionId"].(string)
	prompt := func(i int) {
		t.Helper()
		r := c.must("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":"turn %d\n/tool list_dir {}"}`, sid, i))
		if r["stopReason"] != "end_turn" {
			t.Fatalf("turn %d: %v", i, r)
		}
	}
	prompt(0)
	select {
	case <-holding:
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon sent no spans within 30 s")
	}
	// The exporter is stuck in a request the collector holds: every turn still ends,
	// its spans queued or dropped, never waited for.
	for i := 1; i <= 30; i++ {
		prompt(i)
	}
}

func TestARefusingCollectorCostsDroppedSpansAndOneWarning(t *testing.T) {
	col := newCollector(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) })
	h := home(t)
	writeConfig(t, h, telemetryConfig(col.endpoint()))
	d := startDaemon(t, h, nil)
	c := dial(t, d.socket)
	c.initialize()
	sid := c.must("session/new", `{"agentAlias":"default"}`)["sessionId"].(string)
	const warning = "telemetry: spans dropped"
	prompt := func() {
		t.Helper()
		if r := c.must("session/prompt", `{"sessionId":"`+sid+`","prompt":"hello"}`); r["stopReason"] != "end_turn" {
			t.Fatalf("turn: %v", r)
		}
	}
	prompt()
	text, ok := d.stderr.await(func(s string) bool { return strings.Contains(s, warning) }, d.exited, 30*time.Second)
	if !ok {
		t.Fatalf("no warning about dropped spans within 30 s:\n%s", text)
	}
	warned := time.Now()
	for len(col.hits) > 0 { // the requests before the warning
		<-col.hits
	}
	// More spans, more refused requests: still the one warning within the minute.
	for range 2 {
		prompt()
		select {
		case <-col.hits:
		case <-time.After(30 * time.Second):
			t.Fatal("the daemon stopped exporting after the first refusal")
		}
	}
	if n := strings.Count(d.stderr.String(), warning); n != 1 && time.Since(warned) < 50*time.Second {
		t.Errorf("%d warnings about dropped spans within a minute, want 1", n)
	}
}
