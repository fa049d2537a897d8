//go:build !unix

package endpoint

// Activated: socket activation is a systemd protocol; elsewhere there is never an
// inherited listener.
func Activated(fallback string) (*Listener, error) { return nil, nil }
