package metrics

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/agent"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// The GenAI semantic conventions' attributes the spans carry (docs/protocol.md,
// "Metrics and traces"). Never a prompt, an output, a path or a session id.
const (
	attrOperation    = "gen_ai.operation.name"
	attrProvider     = "gen_ai.provider.name"
	attrAgent        = "gen_ai.agent.name"
	attrModel        = "gen_ai.request.model"
	attrInputTokens  = "gen_ai.usage.input_tokens"
	attrOutputTokens = "gen_ai.usage.output_tokens"
	attrCachedTokens = "gen_ai.usage.cache_read.input_tokens"
	attrFinish       = "gen_ai.response.finish_reasons"
	attrTool         = "gen_ai.tool.name"
)

// Telemetry is the agent.Telemetry of the daemon: each turn, model call and tool
// call is counted in m and, when tr is not nil, traced.
func Telemetry(m *Metrics, tr *Tracer) agent.Telemetry {
	t := &telemetry{m: m, tracer: noop.NewTracerProvider().Tracer("")}
	if tr != nil {
		t.tracer = tr.tracer
	}
	return t
}

type telemetry struct {
	m      *Metrics
	tracer trace.Tracer
}

func (t *telemetry) StartTurn(ctx context.Context, alias, providerName, model string) (context.Context, agent.TurnObserver) {
	ctx, span := t.tracer.Start(ctx, "invoke_agent "+alias, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String(attrOperation, "invoke_agent"),
			attribute.String(attrAgent, alias),
			attribute.String(attrProvider, providerName),
			attribute.String(attrModel, model),
		))
	return ctx, &turnObserver{t: t, span: span, provider: providerName, start: time.Now()}
}

type turnObserver struct {
	t        *telemetry
	span     trace.Span
	provider string
	start    time.Time
}

func (o *turnObserver) End(stopReason string, u llm.Usage) {
	o.t.m.TurnEnded(stopReason, time.Since(o.start))
	o.span.SetAttributes(
		attribute.StringSlice(attrFinish, []string{stopReason}),
		attribute.Int(attrInputTokens, u.InputTokens),
		attribute.Int(attrOutputTokens, u.OutputTokens),
	)
	if stopReason == agent.Error {
		o.span.SetStatus(codes.Error, "the turn failed")
	}
	o.span.End()
}

func (o *turnObserver) ModelCall(ctx context.Context, model string) (context.Context, agent.ModelCallObserver) {
	ctx, span := o.t.tracer.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String(attrOperation, "chat"),
			attribute.String(attrProvider, o.provider),
			attribute.String(attrModel, model),
		))
	return ctx, &modelCall{turn: o, span: span, model: model, start: time.Now(), first: -1}
}

func (o *turnObserver) ToolCall(ctx context.Context, name string) (context.Context, agent.ToolCallObserver) {
	label := name
	if label == "" {
		label = "unknown"
	}
	ctx, span := o.t.tracer.Start(ctx, "execute_tool "+label, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String(attrOperation, "execute_tool"),
			attribute.String(attrTool, label),
		))
	return ctx, &toolCall{turn: o, span: span, name: name, start: time.Now()}
}

type modelCall struct {
	turn  *turnObserver
	span  trace.Span
	model string
	start time.Time
	first time.Duration // negative until the first output
}

func (c *modelCall) FirstToken() {
	if c.first < 0 {
		c.first = time.Since(c.start)
	}
}

func (c *modelCall) End(u llm.Usage, err error) {
	c.turn.t.m.ModelCall(c.turn.provider, c.model, err == nil, c.first, u.InputTokens, u.OutputTokens)
	c.span.SetAttributes(
		attribute.Int(attrInputTokens, u.InputTokens),
		attribute.Int(attrOutputTokens, u.OutputTokens),
	)
	if u.CachedInputTokens > 0 {
		c.span.SetAttributes(attribute.Int(attrCachedTokens, u.CachedInputTokens))
	}
	if err != nil {
		// Not the error's text: a provider's message may quote the request.
		c.span.SetAttributes(attribute.String("error.type", "model_call_failed"))
		c.span.SetStatus(codes.Error, "the model call failed")
	}
	c.span.End()
}

type toolCall struct {
	turn  *turnObserver
	span  trace.Span
	name  string
	start time.Time
}

func (c *toolCall) End(isError bool) {
	c.turn.t.m.ToolCall(c.name, !isError, time.Since(c.start))
	if isError {
		c.span.SetAttributes(attribute.String("error.type", "tool_error"))
		c.span.SetStatus(codes.Error, "the tool reported an error")
	}
	c.span.End()
}
