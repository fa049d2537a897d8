//go:build windows

package endpoint

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/goleak"
	"golang.org/x/sys/windows"
)

// These tests run on Windows, and in CI under Wine (.ci/wine.sh).

func init() {
	// go-winio's I/O completion goroutine starts with the first pipe and never ends.
	leakOptions = append(leakOptions, goleak.IgnoreAnyFunction("github.com/Microsoft/go-winio.ioCompletionProcessor"))
}

// guard bounds every wait of these tests: a hang fails instead of stalling CI.
const guard = 20 * time.Second

// underWine reports whether this process runs under Wine, whose ntdll says so.
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// testPipe returns a pipe name no other test uses.
func testPipe(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	return `\\.\pipe\zeroclaw-test-` + hex.EncodeToString(b)
}

func listen(t *testing.T, name string) *Listener {
	t.Helper()
	l, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// echoServer accepts until l closes and echoes each line back. At cleanup it closes
// the listener and the connections it accepted, and waits for them all to end.
func echoServer(t *testing.T, l *Listener) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { echo(c) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}

func echo(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if _, err := c.Write([]byte(line)); err != nil {
			return
		}
	}
}

func dialPipe(t *testing.T, name string) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	c, err := Dial(ctx, name)
	if err != nil {
		t.Fatalf("dial %s: %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes line and reads it back, failing after guard instead of hanging.
func roundTrip(t *testing.T, c net.Conn, line string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(guard))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		t.Fatalf("write: %v", err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("no answer to the client (the first-instance hang?): %v", err)
	}
	if got != line+"\n" {
		t.Fatalf("read %q, want %q", got, line+"\n")
	}
	c.SetDeadline(time.Time{})
}

// The first client of a new listener lands on the instance Listen created; that
// instance must be one the server reads (go-winio's was not, under Wine and Windows 7).
func TestFirstClientIsAnswered(t *testing.T) {
	name := testPipe(t)
	l := listen(t, name)
	echoServer(t, l)
	roundTrip(t, dialPipe(t, name), "first")
	roundTrip(t, dialPipe(t, name), "second")
}

// A client that connects before the server calls Accept is the one Accept returns.
func TestClientConnectedBeforeAcceptIsAccepted(t *testing.T) {
	name := testPipe(t)
	l := listen(t, name)
	c := dialPipe(t, name)
	if _, err := c.Write([]byte("early\n")); err != nil {
		t.Fatal(err)
	}
	echoServer(t, l)
	c.SetReadDeadline(time.Now().Add(guard))
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != "early\n" {
		t.Fatalf("read %q, %v", got, err)
	}
}

func TestManyConcurrentClientsAreAllAnswered(t *testing.T) {
	name := testPipe(t)
	echoServer(t, listen(t, name))
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			c, err := Dial(ctx, name)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(guard))
			msg := strings.Repeat("x", i) + "\n"
			if _, err := c.Write([]byte(msg)); err != nil {
				errs <- err
				return
			}
			if got, err := bufio.NewReader(c).ReadString('\n'); err != nil || got != msg {
				errs <- errors.Join(err, errors.New("client "+msg+" read "+got))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A client that connects and leaves before Accept runs is skipped: Accept returns
// the next client, not a dead connection or an error.
func TestClientGoneBeforeAcceptIsSkipped(t *testing.T) {
	name := testPipe(t)
	l := listen(t, name)
	gone := dialPipe(t, name)
	gone.Close()
	next := make(chan net.Conn, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		c, err := Dial(ctx, name) // waits while the only instance is busy
		if err != nil {
			t.Error(err)
			close(next)
			return
		}
		c.Write([]byte("live\n"))
		next <- c
	}()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetReadDeadline(time.Now().Add(guard))
	got, err := bufio.NewReader(s).ReadString('\n')
	if err != nil || got != "live\n" {
		t.Fatalf("accepted a connection that reads %q, %v", got, err)
	}
	if c := <-next; c != nil {
		c.Close()
	}
}

func TestSecondListenReportsAlreadyServing(t *testing.T) {
	name := testPipe(t)
	l := listen(t, name)
	echoServer(t, l)
	_, err := Listen(name)
	var already *AlreadyServingError
	if !errors.As(err, &already) || already.Path != name || err.Error() != "already serving at "+name {
		t.Fatalf("second Listen = %v, want already serving at %s", err, name)
	}
	// Two daemons that both passed the probe: the second cannot take the mutex.
	if _, err := listenClaimed(name); !errors.As(err, &already) {
		t.Fatalf("Listen past the probe = %v, want already serving", err)
	}
	// Nor, on Windows, join the pipe: its first instance is created with
	// FILE_FLAG_FIRST_PIPE_INSTANCE. Wine ignores the flag.
	if p, err := listenPipe(name, "D:P(A;;GA;;;SY)"); err == nil {
		p.Close()
		if !underWine() {
			t.Fatal("a second listener created an instance of a pipe that exists")
		}
		t.Log("Wine ignores FILE_FLAG_FIRST_PIPE_INSTANCE; the mutex alone refused the second listener")
	}
	roundTrip(t, dialPipe(t, name), "still ours")
}

// The pipe's DACL lists exactly two entries, the daemon's user and SYSTEM, and is
// protected from inherited entries; every instance carries it, not only the first.
func TestPipeACLIsTheUserAndSystem(t *testing.T) {
	name := testPipe(t)
	echoServer(t, listen(t, name))
	user, err := currentUserSID()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		c := dialPipe(t, name)
		roundTrip(t, c, "hello")
		sddl, sids := pipeDACL(t, c)
		t.Logf("instance %d: %s", i, sddl)
		if len(sids) != 2 || sids[0] != user || sids[1] != "S-1-5-18" {
			t.Fatalf("instance %d: DACL allows %v, want only [%s S-1-5-18]", i, sids, user)
		}
		if !strings.HasPrefix(sddl, "D:P") {
			t.Fatalf("instance %d: DACL %s is not protected", i, sddl)
		}
	}
}

// pipeDACL reads the security descriptor of the pipe behind c and returns its DACL
// as SDDL and the SIDs its entries allow, in order. Every entry must be an allow.
func pipeDACL(t *testing.T, c net.Conn) (string, []string) {
	t.Helper()
	fd, ok := c.(interface{ Fd() uintptr })
	if !ok {
		t.Fatalf("%T has no handle", c)
	}
	sd, err := windows.GetSecurityInfo(windows.Handle(fd.Fd()), windows.SE_KERNEL_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatalf("read the pipe's security descriptor: %v", err)
	}
	dacl, _, err := sd.DACL()
	if err != nil || dacl == nil {
		t.Fatalf("the pipe has no DACL (everyone may connect): %v", err)
	}
	var sids []string
	for i := range uint32(dacl.AceCount) {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			t.Fatal(err)
		}
		if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE {
			t.Fatalf("entry %d has type %d, want an allow", i, ace.Header.AceType)
		}
		sids = append(sids, (*windows.SID)(unsafe.Pointer(&ace.SidStart)).String())
	}
	return sd.String(), sids
}

