package client

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"

	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// Error codes the daemon answers with (docs/protocol.md, "Error codes").
const (
	CodeParseError      = jsonrpc.CodeParseError
	CodeInvalidRequest  = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound  = jsonrpc.CodeMethodNotFound
	CodeInvalidParams   = jsonrpc.CodeInvalidParams
	CodeInternalError   = jsonrpc.CodeInternalError
	CodeSessionNotFound = protocol.CodeSessionNotFound
	CodeSessionLimit    = protocol.CodeSessionLimit
	CodeSessionBusy     = protocol.CodeSessionBusy
	CodeConnectionLimit = protocol.CodeConnectionLimit
	CodeUnauthenticated = protocol.CodeUnauthenticated
	CodeVersionMismatch = protocol.CodeVersionMismatch
	CodeForbidden       = protocol.CodeForbidden
)

// Error is a JSON-RPC error answer from the daemon. Get it with errors.As.
type Error struct {
	Code    int64
	Message string
	// Data is the error's data member as sent (nil when absent), e.g.
	// {"reason":"replay_truncated","oldestSeq":12}.
	Data jsontext.Value
}

func (e *Error) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("%s (code %d, data %s)", e.Message, e.Code, e.Data)
	}
	return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
}

// Reason returns data.reason when the data is an object carrying one, else "".
func (e *Error) Reason() string {
	var d struct {
		Reason string `json:"reason"`
	}
	if len(e.Data) == 0 || json.Unmarshal(e.Data, &d, json.RejectUnknownMembers(false)) != nil {
		return ""
	}
	return d.Reason
}

// NoDaemonError says that nothing answers at the endpoint (and no daemon was started).
type NoDaemonError struct {
	Endpoint string
	Err      error // the dial error
}

func (e *NoDaemonError) Error() string {
	return fmt.Sprintf("no daemon is serving at %s; start one with `zeroclaw daemon`", e.Endpoint)
}

func (e *NoDaemonError) Unwrap() error { return e.Err }

// ErrClosed is returned by calls on a closed client, and by calls whose connection
// closed before the daemon answered.
var ErrClosed = jsonrpc.ErrClosed

// convert turns the jsonrpc package's error into ours.
func convert(err error) error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return &Error{Code: je.Code, Message: je.Message, Data: je.Data}
	}
	return err
}
