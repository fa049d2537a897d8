// Package auth decides who a connection is and what it may do: the principal behind
// a local peer's uid or a pairing token, the grants its permission profiles merge
// into, and the pairing tokens themselves. It never reads sockets or frames; callers
// hand it what the transport knows, and the configuration in force.
package auth

import "errors"

// OperatorID is the principal id of the daemon's own user.
const OperatorID = "operator"

// UserPrefix starts the principal id of a [users.<name>] entry: "user:<name>".
const UserPrefix = "user:"

// Principal is the identity a connection acts as.
type Principal struct {
	ID    string `json:"id"`
	Admin bool   `json:"admin"`
}

// Operator is the daemon's own user: the admin of this daemon.
func Operator() Principal { return Principal{ID: OperatorID, Admin: true} }

// ErrUnknownPeer means the peer's uid maps to no principal.
var ErrUnknownPeer = errors.New("this user is not allowed to use the daemon")

// ErrNoPeerCredentials means the local peer's credentials could not be read, so
// nobody can say who it is.
var ErrNoPeerCredentials = errors.New("the peer's credentials could not be read, so its user is unknown")

// ErrUnpaired means a pairing token is unknown or was revoked.
var ErrUnpaired = errors.New("the pairing token is unknown or was revoked")

// ErrUnknownUser means a pairing token names a user the roster no longer has.
var ErrUnknownUser = errors.New("the paired user is no longer in the configuration")
