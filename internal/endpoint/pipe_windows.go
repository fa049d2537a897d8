//go:build windows

package endpoint

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// pipeBufferSize is the in and out buffer of every pipe instance.
const pipeBufferSize = 65536

// pipeListener serves a named pipe the way Win32 servers classically do: the
// first instance, created at Listen with FILE_FLAG_FIRST_PIPE_INSTANCE, is a
// full listening instance, and each Accept connects the waiting instance and
// creates the next one before it returns. So the name is always held, and every
// client lands on an instance that a server reads.
//
// go-winio's listener instead creates its first instance without read or write
// access and never connects it, relying on the pipe file system to keep that
// instance closed to clients. Wine (and Windows 7, go-winio issue 173) hand the
// first client that instance anyway, and it is never read: the first client of a
// new daemon hung until its deadline.
type pipeListener struct {
	path string
	name *uint16
	sa   *windows.SecurityAttributes
	ov   *windows.Overlapped // of the ConnectNamedPipe in flight; on the heap, the kernel writes it
	done windows.Handle      // manual-reset event, set by Close

	closeOnce sync.Once
	// mu is held by Accept for as long as it runs, and by Close to release the
	// handles once no Accept uses them.
	mu     sync.Mutex
	next   windows.Handle // the instance the next client connects to; 0 after a failed create
	closed bool
}

// errClientGone means a client connected to an instance and left before Accept
// saw it: the instance is disconnected and connected again.
var errClientGone = errors.New("pipe client left before it was accepted")

// listenPipe creates the first instance of the pipe at path, with the security
// descriptor sddl. It fails if the pipe exists, even one whose instances are all
// busy, so two daemons never share a name.
func listenPipe(path, sddl string) (*pipeListener, error) {
	name, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, fmt.Errorf("listen on pipe %s: %w", path, err)
	}
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return nil, fmt.Errorf("listen on pipe %s: security descriptor: %w", path, err)
	}
	l := &pipeListener{
		path: path,
		name: name,
		sa: &windows.SecurityAttributes{
			Length:             uint32(unsafe.Sizeof(windows.SecurityAttributes{})),
			SecurityDescriptor: sd,
		},
		ov: new(windows.Overlapped),
	}
	if l.ov.HEvent, err = windows.CreateEvent(nil, 1, 0, nil); err != nil {
		return nil, fmt.Errorf("listen on pipe %s: %w", path, err)
	}
	if l.done, err = windows.CreateEvent(nil, 1, 0, nil); err != nil {
		windows.CloseHandle(l.ov.HEvent)
		return nil, fmt.Errorf("listen on pipe %s: %w", path, err)
	}
	if l.next, err = l.instance(true); err != nil {
		windows.CloseHandle(l.ov.HEvent)
		windows.CloseHandle(l.done)
		return nil, fmt.Errorf("listen on pipe %s: %w", path, err)
	}
	return l, nil
}

// instance creates one server instance of the pipe, overlapped and in byte mode;
// first makes it fail unless it is the pipe's first instance. Every instance gets
// the same security descriptor.
func (l *pipeListener) instance(first bool) (windows.Handle, error) {
	flags := uint32(windows.PIPE_ACCESS_DUPLEX | windows.FILE_FLAG_OVERLAPPED)
	if first {
		flags |= windows.FILE_FLAG_FIRST_PIPE_INSTANCE
	}
	mode := uint32(windows.PIPE_TYPE_BYTE | windows.PIPE_READMODE_BYTE | windows.PIPE_WAIT | windows.PIPE_REJECT_REMOTE_CLIENTS)
	return windows.CreateNamedPipe(l.name, flags, mode, windows.PIPE_UNLIMITED_INSTANCES,
		pipeBufferSize, pipeBufferSize, 0, l.sa)
}

