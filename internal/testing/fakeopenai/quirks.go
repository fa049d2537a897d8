package fakeopenai

import (
	"encoding/json/v2"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// Quirk is a way in which a real OpenAI-compatible server streams or checks
// differently from OpenAI's API (docs/protocol.md, "Remote providers"). Without
// quirks the server streams as OpenAI does: the first delta of a call carries its
// index, id, type and name with empty arguments, later deltas the index and a piece
// of the arguments string; finish_reason "tool_calls" when there are calls; and, when
// the request asks (stream_options.include_usage), a last chunk with empty choices
// and the usage.
type Quirk string

const (
	// MistralIDs: its own ids are 9 characters of [a-zA-Z0-9], and a request with
	// any other tool-call id is refused with HTTP 400 and Mistral's words (the
	// Mistral API; vLLM and llama.cpp serving Mistral models with their templates).
	MistralIDs Quirk = "mistral-ids"
	// WholeCalls: every call whole in one delta, all of an answer's calls in one
	// chunk (Ollama).
	WholeCalls Quirk = "whole-calls"
	// NoIndex: tool-call deltas carry no index, one call after the other (older
	// vLLM tool parsers, some proxies).
	NoIndex Quirk = "no-index"
	// NoIDs: tool calls carry no id at all (older Ollama, several local servers).
	NoIDs Quirk = "no-ids"
	// RepeatedIDs: the id (and name) come again on every delta of a call, not only
	// on the first (LiteLLM and other proxies).
	RepeatedIDs Quirk = "repeated-ids"
	// CallZero: the ids are call_0, call_1, … in every answer, so they repeat
	// across the turns of a session.
	CallZero Quirk = "call-zero"
	// ObjectArgs: arguments as a JSON object, not a string holding one (Ollama's
	// native shape, leaking through some OpenAI layers and proxies).
	ObjectArgs Quirk = "object-args"
	// NullContent: "content": null on every delta without text (OpenAI itself on
	// tool-call deltas; vLLM, DeepSeek).
	NullContent Quirk = "null-content"
	// StopWithCalls: finish_reason "stop" although the answer made tool calls
	// (Ollama, llama.cpp, some vLLM tool parsers).
	StopWithCalls Quirk = "stop-with-calls"
	// UsageOnly: usage comes, asked for or not, in a last chunk that holds nothing
	// else, not even choices (llama.cpp, LM Studio, vLLM's usage chunk shapes).
	UsageOnly Quirk = "usage-only"
	// Reasoning: thoughts as "reasoning", not "reasoning_content" (OpenRouter,
	// Ollama, newer vLLM); without it they stream as reasoning_content (DeepSeek,
	// vLLM, llama.cpp, LM Studio).
	Reasoning Quirk = "reasoning"
)

// Quirks lists every quirk.
var Quirks = []Quirk{MistralIDs, WholeCalls, NoIndex, NoIDs, RepeatedIDs, CallZero, ObjectArgs, NullContent, StopWithCalls, UsageOnly, Reasoning}

// With switches quirks on.
func (f *Server) With(qs ...Quirk) *Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, q := range qs {
		f.quirks[q] = true
	}
	return f
}

func (f *Server) has(q Quirk) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.quirks[q]
}

// MistralIDError is the start of the message of Mistral's refusal.
const MistralIDError = "Tool call id was "

// mistralIDError is Mistral's refusal of a tool-call id, in its words.
type mistralIDError struct{ id string }

func (e *mistralIDError) Error() string {
	return "Tool call id was " + e.id + " but must be a-z, A-Z, 0-9, with a length of 9"
}

var mistralID = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

// rule is what the server refuses in any mode: with MistralIDs, a tool-call id of
// a call or of a result that breaks Mistral's rule.
func (f *Server) rule(req map[string]any) error {
	if !f.has(MistralIDs) {
		return nil
	}
	for _, m := range Messages(req) {
		if id, ok := m["tool_call_id"].(string); ok && !mistralID.MatchString(id) {
			return &mistralIDError{id}
		}
		calls, _ := m["tool_calls"].([]any)
		for _, c := range calls {
			cm, _ := c.(map[string]any)
			if id, _ := cm["id"].(string); !mistralID.MatchString(id) {
				return &mistralIDError{id}
			}
		}
	}
	return nil
}

