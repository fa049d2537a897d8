//go:build windows

package endpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// claim is what a Windows listener holds besides its pipe: a named mutex for the
// pipe name, the Windows twin of the Unix lock file. The pipe's first instance is
// also created with FILE_FLAG_FIRST_PIPE_INSTANCE, which Windows refuses for a
// name that exists; the mutex makes one daemon per endpoint hold where that flag
// is not honoured (Wine ignores it). Like the pipe, the mutex vanishes with its
// last handle, so a daemon that dies leaves nothing stale.
type claim struct{ mutex windows.Handle }

func (c claim) release(string) error {
	if c.mutex == 0 {
		return nil
	}
	return windows.CloseHandle(c.mutex)
}

func defaultAddress(d Dirs) string { return pipeName(d.DataDir) }

// Dial connects to the named pipe at addr.
func Dial(ctx context.Context, addr string) (net.Conn, error) {
	return winio.DialPipeContext(ctx, addr)
}

// Listen makes this process the daemon at the named pipe addr (docs/protocol.md,
// "The daemon process"). The pipe's ACL admits only the creating user and SYSTEM. If
// a daemon already answers at addr, or holds it while starting, the error is an
// *AlreadyServingError.
func Listen(addr string) (*Listener, error) {
	if answers(addr) {
		return nil, &AlreadyServingError{Path: addr}
	}
	return listenClaimed(addr)
}

// listenClaimed is Listen after the probe: two daemons that both found nothing
// serving meet here, and only the first to take the mutex goes on.
func listenClaimed(addr string) (*Listener, error) {
	c, err := claimPipe(addr)
	if err != nil {
		return nil, err
	}
	sid, err := currentUserSID()
	if err != nil {
		c.release(addr)
		return nil, err
	}
	ln, err := listenPipe(addr, "D:P(A;;GA;;;"+sid+")(A;;GA;;;SY)")
	if err != nil {
		c.release(addr)
		return nil, err
	}
	return &Listener{ln: ln, path: addr, claim: c}, nil
}

// claimPipe takes the mutex of the pipe name addr. Pipe names are one namespace
// per machine and case-insensitive, so the mutex is Global and named by a hash
// of the lower-cased name.
func claimPipe(addr string) (claim, error) {
	sum := sha256.Sum256([]byte(strings.ToLower(addr)))
	name, err := windows.UTF16PtrFromString(`Global\zeroclaw-endpoint-` + hex.EncodeToString(sum[:8]))
	if err != nil {
		return claim{}, fmt.Errorf("claim %s: %w", addr, err)
	}
	h, err := windows.CreateMutex(nil, false, name)
	switch {
	case errors.Is(err, windows.ERROR_ALREADY_EXISTS):
		windows.CloseHandle(h)
		return claim{}, &AlreadyServingError{Path: addr}
	case errors.Is(err, windows.ERROR_ACCESS_DENIED):
		// Another user's daemon holds it: their mutex's DACL keeps us out.
		return claim{}, &AlreadyServingError{Path: addr}
	case err != nil:
		return claim{}, fmt.Errorf("claim %s: %w", addr, err)
	}
	return claim{mutex: h}, nil
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
