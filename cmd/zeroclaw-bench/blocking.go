//go:build linux

package main

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// blockingConn is a Unix stream socket in blocking mode, read and written with plain
// system calls. The stream client uses it: a read blocks in the kernel until bytes
// arrive and returns all there are, where Go's netpoller would first fail with
// EAGAIN, park the goroutine, wait in epoll and read again: about twice the system
// calls and a scheduler round per wake-up, which at a few hundred thousand small
// lines a second made the client cost nearly as much CPU as the daemon.
type blockingConn struct {
	fd int
}

func dialBlocking(path string) (*blockingConn, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	c := &blockingConn{fd: fd}
	if err := c.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		c.Close()
		return nil, err
	}
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		c.Close()
		return nil, os.NewSyscallError("connect", err)
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *blockingConn) Read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(c.fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN: // SO_RCVTIMEO passed
			return 0, os.ErrDeadlineExceeded
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0 && len(b) > 0:
			return 0, errors.New("connection closed by the daemon")
		}
		return n, nil
	}
}

func (c *blockingConn) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := syscall.Write(c.fd, b[done:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN: // SO_SNDTIMEO passed
			return done, os.ErrDeadlineExceeded
		case err != nil:
			return done, os.NewSyscallError("write", err)
		}
		done += n
	}
	return done, nil
}

func (c *blockingConn) Close() error { return syscall.Close(c.fd) }

// SetDeadline sets the socket's receive and send timeouts to the time left until t;
// the zero t means none. Unlike a net.Conn deadline, the timeout bounds each read
// and each write, not their sum: every wait for the daemon stays bounded all the same.
func (c *blockingConn) SetDeadline(t time.Time) error {
	if err := c.setTimeout(syscall.SO_RCVTIMEO, t); err != nil {
		return err
	}
	return c.setTimeout(syscall.SO_SNDTIMEO, t)
}

func (c *blockingConn) SetReadDeadline(t time.Time) error {
	return c.setTimeout(syscall.SO_RCVTIMEO, t)
}

func (c *blockingConn) setTimeout(opt int, t time.Time) error {
	var tv syscall.Timeval
	if !t.IsZero() {
		// A deadline already passed still needs a non-zero timeout: zero means none.
		tv = syscall.NsecToTimeval(max(int64(time.Until(t)), int64(time.Microsecond)))
	}
	return os.NewSyscallError("setsockopt", syscall.SetsockoptTimeval(c.fd, syscall.SOL_SOCKET, opt, &tv))
}
