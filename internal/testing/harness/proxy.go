package harness

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Proxy forwards connections from its own Unix socket to a daemon's, so that a
// test can cut a client's connection while the daemon (and its turn) goes on, and
// refuse new connections for a while.
type Proxy struct {
	Path string // the proxy's socket: what the client dials

	ln     net.Listener
	target string

	mu     sync.Mutex
	conns  []net.Conn
	refuse bool
}

// NewProxy listens on a fresh socket and forwards to target until the test's
// cleanup, which closes the listener and every forwarded connection.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	dir, err := os.MkdirTemp("", "zcp") // short: sun_path
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Path: filepath.Join(dir, "p.sock"), target: target}
	if p.ln, err = net.Listen("unix", p.Path); err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() { p.ln.Close(); p.Cut(); os.RemoveAll(dir) })
	go p.serve()
	return p
}

func (p *Proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.refuse
		p.mu.Unlock()
		if refuse {
			in.Close()
			continue
		}
		out, err := net.Dial("unix", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go func() { io.Copy(out, in); out.Close() }()
		go func() { io.Copy(in, out); in.Close() }()
	}
}

// Cut closes every forwarded connection; the proxy still accepts new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Refusing, while on, closes each new connection at once.
func (p *Proxy) Refusing(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}
