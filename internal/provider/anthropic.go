package provider

import (
	"bytes"
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"net/http"
	"strings"
)

// anthropicProvider is the provider of kind anthropic: the Messages API
// (POST /v1/messages) with streaming and tool use. The request is built and the
// event stream read here (anthropic_stream.go): the few types the API needs cost
// less than the SDK did, which was a fifth of the binary and 2.6 MiB of every idle
// daemon's memory (docs/BENCHMARKS.md), whether or not it was configured.
//
// Nothing is taken from the environment: the key is the entry's, sent in
// x-api-key (the header every Messages API server accepts), the base URL is the
// entry's or the public endpoint, and the one retry policy is ours (withRetries,
// with the entry's max_retries).
type anthropicProvider struct {
	r *remote
}

func newAnthropic(r *remote) *anthropicProvider {
	return &anthropicProvider{r: r}
}

// anthropicVersion is the API version every request names.
const anthropicVersion = "2023-06-01"

// Stream implements Provider.
func (p *anthropicProvider) Stream(ctx context.Context, req Request, emit func(Delta)) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	model, err := p.r.modelFor(req)
	if err != nil {
		return Result{}, err
	}
	body, err := json.Marshal(p.params(model, req))
	if err != nil {
		return Result{}, p.r.fail(0, "encoding the request: "+err.Error(), err)
	}
	return p.r.withRetries(ctx, emit, func(emit func(Delta)) (Result, error) {
		return p.attempt(ctx, model, body, emit)
	})
}

// messagesURL is the endpoint of the entry's base URL (or the public one).
func (p *anthropicProvider) messagesURL() string {
	base := p.r.baseURL
	if base == "" {
		base = DefaultAnthropicBaseURL
	}
	return strings.TrimSuffix(base, "/") + "/v1/messages"
}

// attempt makes one call.
func (p *anthropicProvider) attempt(ctx context.Context, model string, body []byte, emit func(Delta)) (Result, error) {
	callCtx, cancel := p.r.callContext(ctx)
	defer cancel()
	hreq, err := http.NewRequestWithContext(callCtx, http.MethodPost, p.messagesURL(), bytes.NewReader(body))
	if err != nil {
		return Result{}, p.r.fail(0, fmt.Sprintf("providers.%s.base_url: %s", p.r.name, p.r.redact(err.Error())), nil)
	}
	h := hreq.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	h.Set("Anthropic-Version", anthropicVersion)
	h.Set("X-Api-Key", p.r.key)
	resp, err := statusDoer{r: p.r, model: model}.Do(hreq)
	if err != nil {
		return Result{}, p.r.classify(ctx, callCtx, phaseConnect, err)
	}
	defer resp.Body.Close()
	res, events, err := p.read(resp.Body, emit)
	if err != nil {
		if _, ok := err.(*Error); ok {
			return Result{}, err
		}
		phase := phaseConnect
		if events > 0 {
			phase = phaseStream
		}
		return Result{}, p.r.classify(ctx, callCtx, phase, err)
	}
	return res, nil
}

// The request body of the Messages API, as much of it as a turn uses.
type (
	anParams struct {
		Model     string      `json:"model"`
		MaxTokens int         `json:"max_tokens"`
		System    []anText    `json:"system,omitempty"`
		Messages  []anMessage `json:"messages"`
		Tools     []anTool    `json:"tools,omitempty"`
		Stream    bool        `json:"stream"`
	}
	anText struct {
		Type string `json:"type"` // "text"
		Text string `json:"text"`
	}
	anMessage struct {
		Role    string    `json:"role"` // "user" or "assistant"
		Content []anBlock `json:"content"`
	}
	// anBlock is a text, tool_use or tool_result block.
	anBlock struct {
		Type      string         `json:"type"`
		Text      string         `json:"text,omitempty"`
		ID        string         `json:"id,omitempty"`
		Name      string         `json:"name,omitempty"`
		Input     jsontext.Value `json:"input,omitzero"`
		ToolUseID string         `json:"tool_use_id,omitempty"`
		Content   []anText       `json:"content,omitempty"`
		IsError   *bool          `json:"is_error,omitempty"`
	}
	anTool struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		InputSchema jsontext.Value `json:"input_schema"`
	}
)

func anTextBlock(text string) anBlock { return anBlock{Type: "text", Text: text} }

