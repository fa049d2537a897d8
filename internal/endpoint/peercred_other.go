//go:build unix && !linux && !darwin

package endpoint

import "errors"

// peerCred is not implemented on this Unix: the peer is reported as
// "unix:unknown" (docs/protocol.md, "The daemon process"), and initialize refuses it
// (auth.Policy.Resolve fails closed on an unknown uid).
func peerCred(int) (pid, uid int, err error) {
	return 0, 0, errors.New("peer credentials are not supported on this platform")
}
