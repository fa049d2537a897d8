// Package fakeanthropic is an Anthropic Messages API endpoint for tests: it streams
// scripted answers the way the real API does (server-sent events message_start,
// ping, content_block_start / content_block_delta with text_delta, thinking_delta
// and input_json_delta / content_block_stop, message_delta, message_stop, and error
// events), fails the way it does (an HTTP status with an error body and
// retry-after, a stream cut off), and records every request, so a test can assert
// what the daemon gave the model. Optionally it refuses a context whose roles do not
// strictly alternate. It serves loopback only and is never used outside tests.
package fakeanthropic

import (
	"encoding/json/v2"
	"errors"
	"fmt"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakemodel"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
)

// Server is the fake endpoint. It is an http.Handler too, for tests that serve it
// without a network.
type Server struct {
	*fakemodel.Script[Answer]
	srv *httptest.Server

	models fakemodel.Models // GET /v1/models

	keysMu sync.Mutex
	keys   []string // the x-api-key of each request

	idsMu    sync.Mutex
	produced map[string]bool // every tool_use id it streamed
	calls    int
}

// Answer is one scripted answer. With Status, the answer is that HTTP status with
// an error body (ErrorType, Message) and, if set, a retry-after header. Otherwise
// it streams a thinking block of Thinking pieces, a text block of Text pieces, then
// a tool_use block per call with its input in the pieces of Call.Input. With
// ErrorEvent set, an error event of that type (with Message) follows the pieces
// instead of the rest. With Hold, the stream stops after the pieces and stays open
// until the client goes away; with Cut, the connection drops after them.
type Answer struct {
	Thinking []string
	Text     []string
	Calls    []Call
	Hold     bool
	Cut      bool

	ErrorEvent string // e.g. "overloaded_error"

	Status     int
	RetryAfter string
	ErrorType  string // default "api_error"
	Message    string
}

// Call is one tool_use block; Input is its JSON in the pieces it streams in. Without
// an ID the server makes one, unique across its answers, as the API does.
type Call struct {
	ID, Name string
	Input    []string
}

// NotAlternating is the message of the 400 a strict server answers.
const NotAlternating = "messages: roles must alternate between \"user\" and \"assistant\""

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
	f := &Server{produced: map[string]bool{}}
	f.Script = fakemodel.NewScript("fakeanthropic", f.strictCheck, script...)
	return f
}

// Strict makes the server refuse, with HTTP 400 and NotAlternating, a request whose
// messages do not alternate (see Alternates) or whose tool_use ids are not the ones
// it gave (see IDsRoundTrip). A refused request is recorded but takes no answer
// from the script.
func (f *Server) Strict() *Server {
	f.SetStrict()
	return f
}

// URL is the base URL to configure as a provider's base_url.
func (f *Server) URL() string { return f.srv.URL }

// ServeHTTP answers one messages request.
func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.models.Serve(w, r) {
		return
	}
	f.keysMu.Lock() // before Take: once request n is seen, so is its key
	f.keys = append(f.keys, r.Header.Get("X-Api-Key"))
	f.keysMu.Unlock()
	req, a, refusal := f.Take(r)

	if r.URL.Path != "/v1/messages" {
		a = Answer{Status: http.StatusNotFound, ErrorType: "not_found_error", Message: "no route " + r.URL.Path}
	}
	if refusal != nil {
		a = Answer{Status: http.StatusBadRequest, ErrorType: "invalid_request_error", Message: NotAlternating}
	}
	if a.Status != 0 {
		if a.RetryAfter != "" {
			w.Header().Set("Retry-After", a.RetryAfter)
		}
		typ := a.ErrorType
		if typ == "" {
			typ = "api_error"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.Status)
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": a.Message}})
		w.Write(b)
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	event := func(name string, data map[string]any) {
		data["type"] = name
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		fl.Flush()
	}
	model, _ := req["model"].(string)
	event("message_start", map[string]any{"message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 3, "output_tokens": 1},
	}})
	event("ping", map[string]any{})
	index := 0
	block := func(start map[string]any, deltas []map[string]any) {
		event("content_block_start", map[string]any{"index": index, "content_block": start})
		for _, d := range deltas {
			event("content_block_delta", map[string]any{"index": index, "delta": d})
		}
		event("content_block_stop", map[string]any{"index": index})
		index++
	}
	if len(a.Thinking) > 0 {
		var ds []map[string]any
		for _, t := range a.Thinking {
			ds = append(ds, map[string]any{"type": "thinking_delta", "thinking": t})
		}
		ds = append(ds, map[string]any{"type": "signature_delta", "signature": "sig"})
		block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, ds)
	}
	if len(a.Text) > 0 {
		start := map[string]any{"type": "text", "text": ""}
		if a.Hold || a.Cut || a.ErrorEvent != "" {
			// The block stays open: what follows is the interruption.
			event("content_block_start", map[string]any{"index": index, "content_block": start})
			for _, t := range a.Text {
				event("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "text_delta", "text": t}})
			}
		} else {
			var ds []map[string]any
			for _, t := range a.Text {
				ds = append(ds, map[string]any{"type": "text_delta", "text": t})
			}
			block(start, ds)
		}
	}
	switch {
	case a.Hold:
		<-r.Context().Done()
		return
	case a.Cut:
		panic(http.ErrAbortHandler)
	case a.ErrorEvent != "":
		event("error", map[string]any{"error": map[string]any{"type": a.ErrorEvent, "message": a.Message}})
		return
	}
	for _, c := range a.Calls {
		var ds []map[string]any
		for _, p := range c.Input {
			ds = append(ds, map[string]any{"type": "input_json_delta", "partial_json": p})
		}
		block(map[string]any{"type": "tool_use", "id": f.callID(c), "name": c.Name, "input": map[string]any{}}, ds)
	}
	reason := "end_turn"
	if len(a.Calls) > 0 {
		reason = "tool_use"
	}
	event("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": reason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 2},
	})
	event("message_stop", map[string]any{})
}

