// Package fakeopenai is an OpenAI-compatible chat completions endpoint for tests: it
// streams scripted answers the way the real API does (server-sent events, tool-call
// deltas, a usage chunk, [DONE]), fails the way it does (an HTTP status with an
// error body and Retry-After, a stream cut off), and records every request, so a
// test can assert what the daemon gave the model. Optionally it refuses, like the
// strict chat templates of vLLM or llama.cpp, a context whose roles do not
// alternate. It serves loopback only and is never used outside tests.
package fakeopenai

import (
	"encoding/json/v2"
	"errors"
	"fmt"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/fakemodel"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Server is the fake endpoint. It is an http.Handler too, for tests that serve it
// without a network.
type Server struct {
	*fakemodel.Script[Answer]
	srv *httptest.Server

	models modelList // GET /v1/models (models.go)
}

// Answer is one scripted answer. With Status, the answer is that HTTP status with
// an error body (Message) and, if set, a Retry-After header. Otherwise it streams
// Thoughts (reasoning_content), Text pieces, then tool calls. With Hold, the stream
// stops after the pieces and stays open until the client goes away; with Cut, the
// connection drops after them.
type Answer struct {
	Thoughts []string
	Text     []string
	Calls    []Call
	Hold     bool
	Cut      bool

	Status     int
	RetryAfter string
	Message    string
}

// Call is one tool call of an answer.
type Call struct{ ID, Name, Args string }

// NotAlternating is the message of the 400 a strict server answers, as vLLM's
// Mistral and Llama templates word it.
const NotAlternating = "Conversation roles must alternate user/assistant/user/assistant/..."

// New starts a server answering with script, in order; the last answer repeats.
func New(t testing.TB, script ...Answer) *Server {
	f := NewHandler(script...)
	f.srv = httptest.NewServer(f)
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	return f
}

// NewHandler is a Server that is not listening: serve it yourself.
func NewHandler(script ...Answer) *Server {
	return &Server{Script: fakemodel.NewScript("fakeopenai", Alternates, script...)}
}

// Strict makes the server refuse, with HTTP 400 and NotAlternating, a request whose
// messages do not alternate (see Alternates). A refused request is recorded but
// takes no answer from the script.
func (f *Server) Strict() *Server {
	f.SetStrict()
	return f
}

// URL is the base URL to configure as a provider's base_url.
func (f *Server) URL() string { return f.srv.URL + "/v1" }

// ServeHTTP answers one chat completion request.
func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.serveModels(w, r) {
		return
	}
	_, a, refuse := f.Take(r)
	if refuse {
		a = Answer{Status: http.StatusBadRequest, Message: NotAlternating}
	}
	if a.Status != 0 {
		if a.RetryAfter != "" {
			w.Header().Set("Retry-After", a.RetryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.Status)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": a.Message, "type": "error", "code": a.Status}})
		w.Write(b)
		return
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
	for _, t := range a.Thoughts {
		chunk(map[string]any{"reasoning_content": t}, nil)
	}
	for _, t := range a.Text {
		chunk(map[string]any{"content": t}, nil)
	}
	if a.Hold {
		<-r.Context().Done()
		return
	}
	if a.Cut {
		panic(http.ErrAbortHandler)
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

// Messages returns a request's messages.
func Messages(req map[string]any) []map[string]any { return fakemodel.Messages(req) }

// Alternates checks a request's messages as the strictest chat templates do: after
// an optional system message the first is a user message; every tool result follows
// the assistant message that made the call, or another result, and answers one of
// its calls; each call is answered before the next user or assistant message; and,
// leaving out the tool results and the assistant messages that made calls (as
// Mistral's template does), user and assistant messages alternate, starting with a
// user message.
func Alternates(req map[string]any) error {
	msgs := Messages(req)
	if len(msgs) > 0 && msgs[0]["role"] == "system" {
		msgs = msgs[1:]
	}
	if len(msgs) == 0 {
		return errors.New("no messages")
	}
	if msgs[0]["role"] != "user" {
		return fmt.Errorf("message 0 is %v, not user", msgs[0]["role"])
	}
	pending := map[string]bool{} // calls awaiting a result
	want := "user"               // the next role of the alternation
	for i, m := range msgs {
		role, _ := m["role"].(string)
		calls, _ := m["tool_calls"].([]any)
		if role != "tool" && len(pending) > 0 {
			return fmt.Errorf("message %d (%s) comes before every call has its result", i, role)
		}
		switch {
		case role == "tool":
			id, _ := m["tool_call_id"].(string)
			if !pending[id] {
				return fmt.Errorf("message %d is a result for %q, which no call is waiting for", i, id)
			}
			delete(pending, id)
		case role == "assistant" && len(calls) > 0:
			if want != "assistant" {
				return fmt.Errorf("message %d: an assistant message where a user message belongs", i)
			}
			for _, c := range calls {
				cm, _ := c.(map[string]any)
				id, _ := cm["id"].(string)
				pending[id] = true
			}
		case role == "user" || role == "assistant":
			if role != want {
				return fmt.Errorf("message %d is %s where %s belongs", i, role, want)
			}
			want = map[string]string{"user": "assistant", "assistant": "user"}[role]
		default:
			return fmt.Errorf("message %d has the role %q", i, role)
		}
	}
	return nil
}
