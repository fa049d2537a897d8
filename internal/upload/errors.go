package upload

import "fmt"

// The reasons (docs/protocol.md, "Files"); the rpc layer answers each with -32602 and
// data.reason.
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

// Refusal is an upload refused for one of the reasons above. Detail holds the
// figures that go with it (limit_bytes, received_bytes, ...), keyed as on the wire.
type Refusal struct {
	Reason  string
	Message string
	Detail  map[string]any
}

func (e *Refusal) Error() string { return e.Message }

// ParamError is a param that is malformed in a way docs/protocol.md, "Files", gives
// no reason for.
type ParamError struct {
	Param   string
	Message string
}

func (e *ParamError) Error() string { return "invalid params: " + e.Message }

// StorageError is a write or read of the workspace or the index that failed. Why is
// safe to show any client (no paths); Err has the details for the log.
type StorageError struct {
	Why string
	Err error
}

func (e *StorageError) Error() string {
	if e.Err == nil {
		return "the upload could not be stored: " + e.Why
	}
	return "the upload could not be stored: " + e.Why + ": " + e.Err.Error()
}

func (e *StorageError) Unwrap() error { return e.Err }

func refused(reason, msg string, kv ...any) *Refusal {
	detail := make(map[string]any, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		detail[kv[i].(string)] = kv[i+1]
	}
	return &Refusal{Reason: reason, Message: msg, Detail: detail}
}

func unknownUpload(id string) *Refusal {
	return refused(ReasonUnknownUpload, fmt.Sprintf("unknown upload %q (uploads belong to the connection that began them)", id),
		"upload_id", id)
}

func storageFailed(why string, err error) *StorageError { return &StorageError{Why: why, Err: err} }
