package daemon

import (
	"log/slog"
	"os"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
)

// listen serves the socket a service manager passed (systemd socket activation,
// docs/protocol.md, "Running under systemd"), else binds addr as usual. Either way
// the endpoint's lock is taken.
func listen(addr string, log *slog.Logger) (*endpoint.Listener, error) {
	ln, err := endpoint.Activated(addr)
	if err != nil {
		return nil, err
	}
	if ln != nil {
		log.Info("socket activation: serving the inherited socket", "endpoint", ln.Path())
		// The service manager made the socket; its unit decides the mode
		// (docs/protocol.md, "The daemon process" wants 0600). Say so when it lets
		// others in: the peer's uid still decides who they are, but the daemon cannot
		// make the socket private itself.
		if fi, err := os.Stat(ln.Path()); err == nil && fi.Mode().Perm()&0o077 != 0 {
			log.Warn("the inherited socket is reachable by other users; set SocketMode=0600 in the socket unit",
				"endpoint", ln.Path(), "mode", fi.Mode().Perm().String())
		}
		return ln, nil
	}
	return endpoint.Listen(addr)
}

// notifier tells the service manager at NOTIFY_SOCKET what the daemon is doing
// (sd_notify(3)): READY=1 once it serves, STOPPING=1 when it begins to shut down.
// Without NOTIFY_SOCKET it does nothing.
type notifier struct {
	addr string
	log  *slog.Logger
}

// newNotifier reads NOTIFY_SOCKET and unsets it, so that no child (a shell tool)
// talks to the service manager in the daemon's name.
func newNotifier(getenv func(string) string, log *slog.Logger) notifier {
	addr := getenv("NOTIFY_SOCKET")
	os.Unsetenv("NOTIFY_SOCKET")
	return notifier{addr: addr, log: log}
}

func (n notifier) notify(state string) {
	if n.addr == "" {
		return
	}
	if err := endpoint.Notify(n.addr, state); err != nil {
		n.log.Warn("telling the service manager failed", "state", state, "err", err)
	}
}
