package provider

import (
	"context"
	"encoding/json/jsontext"
	"net/http"
	"strings"
	"testing"
)

// The event stream as servers and proxies frame it, not only as the fake server
// does: CRLF line ends, keep-alive comments, an event without an event line, a
// JSON value split over two data lines, and a delta larger than the reader's
// buffer. All of it must come out as the same answer.
func TestAnthropicReadsEveryFramingOfTheEventStream(t *testing.T) {
	long := strings.Repeat("0123456789", 10_000) // 100 KB, beyond the 32 KiB buffer
	raw := strings.Join([]string{
		": a keep-alive before anything",
		"event: message_start",
		"data: " + anStart,
		"",
		"event: content_block_start",
		"data: " + anBlockStart(0, `{"type":"text","text":"He"}`),
		"",
		":ping",
		"data: " + anDelta(0, `{"type":"text_delta","text":"llo "}`), // no event line
		"",
		"event: content_block_delta",
		`data: {"type":"content_block_delta","index":0,`,
		`data: "delta":{"type":"text_delta","text":"there"}}`,
		"",
		"event: content_block_delta",
		"data:" + anDelta(0, `{"type":"text_delta","text":"`+long+`"}`), // no space after the colon
		"",
		"",
		"event: content_block_stop",
		"data: " + anBlockStop(0),
		"",
		"event: message_delta",
		"data: " + anMessageDelta("end_turn", 7),
		"",
		"event: message_stop",
		"data: " + anStop,
		"",
		"",
	}, "\r\n")
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(raw))
	})
	var rec recorder
	res, err := newTestAnthropic(t, srv.URL).Stream(context.Background(), Request{Messages: []Message{user("hi")}}, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Hello there" + long; res.Text != want || rec.text() != want {
		t.Errorf("Text has %d bytes, deltas %d, want %d", len(res.Text), len(rec.text()), len(want))
	}
	if res.Usage != (Usage{InputTokens: 30, OutputTokens: 7, CachedInputTokens: 5}) {
		t.Errorf("Usage = %+v", res.Usage)
	}
}

// A stream that stops in the middle of an event, or whose event has no
// content_block, is an error that says so, never a short answer.
func TestAnthropicRefusesAnEventCutOrWithoutItsBlock(t *testing.T) {
	for _, tt := range []struct{ name, tail, want string }{
		{"cut inside an event", "event: content_block_delta\ndata: " + anDelta(0, `{"type":"text_delta","text":"x"}`) + "\n", "the stream ended early"},
		{"cut inside a line", "event: content_block_delta\ndata: {\"type\":", "the stream ended early"},
		{"no content_block", "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0}\n\n", "malformed event: content_block_start 0 without its content_block"},
		{"no delta", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0}\n\n", "malformed event: content_block_delta 0 without its delta"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte("event: message_start\ndata: " + anStart + "\n\n" + tt.tail))
			})
			_, err := newTestAnthropic(t, srv.URL).Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {})
			if pe := asError(t, err); !strings.Contains(pe.Message, tt.want) {
				t.Errorf("Message = %q, want %q", pe.Message, tt.want)
			}
		})
	}
}

// input_schema is an object schema whatever the tool gave: type object and
// properties first, every other keyword as it came and in its order.
func TestAnthropicInputSchemaKeepsTheToolsKeywords(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"object","properties":{"p":{"type":"string"}},"required":["p"],"additionalProperties":false}`: `{"type":"object","properties":{"p":{"type":"string"}},"required":["p"],"additionalProperties":false}`,
		`{"required":[],"$defs":{"a":{}},"properties":{"q":{}}}`:                                               `{"type":"object","properties":{"q":{}},"required":[],"$defs":{"a":{}}}`,
		`{}`:                  `{"type":"object","properties":{}}`,
		``:                    `{"type":"object","properties":{}}`,
		`[1,2]`:               `{"type":"object","properties":{}}`,
		`{"type":"object",`:   `{"type":"object","properties":{}}`,
		`{"description":"d"}`: `{"type":"object","properties":{},"description":"d"}`,
	} {
		if got := string(inputSchema(jsontext.Value(in))); got != want {
			t.Errorf("inputSchema(%s) = %s, want %s", in, got, want)
		}
	}
}

// A call whose arguments are not a JSON object (a model's broken JSON, kept as
// it came) is sent back as {}: the API would refuse the whole request otherwise.
func TestAnthropicSendsBrokenArgumentsBackAsAnEmptyObject(t *testing.T) {
	var got anRequest
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = decodeAN(t, r)
		s := newSSE(w)
		s.event("message_start", anStart)
		s.event("message_delta", anMessageDelta("end_turn", 1))
		s.event("message_stop", anStop)
	})
	req := Request{Messages: []Message{
		user("go"),
		{Role: RoleAssistant, ToolCalls: []ToolCall{
			{ID: "toolu_1", Name: "shell", Arguments: jsontext.Value(`{"command": "ls`)},
			{ID: "toolu_2", Name: "shell", Arguments: jsontext.Value(`["ls"]`)},
			{ID: "toolu_3", Name: "shell", Arguments: jsontext.Value(`{"command":"ls"}`)},
		}},
		{Role: RoleTool, ToolCallID: "toolu_1", Text: "bad arguments", IsError: true},
		{Role: RoleTool, ToolCallID: "toolu_2", Text: "bad arguments", IsError: true},
		{Role: RoleTool, ToolCallID: "toolu_3", Text: "a b"},
	}}
	if _, err := newTestAnthropic(t, srv.URL).Stream(context.Background(), req, func(Delta) {}); err != nil {
		t.Fatal(err)
	}
	var inputs []string
	for _, c := range got.Messages[1].Content {
		inputs = append(inputs, string(c.Input))
	}
	if d := diff([]string{`{}`, `{}`, `{"command":"ls"}`}, inputs); d != "" {
		t.Error(d)
	}
}
