package provider

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeanthropic"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// The retry policy (docs/protocol.md, "Remote providers"), on fake time: each test
// runs in a synctest bubble, and the fake servers are served in-process
// (handlerTransport), so that a wait between attempts is the only thing that makes
// the clock move.

// handlerTransport serves requests with h in the calling process, streaming the
// response through a pipe. A handler that panics with http.ErrAbortHandler cuts
// the stream, as a dropped connection does.
type handlerTransport struct {
	h       http.Handler
	refuses *atomic.Int32 // connections to refuse before serving; may be nil
}

// errRefused is what dialing a port nobody listens on returns.
var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

func (tr handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if tr.refuses != nil && tr.refuses.Add(-1) >= 0 {
		return nil, errRefused
	}
	pr, pw := io.Pipe()
	w := &pipeResponse{header: http.Header{}, body: pw, started: make(chan struct{})}
	go func() {
		defer func() {
			if p := recover(); p != nil && p != http.ErrAbortHandler {
				panic(p)
			} else if p != nil {
				w.start(http.StatusOK)
				pw.CloseWithError(io.ErrUnexpectedEOF)
				return
			}
			w.start(http.StatusOK)
			pw.Close()
		}()
		tr.h.ServeHTTP(w, req)
	}()
	select {
	case <-w.started:
	case <-req.Context().Done():
		pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	stop := context.AfterFunc(req.Context(), func() { pr.CloseWithError(req.Context().Err()) })
	return &http.Response{
		StatusCode: w.status, Status: http.StatusText(w.status), Header: w.header,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: req,
		Body: closer{pr, stop},
	}, nil
}

type closer struct {
	*io.PipeReader
	stop func() bool
}

func (c closer) Close() error {
	c.stop()
	return c.PipeReader.Close()
}

type pipeResponse struct {
	header  http.Header
	body    *io.PipeWriter
	once    sync.Once
	status  int
	started chan struct{}
}

func (w *pipeResponse) start(code int) {
	w.once.Do(func() {
		w.status = code
		close(w.started)
	})
}

func (w *pipeResponse) Header() http.Header  { return w.header }
func (w *pipeResponse) WriteHeader(code int) { w.start(code) }
func (w *pipeResponse) Flush()               {}
func (w *pipeResponse) Write(b []byte) (int, error) {
	w.start(http.StatusOK)
	return w.body.Write(b)
}

// retrying is a provider of kind on h, in-process, with the given retries and a
// jitter that always picks its maximum. The first refuse connections are refused.
func retrying(t *testing.T, kind string, h http.Handler, retries int, refuse ...int) Provider {
	t.Helper()
	tr := handlerTransport{h: h, refuses: new(atomic.Int32)}
	if len(refuse) > 0 {
		tr.refuses.Store(int32(refuse[0]))
	}
	cfg := Config{Name: "p", Kind: kind, BaseURL: "http://fake.invalid/v1", Model: "m", APIKey: testKey,
		MaxRetries: retries, HTTPClient: &http.Client{Transport: tr}}
	if kind == "anthropic" {
		cfg.BaseURL = "http://fake.invalid"
	}
	p, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	switch p := p.(type) {
	case *openAI:
		p.r.jitter = func(d time.Duration) time.Duration { return d }
	case *anthropicProvider:
		p.r.jitter = func(d time.Duration) time.Duration { return d }
	}
	return p
}

// failure is one failed answer of either kind's fake.
type failure struct {
	status     int
	retryAfter string
	cut        bool   // stream text, then drop the connection
	text       string // with cut
	errorEvent string // anthropic only: an error event before any output
}

// server scripts a fake of kind: the failures in order, then a success.
func server(kind string, fails ...failure) (h http.Handler, count func() int) {
	if kind == "openai" {
		var script []fakeopenai.Answer
		for _, f := range fails {
			a := fakeopenai.Answer{Status: f.status, RetryAfter: f.retryAfter, Message: "upstream says no"}
			if f.cut {
				a = fakeopenai.Answer{Text: pieces(f.text), Cut: true}
			}
			script = append(script, a)
		}
		s := fakeopenai.NewHandler(append(script, fakeopenai.Answer{Text: []string{"hello ", "world"}})...)
		return s, s.Count
	}
	var script []fakeanthropic.Answer
	for _, f := range fails {
		a := fakeanthropic.Answer{Status: f.status, RetryAfter: f.retryAfter, Message: "upstream says no", ErrorType: "overloaded_error"}
		switch {
		case f.cut:
			a = fakeanthropic.Answer{Text: pieces(f.text), Cut: true}
		case f.errorEvent != "":
			a = fakeanthropic.Answer{ErrorEvent: f.errorEvent, Message: "upstream says no"}
		}
		script = append(script, a)
	}
	s := fakeanthropic.NewHandler(append(script, fakeanthropic.Answer{Text: []string{"hello ", "world"}})...)
	return s, s.Count
}

func pieces(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

var kinds = []string{"openai", "anthropic"}

func TestRetriesWaitAsTheServerAsksOrBackOffExponentially(t *testing.T) {
	for _, tt := range []struct {
		name    string
		fails   []failure
		retries int
		refused int           // connections refused before the server is reached
		waited  time.Duration // in fake time, from the first attempt to the answer
	}{
		{"429 with retry-after 1", []failure{{status: 429, retryAfter: "1"}}, 2, 0, time.Second},
		{"503 with a fractional retry-after", []failure{{status: 503, retryAfter: "0.25"}}, 2, 0, 250 * time.Millisecond},
		{"retry-after is capped at 30 s", []failure{{status: 429, retryAfter: "3600"}}, 2, 0, 30 * time.Second},
		{"retry-after as an HTTP date", []failure{{status: 529, retryAfter: "Sat, 01 Jan 2000 00:00:07 GMT"}}, 2, 0, 7 * time.Second},
		{"without retry-after: 0.5 s, then 1 s", []failure{{status: 529}, {status: 503}}, 2, 0, 1500 * time.Millisecond},
		{"a refused connection", nil, 1, 1, 500 * time.Millisecond},
		{"a stream cut before any output", []failure{{cut: true}, {status: 429, retryAfter: "2"}}, 3, 0, 2500 * time.Millisecond},
	} {
		for _, kind := range kinds {
			t.Run(tt.name+"/"+kind, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					// The bubble's clock starts at 2000-01-01 00:00:00 UTC.
					h, count := server(kind, tt.fails...)
					p := retrying(t, kind, h, tt.retries, tt.refused)
					var rec recorder
					start := time.Now()
					res, err := p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, rec.emit)
					if err != nil {
						t.Fatal(err)
					}
					if waited := time.Since(start); waited != tt.waited {
						t.Errorf("the answer came after %s, want %s", waited, tt.waited)
					}
					if res.Text != "hello world" || rec.text() != "hello world" {
						t.Errorf("text %q, streamed %q", res.Text, rec.text())
					}
					if n := count(); n != len(tt.fails)+1 {
						t.Errorf("%d requests reached the server", n)
					}
				})
			})
		}
	}
}

