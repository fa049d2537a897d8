//go:build windows

package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// claim is what a Windows listener holds besides its pipe: nothing. The pipe
// vanishes with its last handle, and its name cannot be taken while it exists.
type claim struct{}

func (claim) release(string) error { return nil }

func defaultAddress(d Dirs) string { return pipeName(d.DataDir) }

// Dial connects to the named pipe at addr.
func Dial(ctx context.Context, addr string) (net.Conn, error) {
	return winio.DialPipeContext(ctx, addr)
}

// Listen makes this process the daemon at the named pipe addr (SPEC §1). The
// pipe's ACL admits only the creating user and SYSTEM. If a daemon already
// answers at addr, the error is an *AlreadyServingError.
func Listen(addr string) (*Listener, error) {
	if answers(addr) {
		return nil, &AlreadyServingError{Path: addr}
	}
	sid, err := currentUserSID()
	if err != nil {
		return nil, err
	}
	// The first instance is created with FILE_FLAG_FIRST_PIPE_INSTANCE, so two
	// daemons racing past the probe cannot both own the name: the loser gets an
	// error here.
	ln, err := listenPipe(addr, "D:P(A;;GA;;;"+sid+")(A;;GA;;;SY)")
	if err != nil {
		return nil, err
	}
	return &Listener{ln: ln, path: addr}, nil
}

// answers reports whether a daemon serves at addr. A pipe whose instances are
// all busy makes the dial wait out its deadline; that pipe exists, so it counts.
func answers(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	c, err := winio.DialPipeContext(ctx, addr)
	if err != nil {
		return errors.Is(err, context.DeadlineExceeded)
	}
	c.Close()
	return true
}

// currentUserSID returns the SID of the user this process runs as, in SDDL form.
func currentUserSID() (string, error) {
	tok, err := windows.OpenCurrentProcessToken()
	if err != nil {
		return "", fmt.Errorf("open process token: %w", err)
	}
	defer tok.Close()
	u, err := tok.GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("read token user: %w", err)
	}
	return u.User.Sid.String(), nil
}
