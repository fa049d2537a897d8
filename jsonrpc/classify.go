package jsonrpc

import (
	"bytes"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"io"
	"strings"
	"sync"
)

// Envelope is what Classify made of one inbound frame. Exactly one field is set.
type Envelope struct {
	Request  *Request  // a well-formed request or notification: dispatch it
	Response *Response // a well-formed response: match it against our pending calls
	Reject   *Response // the error reply to send for a malformed or unparsable frame
	Dropped  string    // why a malformed response-shaped frame was dropped unanswered
}

var decoders = sync.Pool{New: func() any { return jsontext.NewDecoder(bytes.NewBuffer(nil)) }}

// Classify applies the envelope rules of the seed ("Bidirectional requests") and
// docs/protocol.md, "Transport and framing", to one frame. The returned messages
// alias frame; the caller must not reuse frame while they are in use.
//
// The rules, in the order they apply:
//   - Invalid JSON, invalid UTF-8, duplicate member names (RFC 7493), or more than one
//     value in the frame: -32700 with id null.
//   - Direction-ambiguous frames get -32600 with id null, because no id in them can be
//     trusted to belong to a request: a non-object (batch arrays included), a non-string
//     "method", "method" together with "result" or "error", or none of the three.
//   - Request-shaped frames ("method" is a string) that break a rule get -32600 with
//     their id when that id is a string, number or null, else with id null.
//   - Response-shaped frames ("result" or "error" without "method") that break a rule
//     are dropped unanswered: echoing their id could complete an unrelated request of
//     ours in the opposite direction.
//
// Member names match exactly: "Method" is an unknown member, not "method".
func Classify(frame []byte) Envelope { return classify(frame, nil) }

// classify is Classify taking the Request and its method name from a (nil: the heap).
func classify(frame []byte, a *arena) Envelope {
	var f fields
	if !f.scan(frame) { // the fast path (scan.go) was not sure: the decoder decides
		f = fields{}
		if err := f.decode(frame); err != nil {
			return reject(NullID, CodeParseError, "parse error: "+syntaxReason(err))
		}
	}
	return classifyFields(&f, a)
}

// decode fills f with the decoder, which validates all of frame.
func (f *fields) decode(frame []byte) error {
	d := decoders.Get().(*jsontext.Decoder)
	defer func() {
		d.Reset(emptyReader{}) // drop the reference to frame before pooling
		decoders.Put(d)
	}()
	d.Reset(bytes.NewBuffer(frame))
	return f.read(d, frame)
}

func classifyFields(f *fields, a *arena) Envelope {
	if !f.isObject {
		return reject(NullID, CodeInvalidRequest, "invalid request: a frame must be a JSON object (batches are not supported)")
	}
	switch {
	case f.method != nil:
		if f.method.Kind() != '"' {
			return reject(NullID, CodeInvalidRequest, `invalid request: "method" must be a string`)
		}
		if f.result != nil || f.error != nil {
			return reject(NullID, CodeInvalidRequest, `invalid request: "method" cannot appear with "result" or "error"`)
		}
		return classifyRequest(f, a)
	case f.result != nil || f.error != nil:
		return classifyResponse(f)
	default:
		return reject(NullID, CodeInvalidRequest, `invalid request: a frame needs "method", "result" or "error"`)
	}
}

