package provider

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// testClient is an HTTP client whose idle connections close when the test ends.
func testClient(t *testing.T) *http.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// fakeServer serves h until the test ends.
func fakeServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// recorder collects the deltas of a call.
type recorder struct{ deltas []Delta }

func (r *recorder) emit(d Delta) { r.deltas = append(r.deltas, d) }

// text is the concatenation of the visible deltas.
func (r *recorder) text() string {
	var b strings.Builder
	for _, d := range r.deltas {
		if !d.Thought {
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

func (r *recorder) thoughts() []string {
	var out []string
	for _, d := range r.deltas {
		if d.Thought {
			out = append(out, d.Text)
		}
	}
	return out
}

// sseWriter writes server-sent events and flushes each.
type sseWriter struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sseWriter{w}
}

// data writes "data: <payload>\n\n" (OpenAI framing).
func (s sseWriter) data(payload string) {
	fmt.Fprintf(s.w, "data: %s\n\n", payload)
	s.w.(http.Flusher).Flush()
}

// event writes "event: <name>\ndata: <payload>\n\n" (Anthropic framing).
func (s sseWriter) event(name, payload string) {
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, payload)
	s.w.(http.Flusher).Flush()
}

// asError asserts err is a *Error and returns it.
func asError(t *testing.T, err error) *Error {
	t.Helper()
	pe, ok := err.(*Error)
	if !ok {
		t.Fatalf("err = %T %v, want *provider.Error", err, err)
	}
	return pe
}

// diff is "" when want and got are deeply equal, else both, for a test message.
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("want %#v\n got %#v", want, got)
}
