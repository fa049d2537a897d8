// Package fakeopenai is an OpenAI-compatible chat completions endpoint for tests: it
// streams scripted answers the way the real API does (server-sent events, tool-call
// deltas, a usage chunk, [DONE]) and records every request, so a test can assert
// what the daemon gave the model. It serves loopback only and is never used outside
// tests.
package fakeopenai

import (
	"encoding/json/v2"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Server is the fake endpoint.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []map[string]any
	script   []Answer // answers in order; the last one repeats
	arrived  chan int // the index of each request as it arrives
}

// Answer is one streamed answer: text pieces, then tool calls. With Hold, the stream
// stops after the pieces and stays open until the client goes away.
type Answer struct {
	Text  []string
	Calls []Call
	Hold  bool
}

// Call is one tool call of an answer.
type Call struct{ ID, Name, Args string }

// New starts a server answering with script, in order; the last answer repeats.
func New(t testing.TB, script ...Answer) *Server {
	f := &Server{script: script, arrived: make(chan int, 256)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	return f
}

// URL is the base URL to configure as a provider's base_url.
func (f *Server) URL() string { return f.srv.URL + "/v1" }

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	json.Unmarshal(body, &req)
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, req)
	a := f.script[min(n, len(f.script)-1)]
	f.mu.Unlock()
	select {
	case f.arrived <- n:
	default:
	}

	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	chunk(map[string]any{"role": "assistant"}, nil)
	for _, t := range a.Text {
		chunk(map[string]any{"content": t}, nil)
	}
	if a.Hold {
		<-r.Context().Done()
		return
	}
	for i, c := range a.Calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Args},
		}}}, nil)
	}
	finish := "stop"
	if len(a.Calls) > 0 {
		finish = "tool_calls"
	}
	chunk(map[string]any{}, finish)
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "fake", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
	})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
	fl.Flush()
}

// Request returns the n-th request received (from 0), waiting up to 30 s for it.
func (f *Server) Request(t testing.TB, n int) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.mu.Lock()
		if n < len(f.requests) {
			r := f.requests[n]
			f.mu.Unlock()
			return r
		}
		f.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("fakeopenai: request %d never arrived", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Count is how many requests arrived so far.
func (f *Server) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// Messages returns a request's messages.
func Messages(req map[string]any) []map[string]any {
	var out []map[string]any
	for _, m := range req["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}
