// Package auth decides who a connection is: the principal behind a peer, and what it
// may do. It never reads sockets or frames; callers hand it what the transport knows.
package auth

import "errors"

// OperatorID is the principal id of the daemon's own user.
const OperatorID = "operator"

// Principal is the identity a connection acts as, fixed at initialize.
type Principal struct {
	ID    string `json:"id"`
	Admin bool   `json:"admin"`
}

// Operator is the daemon's own user: the admin of this daemon.
func Operator() Principal { return Principal{ID: OperatorID, Admin: true} }

// ErrUnknownPeer means the peer's uid maps to no principal.
var ErrUnknownPeer = errors.New("this user is not allowed to use the daemon")

// LocalPrincipal maps a local peer to its principal. peerUID is -1 when the platform
// cannot tell (a Windows pipe, a Unix without peer credentials): the endpoint's own
// permissions (0600 socket in a 0700 directory, or the pipe's ACL) already admit only
// the daemon's user there, so the peer is the operator.
func LocalPrincipal(peerUID, daemonUID int) (Principal, error) {
	if peerUID < 0 || peerUID == daemonUID {
		return Operator(), nil
	}
	return Principal{}, ErrUnknownPeer
}
