package metrics

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// testSpans are a turn's span and a model call's under it, as the SDK hands them
// to an exporter, with one value of every attribute type the daemon may set.
func testSpans() []sdktrace.ReadOnlySpan {
	res := resource.NewSchemaless(attribute.String("service.name", "zeroclaw"))
	scope := instrumentation.Scope{Name: "github.com/zeroclaw-labs/zeroclaw-go/internal/metrics"}
	tid := trace.TraceID{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10}
	turn := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{0xa1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled})
	call := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{0xb1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled})
	start := time.Unix(1_700_000_000, 123_456_789)
	return tracetest.SpanStubs{
		{
			Name: "invoke_agent default", SpanContext: turn, SpanKind: trace.SpanKindInternal,
			StartTime: start, EndTime: start.Add(2 * time.Second),
			Attributes: []attribute.KeyValue{
				attribute.String("gen_ai.operation.name", "invoke_agent"),
				attribute.Int64("gen_ai.usage.input_tokens", 9_007_199_254_740_993), // past a float64's integers
				attribute.Float64("ratio", 1.5),
				attribute.Float64("nan", math.NaN()),
				attribute.Bool("flag", true),
				attribute.StringSlice("gen_ai.response.finish_reasons", []string{"end_turn"}),
				attribute.Int64Slice("ints", []int64{1, 2}),
			},
			Status:   sdktrace.Status{Code: codes.Error, Description: "error"},
			Resource: res, InstrumentationScope: scope,
		},
		{
			Name: "chat echo", SpanContext: call, Parent: turn, SpanKind: trace.SpanKindClient,
			StartTime: start.Add(time.Millisecond), EndTime: start.Add(time.Second),
			Attributes: []attribute.KeyValue{attribute.String("gen_ai.request.model", "echo")},
			Events:     []sdktrace.Event{{Name: "first_token", Time: start.Add(5 * time.Millisecond)}},
			Links:      []sdktrace.Link{{SpanContext: turn}},
			Status:     sdktrace.Status{Code: codes.Ok},
			Resource:   res, InstrumentationScope: scope,
		},
	}.Snapshots()
}