// callID is the id the server gives the i-th call of an answer ("" for none).
func (f *Server) callID(c Call, i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	var id string
	switch {
	case f.quirks[NoIDs]:
		return ""
	case f.quirks[CallZero]:
		id = "call_" + strconv.Itoa(i)
	case f.quirks[MistralIDs]:
		id = fmt.Sprintf("Mc%07d", f.calls)
	case c.ID != "":
		id = c.ID
	default:
		id = fmt.Sprintf("call_fake%d", f.calls)
	}
	f.produced[id] = true
	return id
}

// Produced reports whether the server gave a tool call the id id.
func (f *Server) Produced(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.produced[id]
}

// stream answers with a as a stream of chunks.
func (f *Server) stream(w http.ResponseWriter, r *http.Request, req map[string]any, a Answer) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	send := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	null := f.has(NullContent)
	chunk := func(delta map[string]any, finish any) {
		if _, ok := delta["content"]; !ok && null {
			delta["content"] = nil
		}
		send(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
	}
	chunk(map[string]any{"role": "assistant"}, nil)
	thought := "reasoning_content"
	if f.has(Reasoning) {
		thought = "reasoning"
	}
	for _, t := range a.Thoughts {
		chunk(map[string]any{thought: t}, nil)
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
	var whole []any
	for i, c := range a.Calls {
		id := f.callID(c, i)
		deltas := f.callDeltas(i, id, c)
		if f.has(WholeCalls) {
			whole = append(whole, deltas...)
			continue
		}
		for _, d := range deltas {
			chunk(map[string]any{"tool_calls": []any{d}}, nil)
		}
	}
	if len(whole) > 0 {
		chunk(map[string]any{"tool_calls": whole}, nil)
	}
	finish := "stop"
	if len(a.Calls) > 0 && !f.has(StopWithCalls) {
		finish = "tool_calls"
	}
	chunk(map[string]any{}, finish)
	usage := map[string]any{"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5,
		"prompt_tokens_details": map[string]any{"cached_tokens": 1}}
	opts, _ := req["stream_options"].(map[string]any)
	switch {
	case f.has(UsageOnly):
		send(map[string]any{"usage": usage})
	case opts["include_usage"] == true:
		send(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "fake", "choices": []any{}, "usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

// callDeltas are the tool-call deltas of call i, as the quirks have it.
func (f *Server) callDeltas(i int, id string, c Call) []any {
	head := func(d map[string]any) map[string]any {
		if !f.has(NoIndex) {
			d["index"] = i
		}
		if id != "" {
			d["id"], d["type"] = id, "function"
		}
		return d
	}
	if f.has(ObjectArgs) || f.has(WholeCalls) {
		var args any = c.Args
		if f.has(ObjectArgs) {
			var obj map[string]any
			if json.Unmarshal([]byte(c.Args), &obj) == nil {
				args = obj
			}
		}
		return []any{head(map[string]any{"function": map[string]any{"name": c.Name, "arguments": args}})}
	}
	out := []any{head(map[string]any{"function": map[string]any{"name": c.Name, "arguments": ""}})}
	for _, piece := range thirds(c.Args) {
		d := map[string]any{"function": map[string]any{"arguments": piece}}
		if f.has(RepeatedIDs) {
			d = head(d)
			d["function"].(map[string]any)["name"] = c.Name
		} else if !f.has(NoIndex) {
			d["index"] = i
		}
		out = append(out, d)
	}
	return out
}

// thirds cuts s into three pieces (fewer when it is short), at rune boundaries.
func thirds(s string) []string {
	if len(s) < 3 {
		return []string{s}
	}
	cut := func(n int) int {
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		return n
	}
	a := cut(len(s) / 3)
	b := max(a, cut(2*len(s)/3))
	return []string{s[:a], s[a:b], s[b:]}
}
