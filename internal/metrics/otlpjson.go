package metrics

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The OTLP/HTTP JSON encoding of an ExportTraceServiceRequest (docs/protocol.md,
// "Metrics and traces"): the proto3 JSON mapping of opentelemetry-proto's trace
// messages with OTLP's exceptions: field names in lowerCamelCase, trace and span
// ids as hex strings (not base64), enums as integers. As proto3 JSON has it, 64-bit
// integers (times in nanoseconds, intValue) are decimal strings, bytes are base64,
// and zero values are left out. Written by hand instead of generated, so that the
// daemon links neither the OTLP protobuf packages nor gRPC (docs/BENCHMARKS.md,
// "Idle RSS and the trace exporter").

type otlpRequest struct {
	ResourceSpans []*otlpResourceSpans `json:"resourceSpans"`
}

type otlpResourceSpans struct {
	Resource   otlpResource      `json:"resource"`
	ScopeSpans []*otlpScopeSpans `json:"scopeSpans"`
	SchemaURL  string            `json:"schemaUrl,omitempty"`
}

type otlpResource struct {
	Attributes []otlpKeyValue `json:"attributes,omitempty"`
}

type otlpScopeSpans struct {
	Scope     otlpScope  `json:"scope"`
	Spans     []otlpSpan `json:"spans"`
	SchemaURL string     `json:"schemaUrl,omitempty"`
}

type otlpScope struct {
	Name       string         `json:"name,omitempty"`
	Version    string         `json:"version,omitempty"`
	Attributes []otlpKeyValue `json:"attributes,omitempty"`
}

type otlpSpan struct {
	TraceID                string         `json:"traceId"`
	SpanID                 string         `json:"spanId"`
	TraceState             string         `json:"traceState,omitempty"`
	ParentSpanID           string         `json:"parentSpanId,omitempty"`
	Flags                  uint32         `json:"flags,omitempty"`
	Name                   string         `json:"name"`
	Kind                   int            `json:"kind,omitempty"`
	StartTimeUnixNano      uint64         `json:"startTimeUnixNano,string"`
	EndTimeUnixNano        uint64         `json:"endTimeUnixNano,string"`
	Attributes             []otlpKeyValue `json:"attributes,omitempty"`
	DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
	Events                 []otlpEvent    `json:"events,omitempty"`
	DroppedEventsCount     uint32         `json:"droppedEventsCount,omitempty"`
	Links                  []otlpLink     `json:"links,omitempty"`
	DroppedLinksCount      uint32         `json:"droppedLinksCount,omitempty"`
	Status                 *otlpStatus    `json:"status,omitempty"`
}

type otlpEvent struct {
	TimeUnixNano           uint64         `json:"timeUnixNano,string"`
	Name                   string         `json:"name"`
	Attributes             []otlpKeyValue `json:"attributes,omitempty"`
	DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
}

type otlpLink struct {
	TraceID                string         `json:"traceId"`
	SpanID                 string         `json:"spanId"`
	TraceState             string         `json:"traceState,omitempty"`
	Attributes             []otlpKeyValue `json:"attributes,omitempty"`
	DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
	Flags                  uint32         `json:"flags,omitempty"`
}

type otlpStatus struct {
	Message string `json:"message,omitempty"`
	Code    int    `json:"code,omitempty"`
}

type otlpKeyValue struct {
	Key   string       `json:"key"`
	Value otlpAnyValue `json:"value"`
}

// otlpAnyValue is AnyValue, a oneof: at most one field is set ({} is an empty
// value).
type otlpAnyValue struct {
	StringValue *string         `json:"stringValue,omitempty"`
	BoolValue   *bool           `json:"boolValue,omitempty"`
	IntValue    *int64          `json:"intValue,omitempty,string"`
	DoubleValue *otlpDouble     `json:"doubleValue,omitempty"`
	BytesValue  []byte          `json:"bytesValue,omitempty"` // base64
	ArrayValue  *otlpArrayValue `json:"arrayValue,omitempty"`
	KvlistValue *otlpKvList     `json:"kvlistValue,omitempty"`
}

type otlpArrayValue struct {
	Values []otlpAnyValue `json:"values"`
}

type otlpKvList struct {
	Values []otlpKeyValue `json:"values"`
}

// otlpDouble is a double as proto3 JSON writes one: a number, or "NaN",
// "Infinity", "-Infinity".
type otlpDouble float64

func (d otlpDouble) MarshalJSON() ([]byte, error) {
	f := float64(d)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// The enums of OTLP's Span and Status, which differ from the SDK's codes.
const (
	otlpStatusOK    = 1
	otlpStatusError = 2
	// Span flags: the low 8 bits are the W3C trace flags; these two tell whether
	// the parent is remote.
	otlpFlagHasIsRemote = 0x100
	otlpFlagIsRemote    = 0x200
)

// encodeSpans is the JSON body of an OTLP/HTTP export of spans: grouped by
// resource, then by instrumentation scope, in the order they came.
func encodeSpans(spans []sdktrace.ReadOnlySpan) ([]byte, error) {
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	var req otlpRequest
	byRes := map[attribute.Distinct]*otlpResourceSpans{}
	byScope := map[scopeKey]*otlpScopeSpans{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		res := s.Resource()
		rk := res.Equivalent()
		rs := byRes[rk]
		if rs == nil {
			rs = &otlpResourceSpans{Resource: otlpResourceOf(res), SchemaURL: res.SchemaURL()}
			byRes[rk] = rs
			req.ResourceSpans = append(req.ResourceSpans, rs)
		}
		sc := s.InstrumentationScope()
		sk := scopeKey{rk, sc}
		ss := byScope[sk]
		if ss == nil {
			ss = &otlpScopeSpans{Scope: otlpScope{Name: sc.Name, Version: sc.Version, Attributes: otlpAttrs(sc.Attributes.ToSlice())},
				SchemaURL: sc.SchemaURL}
			byScope[sk] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, otlpSpanOf(s))
	}
	if req.ResourceSpans == nil {
		req.ResourceSpans = []*otlpResourceSpans{}
	}
	return json.Marshal(&req)
}

func otlpResourceOf(r *resource.Resource) otlpResource {
	return otlpResource{Attributes: otlpAttrs(r.Attributes())}
}

func otlpSpanOf(s sdktrace.ReadOnlySpan) otlpSpan {
	sc := s.SpanContext()
	out := otlpSpan{
		TraceID:                traceID(sc.TraceID()),
		SpanID:                 spanID(sc.SpanID()),
		TraceState:             sc.TraceState().String(),
		Flags:                  otlpFlags(sc.TraceFlags(), s.Parent()),
		Name:                   s.Name(),
		Kind:                   otlpKind(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime().UnixNano()),
		EndTimeUnixNano:        unixNano(s.EndTime().UnixNano()),
		Attributes:             otlpAttrs(s.Attributes()),
		DroppedAttributesCount: clampCount(s.DroppedAttributes()),
		DroppedEventsCount:     clampCount(s.DroppedEvents()),
		DroppedLinksCount:      clampCount(s.DroppedLinks()),
	}
	if p := s.Parent().SpanID(); p.IsValid() {
		out.ParentSpanID = spanID(p)
	}
	if st := s.Status(); st.Code != codes.Unset || st.Description != "" {
		out.Status = &otlpStatus{Message: st.Description}
		switch st.Code {
		case codes.Ok:
			out.Status.Code = otlpStatusOK
		case codes.Error:
			out.Status.Code = otlpStatusError
		}
	}
	for _, e := range s.Events() {
		out.Events = append(out.Events, otlpEvent{TimeUnixNano: unixNano(e.Time.UnixNano()), Name: e.Name,
			Attributes: otlpAttrs(e.Attributes), DroppedAttributesCount: clampCount(e.DroppedAttributeCount)})
	}
	for _, l := range s.Links() {
		out.Links = append(out.Links, otlpLink{TraceID: traceID(l.SpanContext.TraceID()), SpanID: spanID(l.SpanContext.SpanID()),
			TraceState: l.SpanContext.TraceState().String(), Attributes: otlpAttrs(l.Attributes),
			DroppedAttributesCount: clampCount(l.DroppedAttributeCount), Flags: otlpFlags(l.SpanContext.TraceFlags(), l.SpanContext)})
	}
	return out
}

func traceID(id trace.TraceID) string { return hex.EncodeToString(id[:]) }
func spanID(id trace.SpanID) string   { return hex.EncodeToString(id[:]) }

// otlpKind is the OTLP SpanKind of k: the SDK's values are OTLP's (unspecified 0,
// internal 1, server 2, client 3, producer 4, consumer 5).
func otlpKind(k trace.SpanKind) int {
	if k < trace.SpanKindUnspecified || k > trace.SpanKindConsumer {
		return 0
	}
	return int(k)
}

// otlpFlags are a span's (or a link's) flags: its trace flags, and whether its
// parent (the link's context) is remote.
func otlpFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | otlpFlagHasIsRemote
	if parent.IsRemote() {
		f |= otlpFlagIsRemote
	}
	return f
}

func unixNano(n int64) uint64 { return uint64(max(0, n)) }

func clampCount(n int) uint32 { return uint32(min(max(n, 0), math.MaxUint32)) }

func otlpAttrs(kvs []attribute.KeyValue) []otlpKeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]otlpKeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, otlpKeyValue{Key: string(kv.Key), Value: otlpValue(kv.Value)})
	}
	return out
}

