package provider

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"strconv"
	"strings"
)

// The chunks of an OpenAI-compatible stream, as real servers send them
// (docs/protocol.md, "Remote providers"). go-openai frames the stream (data lines,
// comments, [DONE], error events) and hands over each event's JSON (RecvRaw);
// decoding it is done here, since servers differ from OpenAI in ways go-openai's
// types cannot hold:
//
//   - a tool-call delta without index (one call at a time), with its id only on the
//     first delta, with its id on every delta, or with no id at all;
//   - a whole call in one chunk, several calls in one chunk (Ollama);
//   - arguments as a JSON object instead of a string holding one (Ollama's older
//     OpenAI layer, several proxies);
//   - content null (with tool calls), or a list of parts, text and thinking
//     (Mistral's Magistral models);
//   - finish_reason "stop" with tool calls present (Ollama, llama.cpp, some vLLM
//     tool parsers): the calls count whatever the reason says;
//   - usage in a last chunk with no choices (stream_options.include_usage), or on
//     every chunk (vLLM's continuous usage stats): the last one counts;
//   - reasoning as reasoning_content (DeepSeek, vLLM, llama.cpp, LM Studio) or as
//     reasoning (OpenRouter, Ollama, newer vLLM).

// oaChunk is one chat.completion.chunk.
type oaChunk struct {
	Choices []oaChoice `json:"choices"`
	Usage   *oaUsage   `json:"usage"`
}

type oaChoice struct {
	Index        int     `json:"index"`
	Delta        oaDelta `json:"delta"`
	FinishReason string  `json:"finish_reason"` // null is ""
}

type oaDelta struct {
	Content          jsontext.Value `json:"content"` // a string, null, or a list of parts
	Refusal          string         `json:"refusal"`
	ReasoningContent string         `json:"reasoning_content"`
	Reasoning        string         `json:"reasoning"`
	ToolCalls        []oaCallDelta  `json:"tool_calls"`
}

type oaCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string         `json:"name"`
		Arguments jsontext.Value `json:"arguments"` // a string, an object, or null
	} `json:"function"`
}

type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	PromptCacheHitTokens int `json:"prompt_cache_hit_tokens"` // DeepSeek
}

// oaPart is one part of a content list.
type oaPart struct {
	Type     string   `json:"type"`
	Text     string   `json:"text"`
	Thinking []oaPart `json:"thinking"` // Mistral: a thinking part holds text parts
}

// oaDecodeOpts are lenient where servers are sloppy and nothing is lost by it.
var oaDecodeOpts = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// oaStream reassembles one streamed answer.
type oaStream struct {
	emit     func(Delta)
	text     strings.Builder
	calls    []*partialCall
	usage    Usage
	finished bool
	reason   string
}

// add takes one event's JSON.
func (s *oaStream) add(raw []byte) error {
	var ch oaChunk
	if err := json.Unmarshal(raw, &ch, oaDecodeOpts); err != nil {
		return err
	}
	if u := ch.Usage; u != nil {
		s.usage = Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, CachedInputTokens: u.PromptCacheHitTokens}
		if d := u.PromptTokensDetails; d != nil && d.CachedTokens > 0 {
			s.usage.CachedInputTokens = d.CachedTokens
		}
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue // we ask for one choice
		}
		d := choice.Delta
		switch {
		case d.ReasoningContent != "":
			s.thought(d.ReasoningContent)
		case d.Reasoning != "": // a server sending both sends the same text twice
			s.thought(d.Reasoning)
		}
		if err := s.content(d.Content); err != nil {
			return err
		}
		s.said(d.Refusal)
		for _, tc := range d.ToolCalls {
			if err := s.callDelta(tc); err != nil {
				return err
			}
		}
		if choice.FinishReason != "" {
			s.finished, s.reason = true, choice.FinishReason
		}
	}
	return nil
}

func (s *oaStream) thought(t string) { s.emit(Delta{Thought: true, Text: t}) }

func (s *oaStream) said(t string) {
	if t != "" {
		s.text.WriteString(t)
		s.emit(Delta{Text: t})
	}
}

// content takes a delta's content: a string, null, or a list of parts.
func (s *oaStream) content(v jsontext.Value) error {
	switch v.Kind() {
	case 0, 'n':
		return nil
	case '"':
		var t string
		if err := json.Unmarshal(v, &t, oaDecodeOpts); err != nil {
			return err
		}
		s.said(t)
		return nil
	case '[':
		var parts []oaPart
		if err := json.Unmarshal(v, &parts, oaDecodeOpts); err != nil {
			return err
		}
		for _, p := range parts {
			switch p.Type {
			case "text":
				s.said(p.Text)
			case "thinking":
				for _, q := range p.Thinking {
					if q.Text != "" {
						s.thought(q.Text)
					}
				}
			}
		}
		return nil
	}
	return fmt.Errorf("%w: content is %s, neither text nor a list of parts", errMalformed, v)
}

// callDelta merges one tool-call fragment. Fragments belong together by index: the
// id and name come in the first, the arguments in pieces, and parallel calls
// interleave. Without an index a call goes on until a fragment names another: a
// different id, another name, or a name once the call's arguments are complete. A
// fragment whose id differs from that of the call at its index is a call of its
// own (servers that give every call index 0).
func (s *oaStream) callDelta(tc oaCallDelta) error {
	var c *partialCall
	last := func() *partialCall {
		if len(s.calls) == 0 {
			return nil
		}
		return s.calls[len(s.calls)-1]
	}
	if tc.Index != nil {
		for i := len(s.calls) - 1; i >= 0; i-- {
			if s.calls[i].index == *tc.Index && s.calls[i].indexed {
				c = s.calls[i]
				break
			}
		}
		if c != nil && tc.ID != "" && c.providerID != "" && tc.ID != c.providerID {
			c = nil
		}
	} else if l := last(); l != nil && !l.indexed {
		switch {
		case tc.ID != "" && l.providerID != "" && tc.ID != l.providerID:
		case tc.ID != "" && l.providerID == "" && l.args.Len() > 0:
		case tc.Function.Name != "" && l.name != "" && tc.Function.Name != l.name:
		case tc.Function.Name != "" && l.name != "" && jsontext.Value(l.args.String()).IsValid():
			// a complete call is followed by a fragment that names a tool: a new call
		default:
			c = l
		}
	}
	if c == nil {
		c = &partialCall{}
		if tc.Index != nil {
			c.index, c.indexed = *tc.Index, true
		}
		s.calls = append(s.calls, c)
	}
	if tc.ID != "" {
		c.providerID = tc.ID
	}
	if tc.Function.Name != "" {
		c.name = tc.Function.Name
	}
	switch a := tc.Function.Arguments; a.Kind() {
	case 0, 'n':
	case '"':
		var piece string
		if err := json.Unmarshal(a, &piece, oaDecodeOpts); err != nil {
			return err
		}
		c.args.WriteString(piece)
	default: // the arguments as JSON, not as a string holding it
		c.args.Write(a)
	}
	return nil
}

// result completes the answer; truncated calls' arguments are refused by r.
func (s *oaStream) result(r *remote) (Result, error) {
	res := Result{Text: s.text.String(), Usage: s.usage}
	for i, c := range s.calls {
		c.id = c.providerID
		if c.id == "" {
			c.id = "call_" + strconv.Itoa(i+1) // the daemon's name for it; the model is sent a made one
		}
		tc, err := r.toolCall(c, s.reason == "length")
		if err != nil {
			return Result{}, err
		}
		res.ToolCalls = append(res.ToolCalls, tc)
	}
	return res, nil
}
