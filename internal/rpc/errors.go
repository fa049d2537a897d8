package rpc

import (
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// sessionCodes maps the kinds of session errors to the codes (docs/protocol.md,
// "Error codes").
var sessionCodes = map[session.Kind]int64{
	session.Invalid:   jsonrpc.CodeInvalidParams,
	session.NotFound:  protocol.CodeSessionNotFound,
	session.Limit:     protocol.CodeSessionLimit,
	session.Busy:      protocol.CodeSessionBusy,
	session.Storage:   jsonrpc.CodeInternalError,
	session.Forbidden: protocol.CodeForbidden,
	session.Failed:    jsonrpc.CodeInternalError,
}

// toWire is the one place where the domain errors of the packages below rpc become
// JSON-RPC errors: code, message and data. A *jsonrpc.Error passes as it is; an
// error of no known kind stays as it is, which jsonrpc answers with -32603 (and
// logs).
func toWire(err error) error {
	if err == nil {
		return nil
	}
	if e, ok := session.AsError(err); ok {
		code, known := sessionCodes[e.Kind]
		if !known {
			code = jsonrpc.CodeInternalError
		}
		var data any
		if len(e.Details) > 0 {
			data = e.Details
		}
		return jsonrpc.NewError(code, e.Msg, data)
	}
	if e, ok := uploadToWire(err); ok {
		return e
	}
	if e, ok := memoryToWire(err); ok {
		return e
	}
	return err
}
