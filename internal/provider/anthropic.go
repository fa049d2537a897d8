package provider

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"net/http"
	"strings"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// anthropicProvider is the provider of kind anthropic: the Messages API with
// streaming and tool use, through anthropic-sdk-go.
//
// Everything the SDK would otherwise find by itself is set here: it reads
// ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL, ANTHROPIC_PROFILE,
// ANTHROPIC_CUSTOM_HEADERS and profile files unless told not to
// (option.WithoutEnvironmentDefaults), and retries twice by default: switched off,
// so that the one retry policy is ours (withRetries, with the entry's max_retries). The key travels in x-api-key,
// the header every Messages API server accepts; the SDK's WithAPIKey would send
// it as an Authorization bearer token instead.
type anthropicProvider struct {
	r      *remote
	client anthropic.Client
}

func newAnthropic(r *remote) *anthropicProvider {
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHeader("x-api-key", r.key),
		option.WithMaxRetries(0),
	}
	if r.baseURL != "" {
		opts = append(opts, option.WithBaseURL(r.baseURL))
	}
	return &anthropicProvider{r: r, client: anthropic.NewClient(opts...)}
}

// Stream implements Provider.
func (p *anthropicProvider) Stream(ctx context.Context, req Request, emit func(Delta)) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	model, err := p.r.modelFor(req)
	if err != nil {
		return Result{}, err
	}
	params := p.params(model, req)
	return p.r.withRetries(ctx, emit, func(emit func(Delta)) (Result, error) {
		return p.attempt(ctx, model, params, emit)
	})
}

