package rpc

import (
	"errors"
	"maps"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/upload"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// uploadToWire gives the upload package's domain errors their wire form, for
// toWire: a refusal is -32602 with data.reason (docs/protocol.md, "Files") and its
// figures, a malformed param -32602 with data.param, a storage failure -32603 whose
// message names no path (docs/protocol.md, "Error codes" and "Storage failures";
// commit logs the details). It reports false for any
// other error.
func uploadToWire(err error) (*jsonrpc.Error, bool) {
	var (
		r  *upload.Refusal
		pe *upload.ParamError
		se *upload.StorageError
	)
	switch {
	case errors.As(err, &r):
		data := make(map[string]any, len(r.Detail)+1)
		maps.Copy(data, r.Detail)
		data["reason"] = r.Reason
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, r.Message, data), true
	case errors.As(err, &pe):
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, pe.Error(), map[string]any{"param": pe.Param}), true
	case errors.As(err, &se):
		return jsonrpc.NewError(jsonrpc.CodeInternalError, "internal error: the upload could not be stored: "+se.Why, nil), true
	}
	return nil, false
}