// A daemon that exits without closing its listener leaves no claim behind: the
// mutex and the pipe end with the process's handles. Closing them by hand is what
// the OS does at exit.
func TestClaimEndsWithTheListener(t *testing.T) {
	name := testPipe(t)
	l, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := claimPipe(name); err == nil {
		t.Fatal("the claim of a live listener was taken twice")
	}
	if _, err := claimPipe(strings.ToUpper(name)); err == nil {
		t.Fatal("pipe names are case-insensitive, the claim must be too")
	}
	l.Close()
	c, err := claimPipe(name)
	if err != nil {
		t.Fatalf("claim after Close: %v", err)
	}
	c.release(name)
}

func TestCloseEndsAcceptAndGivesTheNameUp(t *testing.T) {
	name := testPipe(t)
	l, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		accepted <- err
	}()
	// Close must end an Accept that is waiting; it may also win the race and run first.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-accepted; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close = %v, want net.ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on a closed listener = %v", err)
	}
	if c, err := Dial(context.Background(), name); err == nil || !errors.Is(err, fs.ErrNotExist) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Dial after Close = %v, want a missing pipe", err)
	}
	l2 := listen(t, name)
	echoServer(t, l2)
	roundTrip(t, dialPipe(t, name), "again")
}

func TestAcceptedConnectionHonoursDeadlines(t *testing.T) {
	name := testPipe(t)
	l := listen(t, name)
	c := dialPipe(t, name)
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.LocalAddr().Network() != "pipe" || s.LocalAddr().String() != name || l.Addr().String() != name {
		t.Fatalf("addresses %v %v", s.LocalAddr(), l.Addr())
	}
	s.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := s.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline = %v", err)
	}
	s.SetReadDeadline(time.Time{})
	c.Write([]byte("x"))
	if n, err := s.Read(make([]byte, 1)); n != 1 || err != nil {
		t.Fatalf("read after clearing the deadline = %d, %v", n, err)
	}
	c.Close()
	s.SetReadDeadline(time.Now().Add(guard))
	if _, err := s.Read(make([]byte, 1)); err == nil {
		t.Fatal("read after the client closed succeeded")
	}
}