// Key is the x-api-key header of the n-th request (which must have arrived).
func (f *Server) Key(n int) string {
	f.keysMu.Lock()
	defer f.keysMu.Unlock()
	return f.keys[n]
}

// Messages returns a request's messages.
func Messages(req map[string]any) []map[string]any { return fakemodel.Messages(req) }

// Blocks returns a message's content blocks; a string content is one text block.
func Blocks(m map[string]any) []map[string]any {
	if s, ok := m["content"].(string); ok {
		return []map[string]any{{"type": "text", "text": s}}
	}
	var out []map[string]any
	list, _ := m["content"].([]any)
	for _, b := range list {
		bm, _ := b.(map[string]any)
		out = append(out, bm)
	}
	return out
}

// Alternates checks a request's messages as the Messages API defines them, without
// the merging of consecutive messages of one role that the real API does: the first
// is a user message, user and assistant messages alternate, no message and no text
// block is empty, each tool_use of an assistant message is answered by a
// tool_result block in the user message right after it, those results come
// before any text of that message, and the last message is a user message.
func Alternates(req map[string]any) error {
	msgs := Messages(req)
	if len(msgs) == 0 {
		return errors.New("no messages")
	}
	var pending map[string]bool // tool_use ids of the previous assistant message
	for i, m := range msgs {
		role, _ := m["role"].(string)
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if role != want {
			return fmt.Errorf("message %d is %q where %q belongs", i, role, want)
		}
		blocks := Blocks(m)
		if len(blocks) == 0 {
			return fmt.Errorf("message %d has no content", i)
		}
		next := map[string]bool{}
		text := false
		for j, b := range blocks {
			switch b["type"] {
			case "text":
				if s, _ := b["text"].(string); s == "" {
					return fmt.Errorf("message %d block %d: an empty text block", i, j)
				}
				text = true
			case "tool_use":
				if role != "assistant" {
					return fmt.Errorf("message %d block %d: tool_use in a user message", i, j)
				}
				id, _ := b["id"].(string)
				next[id] = true
			case "tool_result":
				id, _ := b["tool_use_id"].(string)
				switch {
				case role != "user":
					return fmt.Errorf("message %d block %d: tool_result in an assistant message", i, j)
				case !pending[id]:
					return fmt.Errorf("message %d block %d: tool_result for %q, which the previous message did not call", i, j, id)
				case text:
					return fmt.Errorf("message %d block %d: tool_result after text", i, j)
				}
				delete(pending, id)
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("message %d does not answer every tool_use of the one before", i)
		}
		pending = next
	}
	if len(msgs)%2 == 0 {
		return errors.New("the last message is the assistant's: the API would continue it, not answer")
	}
	return nil
}

// callID is the id the server gives c.
func (f *Server) callID(c Call) string {
	f.idsMu.Lock()
	defer f.idsMu.Unlock()
	f.calls++
	id := c.ID
	if id == "" {
		id = fmt.Sprintf("toolu_fake%02d", f.calls)
	}
	f.produced[id] = true
	return id
}

// strictCheck is what Strict refuses.
func (f *Server) strictCheck(req map[string]any) error {
	if err := Alternates(req); err != nil {
		return err
	}
	return f.IDsRoundTrip(req)
}

// IDsRoundTrip checks that every tool_use block of req carries, unchanged, the id
// this server gave it, or, for a call it never saw (a context restored from old
// rows), an id the client made in the form every API accepts (9 characters of
// [a-zA-Z0-9]); and that no two share one (the API requires unique ids).
func (f *Server) IDsRoundTrip(req map[string]any) error {
	seen := map[string]bool{}
	for i, m := range Messages(req) {
		for j, b := range Blocks(m) {
			if b["type"] != "tool_use" {
				continue
			}
			id, _ := b["id"].(string)
			f.idsMu.Lock()
			produced := f.produced[id]
			f.idsMu.Unlock()
			switch {
			case seen[id]:
				return fmt.Errorf("message %d block %d: the tool_use id %q is used twice", i, j, id)
			case !produced && !madeID.MatchString(id):
				return fmt.Errorf("message %d block %d: the tool_use id %q is neither one this server gave nor one made as every API accepts", i, j, id)
			}
			seen[id] = true
		}
	}
	return nil
}

// Produced reports whether the server gave a tool_use block the id id.
func (f *Server) Produced(id string) bool {
	f.idsMu.Lock()
	defer f.idsMu.Unlock()
	return f.produced[id]
}

// madeID is the form of an id a client makes where it has none of the server's.
var madeID = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)
