//go:build unix

package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The traces of docs/protocol.md, "Metrics and traces": the real daemon exports
// over OTLP/HTTP to a collector in the test, which decodes OTLP's JSON encoding.

// otlpRequest is the ExportTraceServiceRequest of OTLP/HTTP JSON, as much of it as
// the tests read; an unknown field is an error (decodeOTLP).
type otlpRequest struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []otlpKV `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Scope struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"scope"`
			Spans []*otlpSpan `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type otlpSpan struct {
	TraceID      string   `json:"traceId"` // hex
	SpanID       string   `json:"spanId"`
	ParentSpanID string   `json:"parentSpanId"`
	Flags        uint32   `json:"flags"`
	Name         string   `json:"name"`
	Kind         int      `json:"kind"`              // OTLP's SpanKind: 1 internal, 3 client
	Start        string   `json:"startTimeUnixNano"` // decimal nanoseconds
	End          string   `json:"endTimeUnixNano"`
	Attributes   []otlpKV `json:"attributes"`
	Status       *struct {
		Code    int    `json:"code"` // OTLP's: 1 ok, 2 error
		Message string `json:"message"`
	} `json:"status"`
}

type otlpKV struct {
	Key   string    `json:"key"`
	Value otlpValue `json:"value"`
}

type otlpValue struct {
	StringValue *string     `json:"stringValue"`
	IntValue    json.Number `json:"intValue"` // a string in proto3 JSON
	DoubleValue *float64    `json:"doubleValue"`
	BoolValue   *bool       `json:"boolValue"`
	ArrayValue  *struct {
		Values []otlpValue `json:"values"`
	} `json:"arrayValue"`
}

const (
	otlpKindInternal = 1
	otlpKindClient   = 3
)

func decodeOTLP(b []byte) (*otlpRequest, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var req otlpRequest
	if err := dec.Decode(&req); err != nil {
		return nil, err
	}
	return &req, nil
}

// collector is an OTLP/HTTP trace receiver under base; each request's spans go to
// spans. answer, when set, decides the response (and may block).
type collector struct {
	srv      *httptest.Server
	base     string
	spans    chan *otlpSpan
	raw      chan []byte   // each request's decoded body
	hits     chan struct{} // a token per request
	mu       sync.Mutex
	resource []otlpKV
	answer   func(w http.ResponseWriter)
}

func newCollector(t *testing.T, answer func(w http.ResponseWriter)) *collector {
	c := &collector{base: "/otel", spans: make(chan *otlpSpan, 1000), raw: make(chan []byte, 100),
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
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("collector: Content-Type %q, want application/json", ct)
		}
		req, err := decodeOTLP(b)
		if err != nil {
			t.Errorf("collector: undecodable request: %v: %s", err, b)
			return
		}
		select {
		case c.raw <- b:
		default:
		}
		for _, rs := range req.ResourceSpans {
			c.mu.Lock()
			c.resource = rs.Resource.Attributes
			c.mu.Unlock()
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans <- s
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) endpoint() string { return c.srv.URL + c.base }

func attrs(kvs []otlpKV) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.String()
	}
	return m
}

// String is the value as the tests compare it: a string, a decimal integer, an
// array's elements joined by commas.
func (v otlpValue) String() string {
	switch {
	case v.ArrayValue != nil:
		var parts []string
		for _, e := range v.ArrayValue.Values {
			parts = append(parts, e.String())
		}
		return strings.Join(parts, ",")
	case v.StringValue != nil:
		return *v.StringValue
	case v.IntValue != "":
		return v.IntValue.String()
	case v.DoubleValue != nil:
		return fmt.Sprint(*v.DoubleValue)
	case v.BoolValue != nil:
		return fmt.Sprint(*v.BoolValue)
	}
	return ""
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
	byName := map[string][]*otlpSpan{}
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
		if s.Kind != otlpKindClient {
			t.Errorf("model call span kind %v, want client (3)", s.Kind)
		}
	}
	tool := byName["execute_tool list_dir"][0]
	if a := attrs(tool.Attributes); a["gen_ai.operation.name"] != "execute_tool" || a["gen_ai.tool.name"] != "list_dir" {
		t.Errorf("tool span attributes: %v", a)
	}
	if turn.Kind != otlpKindInternal || tool.Kind != otlpKindInternal {
		t.Errorf("turn and tool span kinds %d, %d, want internal (1)", turn.Kind, tool.Kind)
	}
	if len(turn.TraceID) != 32 || len(turn.SpanID) != 16 || turn.ParentSpanID != "" {
		t.Errorf("turn span ids: trace %q span %q parent %q, want 32 and 16 hex digits and no parent",
			turn.TraceID, turn.SpanID, turn.ParentSpanID)
	}
	if turn.Start == "" || turn.End < turn.Start || len(turn.End) != len(turn.Start) {
		t.Errorf("turn span times %q to %q", turn.Start, turn.End)
	}
	for _, s := range append(byName["chat echo"], tool) {
		if s.TraceID != turn.TraceID || s.ParentSpanID != turn.SpanID {
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