func TestDialWithoutDaemonIsNotExist(t *testing.T) {
	c, err := Dial(context.Background(), testPipe(t))
	if err == nil {
		c.Close()
		t.Fatal("Dial with no daemon succeeded")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Dial = %v, want fs.ErrNotExist (what clients read as no daemon)", err)
	}
}

func TestPeerOfIsPipeLocal(t *testing.T) {
	name := testPipe(t)
	l := listen(t, name)
	dialPipe(t, name)
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p := PeerOf(s); p.Label != "pipe:local" || p.UID != -1 || p.PID != -1 {
		t.Fatalf("PeerOf = %+v", p)
	}
}

// What the server writes just before it closes reaches a client that reads only
// afterwards: a daemon's last answers (a cancelled prompt at shutdown, an error
// before it drops a connection) are not lost.
func TestWritesBeforeCloseAreRead(t *testing.T) {
	name := testPipe(t)
	l := listen(t, name)
	c := dialPipe(t, name)
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("last words\n")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	c.SetReadDeadline(time.Now().Add(guard))
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != "last words\n" {
		t.Fatalf("after the server closed, read %q, %v", got, err)
	}
}

// CloseRead ends the server's reading (a pending Read returns io.EOF) while its
// writes still reach the client: how the daemon answers in-flight calls at shutdown.
func TestCloseReadEndsReadingAndKeepsWriting(t *testing.T) {
	name := testPipe(t)
	l := listen(t, name)
	c := dialPipe(t, name)
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	read := make(chan error, 1)
	go func() {
		_, err := s.Read(make([]byte, 1))
		read <- err
	}()
	cr, ok := s.(interface{ CloseRead() error })
	if !ok {
		t.Fatalf("%T has no CloseRead", s)
	}
	if err := cr.CloseRead(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-read:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("the pending read ended with %v, want io.EOF", err)
		}
	case <-time.After(guard):
		t.Fatal("CloseRead left the pending read blocked")
	}
	s.SetReadDeadline(time.Time{}) // the reader may clear its deadline: still the end
	if _, err := s.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("a read after CloseRead = %v, want io.EOF", err)
	}
	if _, err := s.Write([]byte("answer\n")); err != nil {
		t.Fatalf("write after CloseRead: %v", err)
	}
	s.Close()
	c.SetReadDeadline(time.Now().Add(guard))
	if got, err := bufio.NewReader(c).ReadString('\n'); err != nil || got != "answer\n" {
		t.Fatalf("the client read %q, %v", got, err)
	}
}
