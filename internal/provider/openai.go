package provider

import (
	"context"
	jsonv1 "encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// openAI is the provider of kind openai: any OpenAI-compatible chat completions
// endpoint with streaming (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter), through
// go-openai. Without a key no Authorization header is sent (go-openai sends none
// for an empty token), which is what Ollama and llama.cpp expect.
type openAI struct {
	r *remote
}

func newOpenAI(r *remote) *openAI { return &openAI{r: r} }

// openAIEmptyLinesMax bounds the non-data lines (keep-alive comments, blank lines)
// tolerated between two events; OpenRouter sends comments while a model warms up.
const openAIEmptyLinesMax = 1000

// Stream implements Provider.
func (p *openAI) Stream(ctx context.Context, req Request, emit func(Delta)) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	model, err := p.r.modelFor(req)
	if err != nil {
		return Result{}, err
	}
	creq := p.request(model, req)
	return p.r.withRetries(ctx, emit, func(emit func(Delta)) (Result, error) {
		return p.attempt(ctx, model, creq, emit)
	})
}

// attempt makes one call.
func (p *openAI) attempt(ctx context.Context, model string, creq openai.ChatCompletionRequest, emit func(Delta)) (Result, error) {
	callCtx, cancel := p.r.callContext(ctx)
	defer cancel()

	cfg := openai.DefaultConfig(p.r.key)
	if p.r.baseURL != "" {
		cfg.BaseURL = p.r.baseURL
	}
	cfg.HTTPClient = statusDoer{r: p.r, model: model}
	cfg.EmptyMessagesLimit = openAIEmptyLinesMax
	client := openai.NewClientWithConfig(cfg)

	stream, err := client.CreateChatCompletionStream(callCtx, creq)
	if err != nil {
		if errors.Is(err, openai.ErrChatCompletionInvalidModel) || isOpenAIValidation(err) {
			return Result{}, p.r.fail(0, "the request does not suit the model "+strconv.Quote(model)+": "+err.Error(), err)
		}
		return Result{}, p.r.classify(ctx, callCtx, phaseConnect, err)
	}
	defer stream.Close()

	st := oaStream{emit: emit}
	for {
		raw, err := stream.RecvRaw()
		if err == io.EOF {
			break
		}
		if err != nil {
			var apiErr *openai.APIError
			if errors.As(err, &apiErr) && ctx.Err() == nil {
				// The stream's status was 200: what the event says of its kind stands in.
				msg := "the provider reported an error mid-stream"
				if apiErr.Code != nil {
					msg += fmt.Sprintf(" (code %v)", apiErr.Code)
				} else if apiErr.Type != "" {
					msg += " (" + apiErr.Type + ")"
				}
				return Result{}, p.r.fail(apiErr.HTTPStatusCode, msg+": "+clip(apiErr.Message), err)
			}
			return Result{}, p.r.classify(ctx, callCtx, phaseStream, err)
		}
		if err := st.add(raw); err != nil {
			if ctx.Err() != nil {
				return Result{}, ctx.Err()
			}
			return Result{}, p.r.fail(0, "the provider sent a malformed event: "+trimErr(err), err)
		}
	}
	if !st.finished {
		return Result{}, p.r.classify(ctx, callCtx, phaseStream, errStreamEnded)
	}
	return st.result(p.r)
}

// request maps a Request onto a chat completion: the system prompt first, then the
// messages as alternating makes them; assistant tool calls as function tool calls,
// results as role tool.
//
// A user message right after tool results (a turn stopped once its tools had run)
// gets an assistant message saying so before it: strict chat templates (Mistral's,
// among others) leave tool results and the assistant messages that made calls out
// of their alternation check, and would see two user messages in a row.
func (p *openAI) request(model string, req Request) openai.ChatCompletionRequest {
	msgs := make([]openai.ChatCompletionMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: req.System})
	}
	afterTool := false
	for _, m := range wireIDs(alternating(req.Messages), p.idRule(model)) {
		switch m.Role {
		case RoleUser:
			if afterTool {
				filler := StoppedReply
				if m.Steered {
					filler = SteeredReply
				}
				msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: filler})
			}
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: m.Text})
		case RoleAssistant:
			msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: m.Text}
			for _, tc := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{
					ID:       tc.ID,
					Type:     openai.ToolTypeFunction,
					Function: openai.FunctionCall{Name: tc.Name, Arguments: argumentsText(tc.Arguments)},
				})
			}
			msgs = append(msgs, msg)
		case RoleTool:
			msgs = append(msgs, openai.ChatCompletionMessage{
				Role:       openai.ChatMessageRoleTool,
				Content:    toolResultText(m),
				ToolCallID: m.ToolCallID,
			})
		}
		afterTool = m.Role == RoleTool
	}
	creq := openai.ChatCompletionRequest{
		Model:         model,
		Messages:      msgs,
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	}
	for _, t := range req.Tools {
		creq.Tools = append(creq.Tools, openai.Tool{
			Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  jsonv1.RawMessage(schemaText(t.Parameters)),
			},
		})
	}
	if req.MaxTokens > 0 {
		// Reasoning models take max_completion_tokens and refuse max_tokens;
		// go-openai's validator knows which they are.
		creq.MaxTokens = req.MaxTokens
		if errors.Is(openai.NewReasoningValidator().Validate(creq), openai.ErrReasoningModelMaxTokensDeprecated) {
			creq.MaxTokens, creq.MaxCompletionTokens = 0, req.MaxTokens
		}
	}
	return creq
}

// isOpenAIValidation reports an error go-openai raises before sending anything.
func isOpenAIValidation(err error) bool {
	for _, e := range []error{
		openai.ErrReasoningModelMaxTokensDeprecated, openai.ErrReasoningModelLimitationsLogprobs,
		openai.ErrReasoningModelLimitationsOther, openai.ErrO1BetaLimitationsMessageTypes,
		openai.ErrO1BetaLimitationsTools, openai.ErrReasoningEffortUnsupported,
		openai.ErrReasoningToolsRequireResponses, openai.ErrReasoningSamplingUnsupported,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// mistralNames are what the names of Mistral's models and API start or contain.
var mistralNames = []string{"mistral", "magistral", "devstral", "codestral", "ministral", "pixtral", "voxtral"}

// idRule is what a provider's tool-call id must be for model to be sent it back:
// Mistral's models refuse any id but 9 characters of [a-zA-Z0-9], on Mistral's API
// and under vLLM's and llama.cpp's Mistral templates alike. Their own ids follow
// the rule; what does not is an id of another provider, from before the session
// switched models, and that one is sent as a made id instead. Other models take
// any id (nil).
func (p *openAI) idRule(model string) func(string) bool {
	where := strings.ToLower(model + " " + p.r.baseURL)
	for _, n := range mistralNames {
		if strings.Contains(where, n) {
			return IsWireID
		}
	}
	return nil
}