// attempt makes one call.
func (p *anthropicProvider) attempt(ctx context.Context, model string, params anthropic.MessageNewParams, emit func(Delta)) (Result, error) {
	callCtx, cancel := p.r.callContext(ctx)
	defer cancel()

	stream := p.client.Messages.NewStreaming(callCtx, params,
		option.WithHTTPClient(statusDoer{r: p.r, model: model}))
	defer stream.Close()

	var (
		text    strings.Builder
		calls   []*partialCall
		starts  = map[*partialCall]string{} // a tool_use's input as content_block_start gave it
		usage   Usage
		events  int
		stopped bool
		reason  anthropic.StopReason
	)
	callAt := func(index int64) *partialCall {
		for _, c := range calls {
			if c.index == int(index) {
				return c
			}
		}
		return nil
	}
	for stream.Next() {
		ev := stream.Current()
		events++
		switch ev.Type {
		case "message_start":
			u := ev.Message.Usage
			// input_tokens counts only what the cache did not cover.
			usage.InputTokens = int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens)
			usage.CachedInputTokens = int(u.CacheReadInputTokens)
			usage.OutputTokens = int(u.OutputTokens)
		case "content_block_start":
			cb := ev.ContentBlock
			switch cb.Type {
			case "text":
				if cb.Text != "" {
					text.WriteString(cb.Text)
					emit(Delta{Text: cb.Text})
				}
			case "thinking":
				if cb.Thinking != "" {
					emit(Delta{Thought: true, Text: cb.Thinking})
				}
			case "tool_use":
				c := &partialCall{index: int(ev.Index), id: cb.ID, providerID: cb.ID, name: cb.Name}
				calls = append(calls, c)
				starts[c] = cb.JSON.Input.Raw()
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				text.WriteString(ev.Delta.Text)
				emit(Delta{Text: ev.Delta.Text})
			case "thinking_delta":
				emit(Delta{Thought: true, Text: ev.Delta.Thinking})
			case "input_json_delta":
				c := callAt(ev.Index)
				if c == nil {
					return Result{}, p.r.fail(0, fmt.Sprintf(
						"the provider sent a malformed event: input_json_delta for content block %d, which is not a tool_use", ev.Index), errMalformed)
				}
				c.args.WriteString(ev.Delta.PartialJSON)
			}
		case "message_delta":
			// Counts in message_delta are cumulative.
			if n := int(ev.Usage.OutputTokens); n > 0 {
				usage.OutputTokens = n
			}
			if n := int(ev.Usage.InputTokens + ev.Usage.CacheCreationInputTokens + ev.Usage.CacheReadInputTokens); n > usage.InputTokens {
				usage.InputTokens = n
			}
			if n := int(ev.Usage.CacheReadInputTokens); n > usage.CachedInputTokens {
				usage.CachedInputTokens = n
			}
			if ev.Delta.StopReason != "" {
				reason = ev.Delta.StopReason
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		var apiErr *anthropic.Error
		if errors.As(err, &apiErr) && ctx.Err() == nil {
			msg := "the provider reported an error mid-stream"
			if t := string(apiErr.Type()); t != "" {
				msg += ": " + t
			}
			if apiErr.Message != "" {
				msg += ": " + clip(apiErr.Message)
			}
			return Result{}, p.r.fail(anthropicErrorStatus[string(apiErr.Type())], msg+"; try again", err)
		}
		phase := phaseConnect
		if events > 0 {
			phase = phaseStream
		}
		return Result{}, p.r.classify(ctx, callCtx, phase, err)
	}
	if !stopped {
		return Result{}, p.r.classify(ctx, callCtx, phaseStream, errStreamEnded)
	}

	res := Result{Text: text.String(), Usage: usage}
	for _, c := range calls {
		if c.args.Len() == 0 {
			c.args.WriteString(starts[c])
		}
		tc, err := p.r.toolCall(c, reason == anthropic.StopReasonMaxTokens)
		if err != nil {
			return Result{}, err
		}
		res.ToolCalls = append(res.ToolCalls, tc)
	}
	return res, nil
}

// params maps a Request onto the Messages API: the system prompt in System, the
// messages as alternating makes them, tool calls as tool_use blocks, and each run of
// consecutive tool results as one user message of tool_result blocks, which also
// takes the text of a user message that follows it (a turn stopped once its tools
// had run). Empty text blocks are left out: the API refuses them.
func (p *anthropicProvider) params(model string, req Request) anthropic.MessageNewParams {
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: DefaultMaxTokens,
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = int64(req.MaxTokens)
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	msgs := make([]anthropic.MessageParam, 0, len(req.Messages))
	// user is the open user message of tool results, if the last message is one.
	var user *anthropic.UserMessageParam
	for _, m := range wireIDs(alternating(req.Messages), anthropicID) {
		switch m.Role {
		case RoleUser:
			text := m.Text
			if text == "" {
				text = emptyPrompt
			}
			if user != nil {
				user.Content = append(user.Content, anthropic.NewTextBlock(text))
			} else {
				msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(text)))
			}
			user = nil
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, jsontext.Value(argumentsText(tc.Arguments)), tc.Name))
			}
			msgs = append(msgs, anthropic.NewAssistantMessage(blocks...))
			user = nil
		case RoleTool:
			block := anthropic.NewToolResultBlock(m.ToolCallID, toolResultText(m), m.IsError)
			if user != nil {
				user.Content = append(user.Content, block)
			} else {
				msgs = append(msgs, anthropic.NewUserMessage(block))
				user = msgs[len(msgs)-1].OfUser
			}
		}
	}
	params.Messages = msgs
	for _, t := range req.Tools {
		tool := &anthropic.ToolParam{Name: t.Name, InputSchema: inputSchema(t.Parameters)}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: tool})
	}
	return params
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

// inputSchema maps a JSON Schema object onto the SDK's input_schema: properties
// and required have fields of their own, every other keyword but type rides
// along as it is.
func inputSchema(schema jsontext.Value) anthropic.ToolInputSchemaParam {
	var in anthropic.ToolInputSchemaParam
	var fields map[string]jsontext.Value
	if json.Unmarshal(schema, &fields) != nil {
		in.Properties = map[string]any{}
		return in
	}
	for k, v := range fields {
		switch k {
		case "type":
		case "properties":
			in.Properties = v
		case "required":
			_ = json.Unmarshal(v, &in.Required)
		default:
			if in.ExtraFields == nil {
				in.ExtraFields = map[string]any{}
			}
			in.ExtraFields[k] = v
		}
	}
	if in.Properties == nil {
		in.Properties = map[string]any{}
	}
	return in
}
