package jsonrpc

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"strconv"
)

// JSON-RPC 2.0's own error codes. The daemon's (-32000 to -32012) are package
// protocol's.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is a JSON-RPC error object. Handlers return it to answer with a specific code;
// Conn.Call returns it when the peer answered with an error.
type Error struct {
	Code    int64          `json:"code"`
	Message string         `json:"message"`
	Data    jsontext.Value `json:"data,omitzero"`
}

func (e *Error) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("jsonrpc error %d: %s (data: %s)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// NewError builds an Error whose data is data marshaled as JSON (omitted when nil).
func NewError(code int64, message string, data any) *Error {
	e := &Error{Code: code, Message: message}
	if data != nil {
		b, err := json.Marshal(data, json.Deterministic(true))
		if err != nil {
			// Data is built by this program from plain maps and structs; a failure here
			// is a programming error, reported in the message rather than lost.
			e.Message += " (unencodable error data: " + err.Error() + ")"
		} else {
			e.Data = b
		}
	}
	return e
}

// Errorf builds an Error with a formatted message and no data.
func Errorf(code int64, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ID is a request id exactly as it appeared on the wire: a JSON string, number or null.
// The zero ID (no bytes) means "absent", which makes a request a notification.
// Ids are echoed byte for byte, so a client's 1.0 comes back as 1.0.
type ID jsontext.Value

// NullID is the id of replies to frames whose id cannot be recovered.
var NullID = ID("null")

// StringID returns the id for the JSON string s.
func StringID(s string) ID {
	b, _ := jsontext.AppendQuote(nil, s) // cannot fail for a Go string: invalid UTF-8 is replaced
	return ID(b)
}

// IsZero reports whether the id is absent.
func (id ID) IsZero() bool { return len(id) == 0 }

// String returns the id as it appears on the wire ("absent" when absent).
func (id ID) String() string {
	if id.IsZero() {
		return "absent"
	}
	return string(id)
}

// key is the identity used by pending maps: two ids match when they denote the same
// JSON string (whatever escapes spelled it) or the same number text.
func (id ID) key() string {
	if len(id) > 0 && id[0] == '"' {
		if s, err := jsontext.AppendUnquote(nil, []byte(id)); err == nil {
			return "s" + string(s)
		}
	}
	return "n" + string(id)
}

// MarshalJSONTo writes the raw id (null when absent).
func (id ID) MarshalJSONTo(enc *jsontext.Encoder) error {
	if id.IsZero() {
		return enc.WriteToken(jsontext.Null)
	}
	return enc.WriteValue(jsontext.Value(id))
}

// Request is a well-formed request or, when ID is absent, a notification.
type Request struct {
	ID     ID
	Method string
	Params jsontext.Value // raw object or array; nil when absent
}

// IsNotification reports whether the request expects no answer.
func (r *Request) IsNotification() bool { return r.ID.IsZero() }

// Response is a well-formed response: exactly one of Result and Error is set.
// An explicit "result": null arrives as Result == jsontext.Value("null") and is a success.
type Response struct {
	ID     ID
	Result jsontext.Value
	Error  *Error
}

// AppendRequest appends the encoding of a request (a notification when id is absent).
// Member order follows the seed: jsonrpc, method, params, id.
func AppendRequest(dst []byte, id ID, method string, params jsontext.Value) ([]byte, error) {
	dst = append(dst, `{"jsonrpc":"2.0","method":`...)
	dst, err := jsontext.AppendQuote(dst, method)
	if err != nil {
		return dst, err
	}
	if len(params) > 0 {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	if !id.IsZero() {
		dst = append(dst, `,"id":`...)
		dst = append(dst, id...)
	}
	return append(dst, '}'), nil
}

// AppendResult appends the encoding of a success response. Member order follows
// the seed: jsonrpc, result, id.
func AppendResult(dst []byte, id ID, result jsontext.Value) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","result":`...)
	if len(result) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, result...)
	}
	return appendID(dst, id)
}

// AppendError appends the encoding of an error response.
func AppendError(dst []byte, id ID, e *Error) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","error":{"code":`...)
	dst = strconv.AppendInt(dst, e.Code, 10)
	dst = append(dst, `,"message":`...)
	dst, _ = jsontext.AppendQuote(dst, e.Message)
	if len(e.Data) > 0 {
		dst = append(dst, `,"data":`...)
		dst = append(dst, e.Data...)
	}
	dst = append(dst, '}')
	return appendID(dst, id)
}

func appendID(dst []byte, id ID) []byte {
	dst = append(dst, `,"id":`...)
	if id.IsZero() {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, id...)
	}
	return append(dst, '}')
}
