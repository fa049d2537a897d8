package provider

import (
	"bufio"
	"bytes"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The Messages API streams server-sent events (text/event-stream): "event: <type>"
// and "data: <json>" lines, an empty line ending each event, comment lines
// starting with ":" in between. Each event's JSON names its type as well; an
// "error" event (overloaded, rate limited mid-stream) ends the stream.

// sseReader reads the events of a server-sent event stream.
type sseReader struct {
	r     *bufio.Reader
	line  []byte // a line longer than the reader's buffer, gathered
	data  []byte // the data lines of the event being read, joined by "\n"
	event string
}

// errOversized: a line or an event beyond maxEventBytes.
var errOversized = fmt.Errorf("an event of more than %d MiB", maxEventBytes>>20)

// maxEventBytes bounds one event's data: a tool call's whole input can come in one
// content_block_start, but no event of a sane server nears this.
const maxEventBytes = 64 << 20

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 32<<10)}
}

// next returns the next event's name and data (valid until the next call); io.EOF
// once the stream ends between events, io.ErrUnexpectedEOF when it ends inside one.
func (s *sseReader) next() (string, []byte, error) {
	s.data, s.event = s.data[:0], ""
	inEvent := false
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && inEvent {
				return "", nil, io.ErrUnexpectedEOF
			}
			return "", nil, err
		}
		if len(line) == 0 {
			if inEvent {
				return s.event, s.data, nil
			}
			continue
		}
		if line[0] == ':' { // a comment (a keep-alive)
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			s.event, inEvent = string(value), true
		case "data":
			if inEvent && len(s.data) > 0 {
				s.data = append(s.data, '\n')
			}
			if len(s.data)+len(value) > maxEventBytes {
				return "", nil, errOversized
			}
			s.data = append(s.data, value...)
			inEvent = true
		}
	}
}

// readLine returns the next line without its end ("\n", "\r\n"), valid until
// the next call.
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.line = append(s.line[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(s.line) > maxEventBytes {
				return nil, errOversized
			}
			line, err = s.r.ReadSlice('\n')
			s.line = append(s.line, line...)
		}
		line = s.line
	}
	if err != nil {
		if len(line) > 0 && errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF // a last line with no end
		}
		return nil, err
	}
	line = line[:len(line)-1]
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// anEvent is one event of a Messages stream, the fields of every type in one.
type anEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		Usage anUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type     string         `json:"type"`
		Text     string         `json:"text"`
		Thinking string         `json:"thinking"`
		ID       string         `json:"id"`
		Name     string         `json:"name"`
		Input    jsontext.Value `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type anUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// read reads a Messages stream to its message_stop, emitting text and thinking as
// they come, and returns the answer and how many events it read. An error that is
// not a *Error is the connection's, for classify.
func (p *anthropicProvider) read(body io.Reader, emit func(Delta)) (Result, int, error) {
	var (
		sse     = newSSEReader(body)
		text    strings.Builder
		calls   []*partialCall
		starts  = map[*partialCall]jsontext.Value{} // a tool_use's input as content_block_start gave it
		usage   Usage
		events  int
		stopped bool
		reason  string
	)
	callAt := func(index int) *partialCall {
		for _, c := range calls {
			if c.index == index {
				return c
			}
		}
		return nil
	}
	for !stopped {
		name, data, err := sse.next()
		if errors.Is(err, io.EOF) {
			return Result{}, events, errStreamEnded
		}
		if err != nil {
			if errors.Is(err, errOversized) {
				return Result{}, events, p.malformed("%v", err)
			}
			return Result{}, events, err
		}
		events++
		var ev anEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return Result{}, events, p.malformed("%s: %s", eventName(name, ev.Type), trimErr(err))
		}
		if ev.Type == "" {
			ev.Type = name
		}
		switch ev.Type {
		case "error":
			return Result{}, events, p.errorEvent(ev)
		case "message_start":
			if ev.Message != nil {
				u := ev.Message.Usage
				// input_tokens counts only what the cache did not cover.
				usage.InputTokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
				usage.CachedInputTokens = u.CacheReadInputTokens
				usage.OutputTokens = u.OutputTokens
			}
		case "content_block_start":
			cb := ev.ContentBlock
			if cb == nil {
				return Result{}, events, p.malformed("content_block_start %d without its content_block", ev.Index)
			}
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
				c := &partialCall{index: ev.Index, id: cb.ID, providerID: cb.ID, name: cb.Name}
				calls = append(calls, c)
				starts[c] = cb.Input
			}
		case "content_block_delta":
			d := ev.Delta
			if d == nil {
				return Result{}, events, p.malformed("content_block_delta %d without its delta", ev.Index)
			}
			switch d.Type {
			case "text_delta":
				text.WriteString(d.Text)
				emit(Delta{Text: d.Text})
			case "thinking_delta":
				emit(Delta{Thought: true, Text: d.Thinking})
			case "input_json_delta":
				c := callAt(ev.Index)
				if c == nil {
					return Result{}, events, p.malformed("input_json_delta for content block %d, which is not a tool_use", ev.Index)
				}
				c.args.WriteString(d.PartialJSON)
			}
		case "message_delta":
			if u := ev.Usage; u != nil { // counts in message_delta are cumulative
				if u.OutputTokens > 0 {
					usage.OutputTokens = u.OutputTokens
				}
				usage.InputTokens = max(usage.InputTokens, u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens)
				usage.CachedInputTokens = max(usage.CachedInputTokens, u.CacheReadInputTokens)
			}
			if ev.Delta != nil && ev.Delta.StopReason != "" {
				reason = ev.Delta.StopReason
			}
		case "message_stop":
			stopped = true
		}
		// ping, content_block_stop, and types newer than this code: nothing to do.
	}
	res := Result{Text: text.String(), Usage: usage}
	for _, c := range calls {
		if c.args.Len() == 0 && len(starts[c]) > 0 {
			c.args.Write(starts[c])
		}
		tc, err := p.r.toolCall(c, reason == "max_tokens")
		if err != nil {
			return Result{}, events, err
		}
		res.ToolCalls = append(res.ToolCalls, tc)
	}
	return res, events, nil
}

func (p *anthropicProvider) malformed(format string, args ...any) error {
	return p.r.fail(0, "the provider sent a malformed event: "+fmt.Sprintf(format, args...), errMalformed)
}

// errorEvent describes an error event: its type says whether trying again may help.
func (p *anthropicProvider) errorEvent(ev anEvent) error {
	msg := "the provider reported an error mid-stream"
	var kind, detail string
	if ev.Error != nil {
		kind, detail = ev.Error.Type, ev.Error.Message
	}
	if kind != "" {
		msg += ": " + kind
	}
	if detail != "" {
		msg += ": " + clip(p.r.redact(detail))
	}
	return p.r.fail(anthropicErrorStatus[kind], msg+"; try again", errors.New(msg))
}

// eventName is the event's type for a message: its JSON's, else its event line's.
func eventName(name, typ string) string {
	if typ != "" {
		return typ
	}
	if name != "" {
		return name
	}
	return "an event"
}