// params maps a Request onto the Messages API: the system prompt in system, the
// messages as alternating makes them, tool calls as tool_use blocks, and each run of
// consecutive tool results as one user message of tool_result blocks, which also
// takes the text of a user message that follows it (a turn stopped once its tools
// had run). Empty text blocks are left out: the API refuses them.
func (p *anthropicProvider) params(model string, req Request) anParams {
	params := anParams{Model: model, MaxTokens: DefaultMaxTokens, Stream: true}
	if req.MaxTokens > 0 {
		params.MaxTokens = req.MaxTokens
	}
	if req.System != "" {
		params.System = []anText{{Type: "text", Text: req.System}}
	}
	msgs := make([]anMessage, 0, len(req.Messages))
	// open is the index in msgs of the open user message of tool results, if the
	// last message is one, else -1.
	open := -1
	for _, m := range wireIDs(alternating(req.Messages), anthropicID) {
		switch m.Role {
		case RoleUser:
			text := m.Text
			if text == "" {
				text = emptyPrompt
			}
			if open >= 0 {
				msgs[open].Content = append(msgs[open].Content, anTextBlock(text))
			} else {
				msgs = append(msgs, anMessage{Role: "user", Content: []anBlock{anTextBlock(text)}})
			}
			open = -1
		case RoleAssistant:
			blocks := []anBlock{}
			if m.Text != "" {
				blocks = append(blocks, anTextBlock(m.Text))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name,
					Input: toolInput(tc.Arguments)})
			}
			msgs = append(msgs, anMessage{Role: "assistant", Content: blocks})
			open = -1
		case RoleTool:
			isError := m.IsError
			block := anBlock{Type: "tool_result", ToolUseID: m.ToolCallID,
				Content: []anText{{Type: "text", Text: toolResultText(m)}}, IsError: &isError}
			if open >= 0 {
				msgs[open].Content = append(msgs[open].Content, block)
			} else {
				msgs = append(msgs, anMessage{Role: "user", Content: []anBlock{block}})
				open = len(msgs) - 1
			}
		}
	}
	params.Messages = msgs
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, anTool{Name: t.Name, Description: t.Description,
			InputSchema: inputSchema(t.Parameters)})
	}
	return params
}

// toolInput is a call's arguments as the tool_use block's input, which must be a
// JSON object: arguments that are not one (a model's broken JSON, kept as it came)
// travel as {} rather than failing the whole request.
func toolInput(args jsontext.Value) jsontext.Value {
	v := jsontext.Value(argumentsText(args))
	if v.Kind() != '{' || !v.IsValid() {
		return jsontext.Value("{}")
	}
	return v
}

// anthropicErrorStatus is the HTTP status of an error event's type, for the error
// events whose status says whether another attempt may help.
var anthropicErrorStatus = map[string]int{
	"rate_limit_error":      http.StatusTooManyRequests,
	"overloaded_error":      statusOverloaded,
	"api_error":             http.StatusInternalServerError,
	"invalid_request_error": http.StatusBadRequest,
}

// emptyPrompt stands for an empty prompt: the API refuses a user message without text.
const emptyPrompt = "(empty message)"

// inputSchema is a tool's JSON Schema as input_schema: an object schema, with
// "type":"object" and properties ({} when it has none) first, then every other
// keyword as it came, in its order. A schema that is not a JSON object becomes
// the empty object schema.
func inputSchema(schema jsontext.Value) jsontext.Value {
	out := []byte(`{"type":"object"`)
	var props jsontext.Value
	var rest []byte
	dec := jsontext.NewDecoder(bytes.NewReader(schema))
	if tok, err := dec.ReadToken(); err == nil && tok.Kind() == '{' {
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				props, rest = nil, nil
				break
			}
			k := tok.String() // before ReadValue, which voids tok
			v, err := dec.ReadValue()
			if err != nil {
				props, rest = nil, nil
				break
			}
			switch k {
			case "type":
			case "properties":
				props = v.Clone()
			default:
				key, _ := jsontext.AppendQuote(nil, k)
				rest = append(append(append(append(rest, ','), key...), ':'), v...)
			}
		}
	}
	if props == nil {
		props = jsontext.Value("{}")
	}
	out = append(append(append(out, `,"properties":`...), props...), rest...)
	return jsontext.Value(append(out, '}'))
}
