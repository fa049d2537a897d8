package endpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// probeTimeout bounds the connect that asks whether a daemon already answers at
// an endpoint. A live daemon accepts in microseconds; a second is generous.
const probeTimeout = time.Second

// Address returns the endpoint: $ZEROCLAW_SOCKET when set, else on Unix
// <DataDir>/daemon.sock and on Windows the pipe named by pipeName(DataDir).
// getenv is os.Getenv in production; nil means os.Getenv.
func Address(d Dirs, getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if s := getenv("ZEROCLAW_SOCKET"); s != "" {
		return s
	}
	return defaultAddress(d)
}

// pipeName is the Windows pipe for a data dir: \\.\pipe\zeroclaw-<first 16 hex
// digits of sha256(dataDir)>. Pipe names live in one machine-wide namespace, so
// the name is derived from the (absolute) data dir to give each data dir its
// own daemon. It is pure so that every OS can test it.
func pipeName(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	return `\\.\pipe\zeroclaw-` + hex.EncodeToString(sum[:8])
}

// AlreadyServingError reports that a daemon already answers at Path.
type AlreadyServingError struct{ Path string }

func (e *AlreadyServingError) Error() string { return "already serving at " + e.Path }

// Listener is the daemon's listener on the local endpoint. It holds the endpoint
// (on Unix: the lock and the socket file) until Close.
type Listener struct {
	ln    net.Listener
	path  string
	claim claim // what we hold besides ln; released by Close (per OS)

	closeOnce sync.Once
	closeErr  error
}

// Accept waits for and returns the next connection.
func (l *Listener) Accept() (net.Conn, error) { return l.ln.Accept() }

// Addr returns the listener's network address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Path returns the endpoint address string Listen was given.
func (l *Listener) Path() string { return l.path }

// Close stops listening and gives the endpoint up. It is safe to call more than
// once; later calls return the first call's result.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		err := l.ln.Close()
		l.closeErr = errors.Join(err, l.claim.release(l.path))
	})
	return l.closeErr
}
