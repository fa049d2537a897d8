//go:build !unix

package endpoint

import "errors"

// Notify: sd_notify is a systemd protocol over Unix datagram sockets.
func Notify(addr, state string) error {
	return errors.New("NOTIFY_SOCKET is not supported on this platform")
}
