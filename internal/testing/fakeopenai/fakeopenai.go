// Package fakeopenai is an OpenAI-compatible chat completions endpoint for tests: it
// streams scripted answers the way the real API does (server-sent events, tool-call
// deltas, a usage chunk, [DONE]), fails the way it does (an HTTP status with an
// error body and Retry-After, a stream cut off), and records every request, so a
// test can assert what the daemon gave the model.
//
// Optionally it refuses, like the strict chat templates of vLLM or llama.cpp, a
// context whose roles do not alternate, or whose tool-call ids are not the ones it
// produced (Strict). Quirks switch it into the ways other OpenAI-compatible
// servers stream (quirks.go). It serves loopback only and is never used outside
// tests.
package fakeopenai

import (
	"encoding/json/v2"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakemodel"
)

// Server is the fake endpoint. It is an http.Handler too, for tests that serve it
// without a network.
type Server struct {
	*fakemodel.Script[Answer]
	srv *httptest.Server

	mu       sync.Mutex
	quirks   map[Quirk]bool
	produced map[string]bool  // every tool-call id it streamed
	calls    int              // tool calls streamed so far
	models   fakemodel.Models // GET /v1/models
	emb      embeddings       // POST /v1/embeddings (embeddings.go)
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

// Call is one tool call of an answer. Without an ID the server makes one, unique
// across its answers, as OpenAI does; a quirk may change what it sends.
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
	f := &Server{quirks: map[Quirk]bool{}, produced: map[string]bool{}}
	f.Script = fakemodel.NewScript("fakeopenai", f.strictCheck, script...)
	f.SetRule(f.rule)
	return f
}

// Strict makes the server refuse, with HTTP 400 and NotAlternating, a request whose
// messages do not alternate (see Alternates), or whose tool calls do not carry the
// ids it gave them (see IDsRoundTrip). A refused request is recorded but takes no
// answer from the script.
func (f *Server) Strict() *Server {
	f.SetStrict()
	return f
}

// URL is the base URL to configure as a provider's base_url.
func (f *Server) URL() string { return f.srv.URL + "/v1" }

// strictCheck is what Strict refuses.
func (f *Server) strictCheck(req map[string]any) error {
	if err := Alternates(req); err != nil {
		return err
	}
	return f.IDsRoundTrip(req)
}

// IDsRoundTrip checks the tool-call ids of req: no two calls share one, and each
// call carries the id this server gave it or, where it gave none (a call of a
// context restored from old rows, the NoIDs quirk) or repeats one (CallZero), an id
// the client made in the form every API accepts: 9 characters of [a-zA-Z0-9].
// (Alternates checks that each result names a call.)
func (f *Server) IDsRoundTrip(req map[string]any) error {
	seen := map[string]bool{}
	for i, m := range Messages(req) {
		calls, _ := m["tool_calls"].([]any)
		for _, c := range calls {
			cm, _ := c.(map[string]any)
			id, _ := cm["id"].(string)
			switch {
			case id == "":
				return fmt.Errorf("message %d: a tool call without an id", i)
			case seen[id]:
				return fmt.Errorf("message %d: the tool-call id %q is used twice", i, id)
			}
			seen[id] = true
			f.mu.Lock()
			produced := f.produced[id]
			f.mu.Unlock()
			if !produced && !mistralID.MatchString(id) {
				return fmt.Errorf("message %d: the tool-call id %q is neither one this server gave nor one made as every API accepts", i, id)
			}
		}
	}
	return nil
}

// ServeHTTP answers one chat completion request.
func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.models.Serve(w, r) {
		return
	}
	if r.URL.Path == "/v1/embeddings" {
		f.serveEmbeddings(w, r)
		return
	}
	req, a, refusal := f.Take(r)
	var mistral *mistralIDError
	switch {
	case errors.As(refusal, &mistral):
		// Mistral's API words its errors at the top level.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]any{"object": "error", "message": mistral.Error(), "type": "invalid_request_message_error", "param": nil, "code": nil})
		w.Write(b)
		return
	case refusal != nil:
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
	f.stream(w, r, req, a)
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
