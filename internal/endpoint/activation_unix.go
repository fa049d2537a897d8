//go:build unix

package endpoint

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// listenFDsStart is the first descriptor a service manager passes (sd_listen_fds(3)).
const listenFDsStart = 3

// Activated returns the listener that systemd socket activation handed this process
// (docs/protocol.md, "Running under systemd"), or nil when there is none: LISTEN_PID
// must be this process and LISTEN_FDS at least 1, as sd_listen_fds(3) reads them;
// LISTEN_* meant for another process (LISTEN_PID not ours, as after a fork) are
// ignored. The variables are unset either way, so that no child (a shell tool)
// inherits them.
//
// Every passed descriptor must be a listening Unix stream socket; the first is
// served and the others are closed. The daemon still takes the lock on
// "<socket>.lock" (the inherited socket's path, or fallback for an abstract or
// unnamed one), and Close never removes the socket: the service manager made it and
// keeps it, so that the next connect starts the daemon again.
func Activated(fallback string) (*Listener, error) {
	pid, fds, names := os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_FDNAMES")
	for _, v := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
		os.Unsetenv(v)
	}
	if pid == "" || fds == "" {
		return nil, nil
	}
	if p, err := strconv.Atoi(pid); err != nil || p != os.Getpid() {
		return nil, nil
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("socket activation: LISTEN_FDS=%q is not a count of descriptors", fds)
	}
	if n == 0 {
		return nil, nil
	}
	label := func(i int) string {
		fd := listenFDsStart + i
		if name := fdName(names, i); name != "" {
			return fmt.Sprintf("fd %d (%q)", fd, name)
		}
		return fmt.Sprintf("fd %d", fd)
	}
	paths := make([]string, n)
	for i := range n {
		fd := listenFDsStart + i
		unix.CloseOnExec(fd)
		if paths[i], err = listeningUnixStream(fd); err != nil {
			for j := range n {
				unix.Close(listenFDsStart + j)
			}
			return nil, fmt.Errorf("socket activation: inherited %s %w; the unit must pass a listening Unix stream socket (ListenStream=/path)", label(i), err)
		}
	}
	for i := 1; i < n; i++ {
		unix.Close(listenFDsStart + i) // only the first is served
	}
	path := paths[0]
	if path == "" || strings.HasPrefix(path, "@") {
		path = fallback
	}
	f := os.NewFile(uintptr(listenFDsStart), label(0))
	ln, err := net.FileListener(f)
	f.Close() // FileListener has its own descriptor
	if err != nil {
		return nil, fmt.Errorf("socket activation: serving %s: %w", label(0), err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	lockPath := path + ".lock"
	lockFD, err := lockEndpoint(lockPath)
	if errors.Is(err, unix.EWOULDBLOCK) {
		err = fmt.Errorf("another daemon holds %s; it serves %s", lockPath, path)
	}
	if err != nil {
		ul.Close()
		return nil, err
	}
	// claim.socket stays nil: release removes no socket it did not create.
	return &Listener{ln: ul, path: path, claim: claim{lockFD: lockFD}}, nil
}

// fdName is the i-th of LISTEN_FDNAMES (colon-separated), "" when unnamed.
func fdName(names string, i int) string {
	parts := strings.Split(names, ":")
	if names == "" || i >= len(parts) {
		return ""
	}
	return parts[i]
}

// listeningUnixStream returns the bound path of fd ("@name" for an abstract socket)
// or an error saying what fd is instead of a listening Unix stream socket.
func listeningUnixStream(fd int) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("is not an open descriptor (%v)", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return "", errors.New("is not a socket")
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return "", fmt.Errorf("is a socket whose address cannot be read (%v)", err)
	}
	ua, ok := sa.(*unix.SockaddrUnix)
	if !ok {
		return "", fmt.Errorf("is not a Unix socket (a %T)", sa)
	}
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return "", fmt.Errorf("is a Unix socket whose type cannot be read (%v)", err)
	}
	switch typ {
	case unix.SOCK_STREAM:
	case unix.SOCK_DGRAM:
		return "", errors.New("is a Unix datagram socket, not a stream socket")
	case unix.SOCK_SEQPACKET:
		return "", errors.New("is a Unix seqpacket socket, not a stream socket")
	default:
		return "", fmt.Errorf("is a Unix socket of type %d, not a stream socket", typ)
	}
	listening, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	if err != nil {
		return "", fmt.Errorf("is a Unix stream socket whose state cannot be read (%v)", err)
	}
	if listening == 0 {
		return "", errors.New("is a Unix stream socket that is not listening (a connection?)")
	}
	return ua.Name, nil
}