func otlpValue(v attribute.Value) otlpAnyValue {
	var a otlpAnyValue
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		a.BoolValue = &b
	case attribute.INT64:
		i := v.AsInt64()
		a.IntValue = &i
	case attribute.FLOAT64:
		d := otlpDouble(v.AsFloat64())
		a.DoubleValue = &d
	case attribute.STRING:
		s := v.AsString()
		a.StringValue = &s
	case attribute.BYTESLICE:
		a.BytesValue = v.AsByteSlice()
		if a.BytesValue == nil {
			a.BytesValue = []byte{}
		}
	case attribute.BOOLSLICE:
		a.ArrayValue = arrayOf(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		a.ArrayValue = arrayOf(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		a.ArrayValue = arrayOf(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		a.ArrayValue = arrayOf(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		a.ArrayValue = arrayOf(v.AsSlice(), func(e attribute.Value) attribute.Value { return e })
	case attribute.MAP:
		a.KvlistValue = &otlpKvList{Values: otlpAttrs(v.AsMap())}
		if a.KvlistValue.Values == nil {
			a.KvlistValue.Values = []otlpKeyValue{}
		}
	case attribute.EMPTY:
	default:
		s := "INVALID"
		a.StringValue = &s
	}
	return a
}

func arrayOf[T any](vs []T, value func(T) attribute.Value) *otlpArrayValue {
	arr := &otlpArrayValue{Values: make([]otlpAnyValue, 0, len(vs))}
	for _, e := range vs {
		arr.Values = append(arr.Values, otlpValue(value(e)))
	}
	return arr
}
