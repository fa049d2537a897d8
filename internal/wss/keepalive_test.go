package wss

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
)

// pipeListener hands the server the far ends of net.Pipe connections: WebSocket
// over HTTP over a pipe, which a synctest bubble can run (real sockets it cannot).
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return newBufferedConn(c), nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// bufferedConn receives into a buffer whether or not anyone reads, as a socket's
// kernel buffer does: net.Pipe buffers nothing, so without it the daemon's ping to a
// peer that never reads would stall in the write instead of waiting for a pong.
// (Read deadlines reach the pipe, not Read; the WebSocket client here sets none.)
type bufferedConn struct {
	net.Conn
	chunks chan []byte // what arrived; closed at the end of input
	rest   []byte
}

func newBufferedConn(c net.Conn) *bufferedConn {
	b := &bufferedConn{Conn: c, chunks: make(chan []byte, 1024)}
	go func() {
		defer close(b.chunks)
		for {
			buf := make([]byte, 4096)
			n, err := c.Read(buf)
			if n > 0 {
				b.chunks <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	return b
}

func (b *bufferedConn) Read(p []byte) (int, error) {
	if len(b.rest) == 0 {
		chunk, ok := <-b.chunks
		if !ok {
			return 0, io.EOF
		}
		b.rest = chunk
	}
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// TestSilentPeerIsPingedAfter20SecondsAndClosed10SecondsLater runs the daemon's
// keepalive (docs/protocol.md, "Transport and framing") with its real durations on a
// synctest clock: a peer that never reads never answers the ping sent after 20 s of
// silence and is closed exactly 10 s later; a peer that reads answers every ping and
// stays.
func TestSilentPeerIsPingedAfter20SecondsAndClosed10SecondsLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type timeout struct {
			peer string
			at   time.Time
		}
		timeouts := make(chan timeout, 2)
		var handlers sync.WaitGroup
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ws, err := websocket.Accept(w, r, nil)
			if err != nil {
				t.Errorf("accept: %v", err)
				return
			}
			handlers.Add(1)
			defer handlers.Done()
			f := NewFramer(ws)
			go func() { // the connection's reader, which also reads the pongs
				for {
					if _, err := f.ReadFrame(); err != nil {
						return
					}
				}
			}()
			peer := r.URL.Path
			f.Keepalive(PingAfter, PongWait, func() { timeouts <- timeout{peer, time.Now()} })
			f.Close()
			<-f.Done()
		})}
		ln := newPipeListener()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		transport := &http.Transport{DialContext: ln.dial}
		dial := func(path string) *websocket.Conn {
			c, _, err := websocket.Dial(context.Background(), "ws://pipe"+path, &websocket.DialOptions{HTTPClient: &http.Client{Transport: transport}})
			if err != nil {
				t.Fatalf("dial %s: %v", path, err)
			}
			return c
		}

		start := time.Now()
		mute := dial("/mute") // never reads, so never answers a ping
		live := dial("/live")
		live.CloseRead(context.Background()) // reads (and answers pings) until closed

		time.Sleep(PingAfter + PongWait - time.Nanosecond)
		synctest.Wait()
		select {
		case to := <-timeouts:
			t.Fatalf("%s closed %s after connecting, before the ping's %s were over", to.peer, to.at.Sub(start), PongWait)
		default:
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		select {
		case to := <-timeouts:
			if to.peer != "/mute" || to.at.Sub(start) != PingAfter+PongWait {
				t.Fatalf("%s closed %s after connecting; want /mute, at exactly %s", to.peer, to.at.Sub(start), PingAfter+PongWait)
			}
		default:
			t.Fatalf("the silent peer is still open %s after connecting", PingAfter+PongWait)
		}

		time.Sleep(time.Hour) // the reading peer answers every ping
		synctest.Wait()
		select {
		case to := <-timeouts:
			t.Fatalf("%s closed, although it answers pings", to.peer)
		default:
		}

		live.Close(websocket.StatusNormalClosure, "")
		mute.CloseNow()
		handlers.Wait()
		srv.Close()
		<-served
		transport.CloseIdleConnections()
	})
}