func TestWithoutRetriesLeftTheErrorNamesTheStatusTheMessageAndTheAttempts(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, count := server(kind, failure{status: 529}, failure{status: 529}, failure{status: 529})
				p := retrying(t, kind, h, 2)
				start := time.Now()
				_, err := p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {})
				pe := asError(t, err)
				for _, want := range []string{"HTTP 529", "upstream says no", "(3 attempts)"} {
					if !strings.Contains(pe.Error(), want) {
						t.Errorf("%q lacks %q", pe.Error(), want)
					}
				}
				if pe.Status != 529 || count() != 3 || time.Since(start) != 1500*time.Millisecond {
					t.Errorf("status %d after %d attempts and %s", pe.Status, count(), time.Since(start))
				}
			})
		})
	}
}

func TestWhatIsNotRetried(t *testing.T) {
	for _, tt := range []struct {
		name string
		fail failure
		want string
	}{
		{"400", failure{status: 400}, "HTTP 400"},
		{"401", failure{status: 401}, "HTTP 401"},
		{"404", failure{status: 404}, "HTTP 404"},
		{"500", failure{status: 500}, "HTTP 500"},
		{"a stream cut after output", failure{cut: true, text: "hel"}, "the stream ended early"},
	} {
		for _, kind := range kinds {
			t.Run(tt.name+"/"+kind, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h, count := server(kind, tt.fail)
					p := retrying(t, kind, h, 2)
					var rec recorder
					_, err := p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, rec.emit)
					if pe := asError(t, err); !strings.Contains(pe.Error(), tt.want) || strings.Contains(pe.Error(), "attempts") {
						t.Errorf("err = %q, want %q from one attempt", pe.Error(), tt.want)
					}
					if count() != 1 || rec.text() != tt.fail.text {
						t.Errorf("%d attempts, streamed %q", count(), rec.text())
					}
				})
			})
		}
	}
}

