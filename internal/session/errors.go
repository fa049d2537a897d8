package session

import (
	"errors"
	"fmt"
)

// Kind classifies the errors this package returns. The rpc layer maps each kind to
// its wire code (internal/rpc/errors.go); nothing here knows the codes.
type Kind int

// The kinds of session errors.
const (
	// Invalid: the request's params are wrong (-32602, docs/protocol.md,
	// "Error codes").
	Invalid Kind = iota + 1
	// NotFound: no such session, or one the caller may not see, or a killed one.
	NotFound
	// Limit: the live session limit is reached.
	Limit
	// Busy: the turn queue is full, or a prompt waited too long.
	Busy
	// Storage: a write or read the session owes storage failed.
	Storage
	// Forbidden: the caller may not do this (docs/protocol.md, "session/set": a mode
	// more permissive than the agent's autonomy, asked by a non-admin).
	Forbidden
	// Failed: the model call a session control needed failed (session/compact).
	Failed
)

// Error is a session error: its kind, a message fit for the client, and details a
// client can act on (param, reason, limit, …). Err, when set, is the cause, for the
// daemon's log only.
type Error struct {
	Kind    Kind
	Msg     string
	Details map[string]any
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// AsError returns err's *Error, if it has one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// errNotFound answers a session that does not exist or that the caller may not see:
// the two are indistinguishable on purpose (docs/protocol.md, "Authorization").
func errNotFound(id string) *Error {
	return &Error{Kind: NotFound, Msg: "session not found: " + id, Details: map[string]any{"sessionId": id}}
}

func errKilled(id string) *Error {
	return &Error{Kind: NotFound, Msg: "session was killed: " + id,
		Details: map[string]any{"sessionId": id, "reason": "killed"}}
}

func errTaken(id string) *Error {
	return &Error{Kind: Invalid, Msg: "session id is taken: " + id,
		Details: map[string]any{"param": "sessionId", "reason": "session_id_taken"}}
}

// errStorage reports a failed storage step; the message never carries paths.
func errStorage(cause error) *Error {
	return &Error{Kind: Storage, Msg: "internal error: session storage failed; see the daemon's log", Err: cause}
}

func errLimit(limit int) *Error {
	return &Error{Kind: Limit, Msg: "session limit reached", Details: map[string]any{"limit": limit}}
}

func errBusy(format string, args ...any) *Error {
	return &Error{Kind: Busy, Msg: "session busy: " + fmt.Sprintf(format, args...)}
}

// errParam is an invalid param; reason may be empty.
func errParam(param, reason, msg string) *Error {
	d := map[string]any{"param": param}
	if reason != "" {
		d["reason"] = reason
	}
	return &Error{Kind: Invalid, Msg: msg, Details: d}
}
