package upload

import (
	"fmt"

	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// The data.reason values of SPEC §10; every one comes with code -32602.
const (
	ReasonTooLarge        = "too_large"
	ReasonBadOffset       = "bad_offset"
	ReasonBadBase64       = "bad_base64"
	ReasonSHA256Mismatch  = "sha256_mismatch"
	ReasonIncomplete      = "incomplete"
	ReasonUnknownUpload   = "unknown_upload"
	ReasonTooManyUploads  = "too_many_uploads"
	ReasonBudget          = "budget"
	ReasonFilenameTooLong = "filename_too_long"
)

func refused(reason, msg string, kv ...any) *jsonrpc.Error {
	data := map[string]any{"reason": reason}
	for i := 0; i+1 < len(kv); i += 2 {
		data[kv[i].(string)] = kv[i+1]
	}
	return jsonrpc.NewError(jsonrpc.CodeInvalidParams, msg, data)
}

func badParam(param, msg string) *jsonrpc.Error {
	return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+msg, map[string]any{"param": param})
}

func unknownUpload(id string) *jsonrpc.Error {
	return refused(ReasonUnknownUpload, fmt.Sprintf("unknown upload %q (uploads belong to the connection that began them)", id),
		"upload_id", id)
}

// sessionGone answers a session that is no longer the one an upload was bound to,
// exactly like a missing session.
func sessionGone(id string) *jsonrpc.Error {
	return jsonrpc.NewError(jsonrpc.CodeSessionNotFound, "session not found: "+id, map[string]any{"sessionId": id})
}

// storageFailed is -32603 without paths: the log has the details.
func storageFailed(why string) *jsonrpc.Error {
	return jsonrpc.NewError(jsonrpc.CodeInternalError, "internal error: the upload could not be stored: "+why, nil)
}