func classifyRequest(f *fields, a *arena) Envelope {
	id := ID(nil)
	if f.id != nil {
		if !validID(f.id) {
			return reject(NullID, CodeInvalidRequest, `invalid request: "id" must be a string, number or null`)
		}
		id = ID(f.id)
	}
	replyID := id
	if replyID.IsZero() {
		replyID = NullID
	}
	if f.version == nil || !isString(f.version, "2.0") {
		return reject(replyID, CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
	}
	if f.params != nil && f.params.Kind() != '{' && f.params.Kind() != '[' {
		return reject(replyID, CodeInvalidRequest, `invalid request: "params" must be an object or an array when present`)
	}
	if a != nil && bytes.IndexByte(f.method, '\\') < 0 {
		r := a.request()
		*r = Request{ID: id, Method: a.name(f.method[1 : len(f.method)-1]), Params: f.params}
		return Envelope{Request: r}
	}
	method, err := unquote(f.method)
	if err != nil {
		return reject(replyID, CodeInvalidRequest, `invalid request: "method" is not a valid string`)
	}
	return Envelope{Request: &Request{ID: id, Method: method, Params: f.params}}
}

func classifyResponse(f *fields) Envelope {
	switch {
	case f.version == nil || !isString(f.version, "2.0"):
		return Envelope{Dropped: `response without "jsonrpc":"2.0"`}
	case f.id == nil:
		return Envelope{Dropped: "response without an id"}
	case !validID(f.id):
		return Envelope{Dropped: "response with an id that is not a string, number or null"}
	case f.result != nil && f.error != nil:
		return Envelope{Dropped: `response with both "result" and "error"`}
	}
	r := &Response{ID: ID(f.id), Result: f.result}
	if f.error != nil {
		e, ok := decodeError(f.error)
		if !ok {
			return Envelope{Dropped: `response with a malformed "error" object`}
		}
		r.Error = e
	}
	return Envelope{Response: r}
}

// decodeError accepts only the shape JSON-RPC 2.0 defines: an object with an integer
// "code" and a string "message", and optional "data".
func decodeError(v jsontext.Value) (*Error, bool) {
	if v.Kind() != '{' {
		return nil, false
	}
	var raw struct {
		Code    *int64         `json:"code"`
		Message *string        `json:"message"`
		Data    jsontext.Value `json:"data"`
	}
	if err := json.Unmarshal(v, &raw); err != nil || raw.Code == nil || raw.Message == nil {
		return nil, false
	}
	return &Error{Code: *raw.Code, Message: *raw.Message, Data: raw.Data}, true
}

func reject(id ID, code int64, msg string) Envelope {
	return Envelope{Reject: &Response{ID: id, Error: &Error{Code: code, Message: msg}}}
}

// fields holds the raw values of the members the envelope rules look at.
type fields struct {
	isObject                                   bool
	version, method, id, params, result, error jsontext.Value
}

// read walks the top-level value once, validating all of it, and keeps subslices of
// frame for the members it knows. Unknown members are validated and skipped.
func (f *fields) read(d *jsontext.Decoder, frame []byte) error {
	if d.PeekKind() != '{' {
		if _, err := d.ReadValue(); err != nil {
			return err
		}
		return expectEOF(d)
	}
	f.isObject = true
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return err
		}
		if name.Kind() != '"' {
			return errors.New("object member name is not a string")
		}
		v, err := d.ReadValue()
		if err != nil {
			return err
		}
		end := int(d.InputOffset())
		v = frame[end-len(v) : end : end] // alias the frame, not the decoder's buffer
		switch {
		case isString(name, "jsonrpc"):
			f.version = v
		case isString(name, "method"):
			f.method = v
		case isString(name, "id"):
			f.id = v
		case isString(name, "params"):
			f.params = v
		case isString(name, "result"):
			f.result = v
		case isString(name, "error"):
			f.error = v
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	return expectEOF(d)
}

func expectEOF(d *jsontext.Decoder) error {
	if _, err := d.ReadToken(); err != io.EOF {
		if err == nil {
			return errors.New("more than one JSON value in a frame")
		}
		return err
	}
	return nil
}

func validID(v jsontext.Value) bool {
	switch v.Kind() {
	case '"', '0', 'n':
		return true
	}
	return false
}

// isString reports whether the raw JSON string v denotes want. The fast path compares
// bytes; only a string with escapes is unquoted.
func isString(v jsontext.Value, want string) bool {
	if v.Kind() != '"' {
		return false
	}
	if len(v) == len(want)+2 && string(v[1:len(v)-1]) == want {
		return true
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return false
	}
	s, err := jsontext.AppendUnquote(nil, v)
	return err == nil && string(s) == want
}

func unquote(v jsontext.Value) (string, error) {
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), nil
	}
	s, err := jsontext.AppendUnquote(nil, v)
	return string(s), err
}

// syntaxReason turns a decoder error into a short reason without frame contents
// beyond the offset.
func syntaxReason(err error) string {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "unexpected end of JSON input"
	}
	msg := strings.TrimPrefix(err.Error(), "jsontext: ")
	const max = 200
	if len(msg) > max {
		msg = msg[:max] + "…"
	}
	return msg
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, io.EOF }
