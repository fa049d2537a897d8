//go:build unix

package endpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// umaskMu serializes our set-and-restore of the umask around bind. The umask is
// process-wide, so two concurrent Listens would otherwise restore each other's
// value. This is the package's only mutable state, and it exists because the
// state it guards (the process umask) is global already.
var umaskMu sync.Mutex

// claim is what a Unix listener holds besides its socket: the lock file, and the
// identity (device and inode) of the socket file it created.
type claim struct {
	lockFD int
	socket os.FileInfo
}

func defaultAddress(d Dirs) string { return filepath.Join(d.DataDir, "daemon.sock") }

// Dial connects to the Unix socket at addr.
func Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", addr)
}

// Listen makes this process the daemon at the Unix socket addr (docs/protocol.md,
// "The daemon process"): it takes the lock on addr+".lock", clears a stale socket
// left by a dead daemon, and binds a socket that is 0600 from its first instant. If a
// daemon already answers at addr, the error is an *AlreadyServingError.
func Listen(addr string) (*Listener, error) {
	// sun_path needs room for the terminating NUL that C clients add.
	if limit := len(unix.RawSockaddrUnix{}.Path) - 1; len(addr) > limit {
		return nil, fmt.Errorf("socket path %q is %d bytes; the limit on this platform is %d", addr, len(addr), limit)
	}
	// A missing parent is created 0700 (and so private). An existing one is left
	// alone: with ZEROCLAW_SOCKET it may be a shared directory such as /tmp, and
	// the default data dir was already made private by Dirs.Ensure. The socket's
	// own 0600 mode is what keeps other users out either way.
	if err := os.MkdirAll(filepath.Dir(addr), 0o700); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}

	lockPath := addr + ".lock"
	fd, err := lockEndpoint(lockPath)
	if errors.Is(err, unix.EWOULDBLOCK) {
		if answers(addr) {
			return nil, &AlreadyServingError{Path: addr}
		}
		return nil, fmt.Errorf("another daemon holds %s (starting up or shutting down); try again", lockPath)
	}
	if err != nil {
		return nil, err
	}
	l, err := listenLocked(addr, fd)
	if err != nil {
		unix.Close(fd) // closing the only descriptor releases the lock
		return nil, err
	}
	return l, nil
}

// lockEndpoint opens the lock file and takes an exclusive advisory lock on it.
// It returns an error wrapping unix.EWOULDBLOCK when another process holds it.
func lockEndpoint(path string) (int, error) {
	// O_NOFOLLOW: a symlink planted at the path must not make us create or lock
	// another file. O_NONBLOCK: a FIFO planted there must not hang the open
	// (fstat rejects it next).
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
	if errors.Is(err, unix.ELOOP) {
		return -1, fmt.Errorf("lock file %s is a symbolic link; refusing to follow it", path)
	}
	if err != nil {
		return -1, fmt.Errorf("open lock file %s: %w", path, err)
	}
	if err := checkLockFile(fd, path); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("lock %s: %w", path, err)
	}
	return fd, nil
}

// checkLockFile requires the open lock file to be a regular file of ours, and
// narrows a mode that lets others in to 0600. Another user's lock file would let
// that user keep our daemon from starting, or mislead it about who holds it.
func checkLockFile(fd int, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("inspect lock file %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("lock file %s is not a regular file", path)
	}
	if me := unix.Geteuid(); int(st.Uid) != me {
		return fmt.Errorf("lock file %s is owned by uid %d, not by us (uid %d)", path, st.Uid, me)
	}
	if st.Mode&0o077 != 0 {
		if err := unix.Fchmod(fd, 0o600); err != nil {
			return fmt.Errorf("make lock file %s private: %w", path, err)
		}
	}
	return nil
}

// listenLocked does the part of Listen that needs the lock held: clearing a
// stale socket, binding, and recording the new socket's identity. On success the
// Listener owns lockFD; on failure the caller still does.
func listenLocked(addr string, lockFD int) (*Listener, error) {
	if err := clearStale(addr); err != nil {
		return nil, err
	}
	ul, err := bindPrivate(addr)
	if err != nil {
		return nil, err
	}
	// We remove the socket ourselves, and only if it is still ours (claim.release).
	ul.SetUnlinkOnClose(false)
	// The umask already made the socket 0600; the chmod is for good measure, in
	// case some platform ignores the umask for sockets.
	if err := os.Chmod(addr, 0o600); err != nil {
		ul.Close()
		return nil, fmt.Errorf("make socket private: %w", err)
	}
	fi, err := os.Lstat(addr)
	if err != nil {
		ul.Close()
		return nil, fmt.Errorf("inspect new socket: %w", err)
	}
	return &Listener{ln: ul, path: addr, claim: claim{lockFD: lockFD, socket: fi}}, nil
}

// clearStale removes a socket file left at addr by a daemon that died without
// cleaning up. Unix sockets stay in the filesystem after their listener is
// gone, and connecting to one is refused; that refusal is what marks it stale.
// The caller holds the lock, so no well-behaved daemon is starting at addr now.
func clearStale(addr string) error {
	first, err := os.Lstat(addr)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect existing socket: %w", err)
	}
	if first.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("refusing to remove %s: it is not a socket (mode %s)", addr, first.Mode())
	}
	c, err := net.DialTimeout("unix", addr, probeTimeout)
	if err == nil {
		c.Close()
		return &AlreadyServingError{Path: addr}
	}
	if !errors.Is(err, unix.ECONNREFUSED) {
		return fmt.Errorf("cannot tell whether the socket at %s is stale, not removing it: %w", addr, err)
	}
	// Remove only the inode we probed: if the path changed hands meanwhile, the
	// new file belongs to someone else.
	again, err := os.Lstat(addr)
	if err != nil || !os.SameFile(first, again) {
		return fmt.Errorf("socket %s changed while checking whether it is stale; try again", addr)
	}
	if err := os.Remove(addr); err != nil {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	return nil
}

// bindPrivate binds a Unix socket at addr under umask 0177, so the socket file
// is created 0600: there is no instant, however short, in which another user
// could connect. bind applies the umask like creat does.
func bindPrivate(addr string) (*net.UnixListener, error) {
	umaskMu.Lock()
	defer umaskMu.Unlock()
	old := unix.Umask(0o177)
	defer unix.Umask(old)
	return net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
}

// answers reports whether something accepts connections at addr.
func answers(addr string) bool {
	c, err := net.DialTimeout("unix", addr, probeTimeout)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// release removes the socket file if path still holds the inode we created, then
// drops the lock. The lock file stays: removing it would race with a starter
// that has opened it but not locked it yet, letting two daemons lock two files.
func (c claim) release(path string) error {
	var errRemove error
	if fi, err := os.Lstat(path); err == nil && os.SameFile(fi, c.socket) {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errRemove = fmt.Errorf("remove socket: %w", err)
		}
	}
	// Closing the descriptor releases the flock too; the explicit unlock is for
	// clarity and costs nothing.
	errUnlock := unix.Flock(c.lockFD, unix.LOCK_UN)
	errClose := unix.Close(c.lockFD)
	if err := errors.Join(errUnlock, errClose); err != nil {
		return errors.Join(errRemove, fmt.Errorf("release lock %s.lock: %w", path, err))
	}
	return errRemove
}