// Accept waits for a client on the waiting instance, makes the next instance and
// returns the connection.
func (l *pipeListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, net.ErrClosed
	}
	if l.next == 0 { // the last Accept could not make it
		h, err := l.instance(false)
		if err != nil {
			return nil, fmt.Errorf("accept on pipe %s: %w", l.path, err)
		}
		l.next = h
	}
	for {
		err := l.connect(l.next)
		if err == nil {
			break
		}
		if errors.Is(err, errClientGone) {
			if err := windows.DisconnectNamedPipe(l.next); err != nil {
				return nil, l.dropNext(fmt.Errorf("accept on pipe %s: disconnect: %w", l.path, err))
			}
			continue
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, err
		}
		return nil, l.dropNext(fmt.Errorf("accept on pipe %s: %w", l.path, err))
	}
	h := l.next
	l.next = 0
	// The next instance exists before this one is handed out, so the name stays
	// held. If it cannot be made, the next Accept tries again.
	if next, err := l.instance(false); err == nil {
		l.next = next
	}
	f, err := winio.NewOpenFile(h)
	if err != nil {
		windows.CloseHandle(h)
		return nil, fmt.Errorf("accept on pipe %s: %w", l.path, err)
	}
	pf, ok := f.(pipeFile)
	if !ok {
		f.Close()
		return nil, fmt.Errorf("accept on pipe %s: go-winio's file has no deadlines", l.path)
	}
	return &pipeConn{pipeFile: pf, addr: pipeAddr(l.path)}, nil
}

// dropNext closes the waiting instance after a failure and returns err.
func (l *pipeListener) dropNext(err error) error {
	windows.CloseHandle(l.next)
	l.next = 0
	return err
}

// connect waits until a client is connected to h. It returns errClientGone for a
// client that already left, and net.ErrClosed once Close is called.
func (l *pipeListener) connect(h windows.Handle) error {
	if err := windows.ResetEvent(l.ov.HEvent); err != nil {
		return err
	}
	err := windows.ConnectNamedPipe(h, l.ov)
	switch {
	case err == nil, errors.Is(err, windows.ERROR_PIPE_CONNECTED):
		return nil
	case errors.Is(err, windows.ERROR_NO_DATA):
		return errClientGone
	case !errors.Is(err, windows.ERROR_IO_PENDING):
		return err
	}
	ev, err := windows.WaitForMultipleObjects([]windows.Handle{l.ov.HEvent, l.done}, false, windows.INFINITE)
	if err != nil {
		windows.CancelIoEx(h, l.ov)
	} else if ev == windows.WAIT_OBJECT_0+1 {
		windows.CancelIoEx(h, l.ov)
		err = net.ErrClosed
	}
	// Wait for the operation to end in every case: the kernel owns l.ov until then.
	var n uint32
	res := windows.GetOverlappedResult(h, l.ov, &n, true)
	switch {
	case err != nil:
		return err
	case res == nil:
		return nil
	case errors.Is(res, windows.ERROR_NO_DATA), errors.Is(res, windows.ERROR_BROKEN_PIPE):
		return errClientGone
	}
	return res
}

// Close stops accepting and closes the waiting instance, which gives the name up
// once every accepted connection is closed too. It waits for a running Accept to
// return.
func (l *pipeListener) Close() error {
	l.closeOnce.Do(func() {
		windows.SetEvent(l.done)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.closed = true
		if l.next != 0 {
			windows.CloseHandle(l.next)
			l.next = 0
		}
		windows.CloseHandle(l.ov.HEvent)
		windows.CloseHandle(l.done)
	})
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr(l.path) }

// pipeFile is what go-winio's file offers on top of io.ReadWriteCloser.
type pipeFile interface {
	io.ReadWriteCloser
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// pipeConn is one accepted client: go-winio does the overlapped reads and writes
// with deadlines.
type pipeConn struct {
	pipeFile
	addr       pipeAddr
	readClosed atomic.Bool
}

// Read reads from the client; after CloseRead it reports the end of input.
func (c *pipeConn) Read(b []byte) (int, error) {
	if c.readClosed.Load() {
		return 0, io.EOF
	}
	n, err := c.pipeFile.Read(b)
	if err != nil && c.readClosed.Load() {
		return n, io.EOF // the read CloseRead cancelled
	}
	return n, err
}

// CloseRead ends reading while writes still go out: the daemon's shutdown stops
// taking requests but answers the ones in flight (a cancelled prompt) before it
// closes. A pipe has no half-close, so this is on our side only: a pending read is
// cancelled through its deadline, and every later Read returns io.EOF. Only the
// goroutine that reads sets read deadlines, so none can undo this one.
func (c *pipeConn) CloseRead() error {
	c.readClosed.Store(true)
	return c.pipeFile.SetReadDeadline(time.Unix(1, 0))
}

func (c *pipeConn) LocalAddr() net.Addr  { return c.addr }
func (c *pipeConn) RemoteAddr() net.Addr { return c.addr }

func (c *pipeConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

// pipeAddr is a pipe's name as a net.Addr.
type pipeAddr string

func (pipeAddr) Network() string  { return "pipe" }
func (a pipeAddr) String() string { return string(a) }
