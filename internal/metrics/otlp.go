package metrics

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// otlpExporter is the span exporter behind the span queue: each batch is one
// OTLP/HTTP request, its body the OTLP JSON encoding (otlpjson.go), POSTed to
// <otlp_endpoint>/v1/traces (docs/protocol.md, "Metrics and traces"). It never
// retries: a failed request is the batch dropped (the queue counts and warns).
type otlpExporter struct {
	url       string
	client    *http.Client
	headers   http.Header
	gzip      bool
	userAgent string
	closed    atomic.Bool
}

// responseLimit is as much of a collector's answer as is read: its partial
// success, if any; the rest is drained up to it so the connection is kept.
const responseLimit = 64 << 10

// newOTLPExporter makes the exporter for tracesURL, with what the
// OTEL_EXPORTER_OTLP_* variables of getenv add (otlpEnv).
func newOTLPExporter(tracesURL, serviceVersion string, getenv func(string) string) (*otlpExporter, error) {
	env, err := readOTLPEnv(getenv)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = env.tls
	return &otlpExporter{
		url:       tracesURL,
		client:    &http.Client{Transport: tr},
		headers:   env.headers,
		gzip:      env.gzip,
		userAgent: "zeroclaw/" + serviceVersion + " (OTLP/HTTP JSON trace exporter)",
	}, nil
}

var errExporterClosed = errors.New("the exporter is shut down")

// ExportSpans sends spans in one request, within ctx (the queue's exportTimeout).
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.closed.Load() {
		return errExporterClosed
	}
	if len(spans) == 0 {
		return nil
	}
	body, err := encodeSpans(spans)
	if err != nil {
		return fmt.Errorf("encoding spans: %w", err)
	}
	if e.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
		body = buf.Bytes()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, vs := range e.headers {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", e.userAgent)
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		// Not the url.Error's text: it names the URL, which may hold credentials.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return fmt.Errorf("posting spans: %w", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, responseLimit))
	io.Copy(io.Discard, io.LimitReader(resp.Body, responseLimit))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the collector answered HTTP %d", resp.StatusCode)
	}
	return partialSuccess(answer, len(spans))
}

// rejectedError is a collector's partial success: it kept all but Rejected spans.
type rejectedError struct {
	Rejected int
	Message  string
}

func (e *rejectedError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("the collector rejected %d spans", e.Rejected)
	}
	return fmt.Sprintf("the collector rejected %d spans: %s", e.Rejected, e.Message)
}

// partialSuccess reads an ExportTraceServiceResponse in JSON, if answer is one,
// and reports the spans it rejected (of sent). Any other answer (empty, protobuf,
// text) is a success.
func partialSuccess(answer []byte, sent int) error {
	var r struct {
		PartialSuccess *struct {
			// proto3 JSON writes the int64 as a string; some write a number:
			// json.Number takes both.
			RejectedSpans json.Number `json:"rejectedSpans"`
			ErrorMessage  string      `json:"errorMessage"`
		} `json:"partialSuccess"`
	}
	if len(answer) == 0 || answer[0] != '{' || json.Unmarshal(answer, &r) != nil || r.PartialSuccess == nil {
		return nil
	}
	n, err := r.PartialSuccess.RejectedSpans.Int64()
	if err != nil || n <= 0 {
		return nil
	}
	msg := r.PartialSuccess.ErrorMessage
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return &rejectedError{Rejected: int(min(n, int64(sent))), Message: msg}
}

// Shutdown refuses further exports and closes the idle connections.
func (e *otlpExporter) Shutdown(context.Context) error {
	e.closed.Store(true)
	e.client.CloseIdleConnections()
	return nil
}

// otlpEnv is what the standard OTEL_EXPORTER_OTLP_* variables set beside the
// endpoint (which is [telemetry] otlp_endpoint's alone): headers, the CA and the
// client certificate, gzip. The TRACES_ form of a variable wins over the general
// one, as in the OpenTelemetry SDKs.
type otlpEnv struct {
	headers http.Header
	tls     *tls.Config
	gzip    bool
}

func readOTLPEnv(getenv func(string) string) (otlpEnv, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	lookup := func(name string) (string, string) {
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return "OTEL_EXPORTER_OTLP_TRACES_" + name, v
		}
		return "OTEL_EXPORTER_OTLP_" + name, strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name))
	}
	var env otlpEnv
	if name, v := lookup("HEADERS"); v != "" {
		h, err := parseOTLPHeaders(v)
		if err != nil {
			return env, fmt.Errorf("%s: %w", name, err)
		}
		env.headers = h
	}
	switch name, v := lookup("COMPRESSION"); strings.ToLower(v) {
	case "", "none":
	case "gzip":
		env.gzip = true
	default:
		return env, fmt.Errorf("%s: %q is neither gzip nor none", name, v)
	}
	var tc *tls.Config
	if name, v := lookup("CERTIFICATE"); v != "" {
		pem, err := os.ReadFile(v)
		if err != nil {
			return env, fmt.Errorf("%s: %w", name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return env, fmt.Errorf("%s: no PEM certificate in %s", name, v)
		}
		tc = &tls.Config{RootCAs: pool}
	}
	certName, cert := lookup("CLIENT_CERTIFICATE")
	keyName, key := lookup("CLIENT_KEY")
	if (cert == "") != (key == "") {
		return env, fmt.Errorf("%s and %s go together", certName, keyName)
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return env, fmt.Errorf("%s, %s: %w", certName, keyName, err)
		}
		if tc == nil {
			tc = &tls.Config{}
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	env.tls = tc
	return env, nil
}

// parseOTLPHeaders reads key=value pairs separated by commas, each part
// percent-decoded (the W3C baggage form the OTLP exporter specification gives).
func parseOTLPHeaders(v string) (http.Header, error) {
	h := http.Header{}
	for part := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		key, err1 := url.PathUnescape(strings.TrimSpace(k))
		value, err2 := url.PathUnescape(strings.TrimSpace(val))
		if !ok || key == "" || err1 != nil || err2 != nil {
			// Not the value: a header may be a credential.
			return nil, errors.New("want key=value pairs separated by commas")
		}
		h.Add(key, value)
	}
	return h, nil
}