func TestAnthropicErrorEventsBeforeOutputAreRetriedByTheirType(t *testing.T) {
	for _, tt := range []struct {
		event    string
		attempts int
	}{
		{"overloaded_error", 2},
		{"rate_limit_error", 2},
		{"api_error", 1},
		{"invalid_request_error", 1},
	} {
		t.Run(tt.event, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, count := server("anthropic", failure{errorEvent: tt.event})
				p := retrying(t, "anthropic", h, 2)
				_, err := p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {})
				if (err == nil) != (tt.attempts == 2) || count() != tt.attempts {
					t.Errorf("err %v after %d attempts", err, count())
				}
			})
		})
	}
}

func TestACancelStopsTheWaitBetweenAttemptsAtOnce(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, count := server(kind, failure{status: 429, retryAfter: "30"})
				p := retrying(t, kind, h, 2)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				start := time.Now()
				go func() {
					_, err := p.Stream(ctx, Request{Messages: []Message{user("hi")}}, func(Delta) {})
					done <- err
				}()
				synctest.Wait() // the first attempt failed: the call waits for its retry
				if count() != 1 {
					t.Fatalf("%d attempts before the wait", count())
				}
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", err)
				}
				if waited := time.Since(start); waited != 0 || count() != 1 {
					t.Errorf("the call ended after %s and %d attempts", waited, count())
				}
			})
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"0": 0, "1": time.Second, "1.5": 1500 * time.Millisecond, "31": RetryAfterMax, "1e9": RetryAfterMax,
		"Thu, 01 Jan 2026 12:00:05 GMT": 5 * time.Second, "Thu, 01 Jan 2026 11:00:00 GMT": 0,
	} {
		if got, ok := parseRetryAfter(v, now); !ok || got != want {
			t.Errorf("parseRetryAfter(%q) = %s, %v; want %s", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "soon", "-1", "NaN"} {
		if _, ok := parseRetryAfter(v, now); ok {
			t.Errorf("parseRetryAfter(%q) is ok", v)
		}
	}
}

// The Anthropic SDK retries by itself unless told not to: with our policy allowing
// one retry, a server that is always unavailable sees exactly two attempts.
func TestTheSDKsAddNoRetriesOfTheirOwn(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					calls.Add(1)
					w.WriteHeader(http.StatusServiceUnavailable)
				})
				p := retrying(t, kind, h, 1)
				_, err := p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {})
				if pe := asError(t, err); pe.Status != 503 || calls.Load() != 2 {
					t.Errorf("status %d after %d attempts, want 503 after 2", pe.Status, calls.Load())
				}
			})
		})
	}
}
