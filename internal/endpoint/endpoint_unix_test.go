//go:build unix

package endpoint

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// shortDir is a fresh directory with a short path: t.TempDir paths grow with the
// test name and can exceed sun_path.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "zc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func listen(t *testing.T, addr string) *Listener {
	t.Helper()
	l, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// staleSocket leaves a socket file at addr with nobody listening, as a daemon
// killed with SIGKILL does.
func staleSocket(t *testing.T, addr string) {
	t.Helper()
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ul.SetUnlinkOnClose(false)
	ul.Close()
}

// roundTrip dials l and checks that the connection it accepts carries a byte.
// Connections that close without sending (liveness probes) are skipped.
func roundTrip(t *testing.T, l *Listener) {
	t.Helper()
	c, err := Dial(context.Background(), l.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{'x'}); err != nil {
		t.Fatal(err)
	}
	for {
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		s.SetReadDeadline(time.Now().Add(5 * time.Second))
		var b [1]byte
		_, err = s.Read(b[:])
		s.Close()
		if errors.Is(err, io.EOF) {
			continue
		}
		if err != nil || b[0] != 'x' {
			t.Fatalf("accepted connection read %q, %v; want 'x'", b[0], err)
		}
		return
	}
}

func fileType(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Type()
}

func TestListenCreatesPrivateSocketDirAndLock(t *testing.T) {
	withUmask(t, 0o022)
	dir := filepath.Join(shortDir(t), "sub")
	addr := filepath.Join(dir, "d.sock")
	l := listen(t, addr)

	if typ := fileType(t, addr); typ != fs.ModeSocket {
		t.Errorf("socket type %v, want a socket", typ)
	}
	checks := []struct {
		path string
		want fs.FileMode
	}{{addr, 0o600}, {dir, 0o700}, {addr + ".lock", 0o600}}
	for _, c := range checks {
		if got := perm(t, c.path); got != c.want {
			t.Errorf("%s: mode %v, want %v", c.path, got, c.want)
		}
	}
	if typ := fileType(t, addr+".lock"); !typ.IsRegular() {
		t.Errorf("lock file type %v, want regular", typ)
	}
	roundTrip(t, l)
}