// The body is OTLP's JSON encoding: resourceSpans/scopeSpans/spans, hex ids,
// 64-bit integers as decimal strings, enums as integers, status codes as OTLP
// numbers them (not as the SDK does).
func TestSpansAreEncodedAsOTLPJSON(t *testing.T) {
	body, err := encodeSpans(testSpans())
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		ResourceSpans []struct {
			Resource   struct{ Attributes []map[string]any }
			ScopeSpans []struct {
				Scope struct{ Name string }
				Spans []map[string]any
			}
		}
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 1 {
		t.Fatalf("want one resource and one scope: %s", body)
	}
	rs := req.ResourceSpans[0]
	if got := jsonOf(rs.Resource.Attributes); got != `[{"key":"service.name","value":{"stringValue":"zeroclaw"}}]` {
		t.Errorf("resource: %s", got)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != "github.com/zeroclaw-labs/zeroclaw-go/internal/metrics" || len(ss.Spans) != 2 {
		t.Fatalf("scope: %s", body)
	}
	turn, call := ss.Spans[0], ss.Spans[1]
	start := time.Unix(1_700_000_000, 123_456_789).UnixNano()
	for k, want := range map[string]any{
		"traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "a102030405060708", "name": "invoke_agent default",
		"kind": 1.0, "startTimeUnixNano": strconv.FormatInt(start, 10),
		"endTimeUnixNano": strconv.FormatInt(start+2e9, 10), "flags": float64(0x101),
	} {
		if turn[k] != want {
			t.Errorf("turn span %s = %#v, want %#v", k, turn[k], want)
		}
	}
	if _, ok := turn["parentSpanId"]; ok {
		t.Error("a root span has a parentSpanId")
	}
	if got := jsonOf(turn["status"]); got != `{"code":2,"message":"error"}` {
		t.Errorf("turn status %s, want code 2 (error)", got)
	}
	wantAttrs := `[{"key":"gen_ai.operation.name","value":{"stringValue":"invoke_agent"}},` +
		`{"key":"gen_ai.usage.input_tokens","value":{"intValue":"9007199254740993"}},` +
		`{"key":"ratio","value":{"doubleValue":1.5}},` +
		`{"key":"nan","value":{"doubleValue":"NaN"}},` +
		`{"key":"flag","value":{"boolValue":true}},` +
		`{"key":"gen_ai.response.finish_reasons","value":{"arrayValue":{"values":[{"stringValue":"end_turn"}]}}},` +
		`{"key":"ints","value":{"arrayValue":{"values":[{"intValue":"1"},{"intValue":"2"}]}}}]`
	if got := jsonOf(turn["attributes"]); got != wantAttrs {
		t.Errorf("attributes\n got %s\nwant %s", got, wantAttrs)
	}
	// The exact integer, not a float64's nearest.
	if !strings.Contains(string(body), `"intValue":"9007199254740993"`) {
		t.Error("an int64 attribute lost precision")
	}
	if call["parentSpanId"] != "a102030405060708" || call["kind"] != 3.0 || call["traceId"] != turn["traceId"] {
		t.Errorf("model call span: %v", call)
	}
	if got := jsonOf(call["status"]); got != `{"code":1}` {
		t.Errorf("model call status %s, want code 1 (ok)", got)
	}
	if got := jsonOf(call["events"]); got != `[{"name":"first_token","timeUnixNano":"`+strconv.FormatInt(start+5e6, 10)+`"}]` {
		t.Errorf("events %s", got)
	}
	if got := jsonOf(call["links"]); got != `[{"flags":257,"spanId":"a102030405060708","traceId":"0102030405060708090a0b0c0d0e0f10"}]` {
		t.Errorf("links %s", got)
	}
	empty, err := encodeSpans(nil)
	if err != nil || string(empty) != `{"resourceSpans":[]}` {
		t.Errorf("no spans: %s, %v", empty, err)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The exporter POSTs the JSON to the traces URL with the OTEL_EXPORTER_OTLP_*
// headers and compression; a refusal, a partial success and an unreachable
// collector are errors that repeat neither the URL nor a header's value.
func TestTheExporterPostsOTLPJSON(t *testing.T) {
	type got struct {
		path, contentType, encoding, key string
		body                             []byte
	}
	reqs := make(chan got, 10)
	answer := make(chan func(w http.ResponseWriter), 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Errorf("gzip: %v", err)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		reqs <- got{r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Content-Encoding"), r.Header.Get("Api-Key"), b}
		(<-answer)(w)
	}))
	defer srv.Close()
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_HEADERS":        "api-key=not%20this,other=x",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "api-key=s%3Dcret%2C1",
		"OTEL_EXPORTER_OTLP_COMPRESSION":    "gzip",
	}
	exp, err := newOTLPExporter(TracesURL(srv.URL+"/otel"), "1.2.3", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spans := testSpans()

	answer <- func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}
	if err := exp.ExportSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	r := <-reqs
	if r.path != "/otel/v1/traces" || r.contentType != "application/json" || r.encoding != "gzip" || r.key != "s=cret,1" {
		t.Errorf("request: %+v", r)
	}
	if want, _ := encodeSpans(spans); string(r.body) != string(want) {
		t.Errorf("body %s, want %s", r.body, want)
	}

	answer <- func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }
	if err := exp.ExportSpans(ctx, spans); err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Errorf("a 503: %v", err)
	}
	<-reqs

	answer <- func(w http.ResponseWriter) {
		io.WriteString(w, `{"partialSuccess":{"rejectedSpans":"1","errorMessage":"too old"}}`)
	}
	err = exp.ExportSpans(ctx, spans)
	if re, ok := errors.AsType[*rejectedError](err); !ok || re.Rejected != 1 || !strings.Contains(err.Error(), "too old") {
		t.Errorf("a partial success: %v", err)
	}
	<-reqs
	answer <- func(w http.ResponseWriter) { io.WriteString(w, `{"partialSuccess":{}}`) }
	if err := exp.ExportSpans(ctx, spans); err != nil {
		t.Errorf("an empty partial success: %v", err)
	}
	<-reqs

	// Unreachable, with credentials in the URL: the error does not repeat the URL
	// (a dial error names the address alone).
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	u := strings.Replace(down.URL, "http://", "http://user:pw-secret@", 1) + "/v1/traces"
	exp2, err := newOTLPExporter(u, "1.2.3", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	err = exp2.ExportSpans(ctx, spans)
	if err == nil || strings.Contains(err.Error(), "pw-secret") || strings.Contains(err.Error(), "/v1/traces") {
		t.Errorf("an unreachable collector: %v", err)
	}

	exp.Shutdown(ctx)
	if err := exp.ExportSpans(ctx, spans); !errors.Is(err, errExporterClosed) {
		t.Errorf("after Shutdown: %v", err)
	}
}

// A variable the exporter cannot use fails the start, naming the variable and not
// its value (a header may be a credential).
func TestBadOTLPVariablesAreRefused(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		name string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "secret-token"}, "OTEL_EXPORTER_OTLP_HEADERS"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zstd"}, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_KEY": "/k.pem"}, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"},
	} {
		_, err := newOTLPExporter("http://127.0.0.1:4318/v1/traces", "1", func(k string) string { return c.env[k] })
		if err == nil || !strings.Contains(err.Error(), c.name) || strings.Contains(err.Error(), "secret-token") {
			t.Errorf("%v: %v", c.env, err)
		}
	}
}
