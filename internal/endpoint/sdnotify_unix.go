//go:build unix

package endpoint

import (
	"fmt"
	"net"
	"strings"
)

// Notify sends one sd_notify(3) message, such as "READY=1", to the service
// manager's datagram socket addr (the value of NOTIFY_SOCKET): a path, or "@name"
// for a socket in the abstract namespace.
func Notify(addr, state string) error {
	if !strings.HasPrefix(addr, "/") && !strings.HasPrefix(addr, "@") {
		return fmt.Errorf("NOTIFY_SOCKET=%q: want an absolute path or an @abstract name", addr)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notifying the service manager at %s: %w", addr, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("notifying the service manager at %s: %w", addr, err)
	}
	return nil
}