// Without the umask, a socket created under umask 0 would be 0777 until chmod.
func TestBindCreatesSocket0600EvenUnderUmaskZero(t *testing.T) {
	withUmask(t, 0)
	addr := filepath.Join(shortDir(t), "d.sock")
	ul, err := bindPrivate(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	if got := perm(t, addr); got != 0o600 {
		t.Errorf("socket mode straight after bind %v, want 0600", got)
	}
}

func TestListenRestoresUmask(t *testing.T) {
	withUmask(t, 0o027)
	listen(t, filepath.Join(shortDir(t), "d.sock"))
	if got := unix.Umask(0o027); got != 0o027 {
		t.Errorf("umask after Listen %#o, want 0o027", got)
	}
}

func TestSecondListenReportsAlreadyServing(t *testing.T) {
	addr := filepath.Join(shortDir(t), "d.sock")
	first := listen(t, addr)

	l, err := Listen(addr)
	var already *AlreadyServingError
	if !errors.As(err, &already) {
		if l != nil {
			l.Close()
		}
		t.Fatalf("second Listen = %v, want *AlreadyServingError", err)
	}
	if want := "already serving at " + addr; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if typ := fileType(t, addr); typ != fs.ModeSocket {
		t.Errorf("socket replaced by %v", typ)
	}
	roundTrip(t, first)
}

// A daemon that does not use the lock (or whose lock file was deleted) is still
// detected by the connect probe.
func TestListenDetectsLiveSocketWithoutLock(t *testing.T) {
	addr := filepath.Join(shortDir(t), "d.sock")
	other, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = Listen(addr)
	var already *AlreadyServingError
	if !errors.As(err, &already) {
		t.Fatalf("Listen = %v, want *AlreadyServingError", err)
	}
	if _, err := os.Lstat(addr); err != nil {
		t.Errorf("live socket gone: %v", err)
	}
}

func TestListenReportsLockHeldWithoutSocket(t *testing.T) {
	addr := filepath.Join(shortDir(t), "d.sock")
	fd, err := lockEndpoint(addr + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	_, err = Listen(addr)
	if err == nil || !strings.Contains(err.Error(), "another daemon holds "+addr+".lock") {
		t.Fatalf("Listen = %v, want the lock-held error", err)
	}
}

func TestListenReplacesStaleSocket(t *testing.T) {
	addr := filepath.Join(shortDir(t), "d.sock")
	staleSocket(t, addr)
	l := listen(t, addr)
	roundTrip(t, l)
}

func TestListenRefusesNonSocket(t *testing.T) {
	addr := filepath.Join(shortDir(t), "d.sock")
	if err := os.WriteFile(addr, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Listen(addr)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Listen = %v, want an error naming %s", err, addr)
	}
	if b, err := os.ReadFile(addr); err != nil || string(b) != "keep me" {
		t.Errorf("file at the path changed: %q, %v", b, err)
	}
	// The failed Listen released the lock: taking it now succeeds.
	fd, err := lockEndpoint(addr + ".lock")
	if err != nil {
		t.Fatalf("lock after failed Listen: %v", err)
	}
	unix.Close(fd)
}

func TestCloseRemovesSocketKeepsLockFileAndReleasesLock(t *testing.T) {
	addr := filepath.Join(shortDir(t), "d.sock")
	l, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if _, err := os.Lstat(addr); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket still there after Close: %v", err)
	}
	if _, err := os.Lstat(addr + ".lock"); err != nil {
		t.Errorf("lock file removed: %v", err)
	}
	roundTrip(t, listen(t, addr)) // the endpoint is free again
}

func TestCloseLeavesAReplacedPathAlone(t *testing.T) {
	addr := filepath.Join(shortDir(t), "d.sock")
	l := listen(t, addr)
	if err := os.Remove(addr); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(addr, []byte("not yours"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(addr); err != nil || string(b) != "not yours" {
		t.Errorf("replacement file: %q, %v; want it untouched", b, err)
	}
}

func TestListenRefusesTooLongPath(t *testing.T) {
	limit := len(unix.RawSockaddrUnix{}.Path) - 1
	dir := shortDir(t)
	addr := dir + "/" + strings.Repeat("s", limit+1-len(dir)-1)
	if len(addr) != limit+1 {
		t.Fatalf("test bug: len(addr) = %d", len(addr))
	}
	_, err := Listen(addr)
	if err == nil {
		t.Fatal("Listen of an over-long path succeeded")
	}
	for _, want := range []string{addr, strconv.Itoa(len(addr)) + " bytes", strconv.Itoa(limit)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestListenRefusesSymlinkedLockFile(t *testing.T) {
	dir := shortDir(t)
	addr := filepath.Join(dir, "d.sock")
	target := filepath.Join(dir, "target")
	if err := os.Symlink(target, addr+".lock"); err != nil {
		t.Fatal(err)
	}
	_, err := Listen(addr)
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("Listen = %v, want a symlink refusal", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("symlink target was created: %v", err)
	}
	if _, err := os.Lstat(addr); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket was created: %v", err)
	}
}

func TestListenNarrowsLockFileMode(t *testing.T) {
	addr := filepath.Join(shortDir(t), "d.sock")
	if err := os.WriteFile(addr+".lock", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(addr+".lock", 0o644); err != nil {
		t.Fatal(err)
	}
	listen(t, addr)
	if got := perm(t, addr+".lock"); got != 0o600 {
		t.Errorf("lock file mode %v, want 0600", got)
	}
}

func TestListenRefusesLockFileOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	addr := filepath.Join(shortDir(t), "d.sock")
	if err := os.WriteFile(addr+".lock", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(addr+".lock", 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err := Listen(addr)
	if err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Fatalf("Listen = %v, want a refusal of the foreign lock file", err)
	}
}

func TestDialFailsWithoutDaemon(t *testing.T) {
	addr := filepath.Join(shortDir(t), "d.sock")
	if c, err := Dial(context.Background(), addr); err == nil {
		c.Close()
		t.Fatal("Dial with no daemon succeeded")
	}
}
