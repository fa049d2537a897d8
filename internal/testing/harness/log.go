// Package harness is what the end-to-end tests share to drive a real process: a
// Log of what it writes, with waiting for a line (Log); the process itself, killed
// at the test's end (Proc, Run, ExitCode); a line JSON-RPC client over any
// connection, a Unix socket or a named pipe (Conn); and a proxy in front of a
// daemon's socket that cuts connections and refuses new ones (Proxy). It serves
// tests only.
package harness

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// Log collects a process's output, written by exec's copying goroutine, and lets a
// test wait for what it expects to be written. The zero Log is empty and ready.
type Log struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed by the next write; nil until someone awaits
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	return l.b.Write(p)
}

func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Await waits until cond holds for what was written, woken by each write, and
// reports whether it did; it gives up when stop is closed (the process exited) or
// after timeout. It returns the text cond last saw.
func (l *Log) Await(cond func(string) bool, stop <-chan struct{}, timeout time.Duration) (string, bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		l.mu.Lock()
		text := l.b.String()
		if cond(text) {
			l.mu.Unlock()
			return text, true
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-stop:
			text := l.String() // what the process wrote before it exited
			return text, cond(text)
		case <-timer.C:
			return text, false
		}
	}
}

// WaitFor waits until the log holds s, failing t once stop closes without it or
// after within.
func (l *Log) WaitFor(t testing.TB, s string, stop <-chan struct{}, within time.Duration) {
	t.Helper()
	text, ok := l.Await(func(text string) bool { return strings.Contains(text, s) }, stop, within)
	if ok {
		return
	}
	select {
	case <-stop:
		t.Fatalf("exited without logging %q:\n%s", s, text)
	default:
		t.Fatalf("no %q logged within %s:\n%s", s, within, text)
	}
}
