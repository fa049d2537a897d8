package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/rpc"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The seed's "Ephemeral mode", rule by rule, on a synctest bubble's clock with the
// daemon's own grace: a rule is seen to hold up to the last instant before its
// deadline and to take effect exactly at it.

// exits counts the calls of an ephemeral's exit, and keeps what it logged.
type exits struct {
	n   atomic.Int32
	log lockedBuffer
}

func newCountedEphemeral() (*ephemeral, *exits) {
	x := &exits{}
	return newEphemeral(EphemeralGrace, slog.New(slog.NewTextHandler(&x.log, nil)), func() { x.n.Add(1) }), x
}

// advanceClock advances the bubble's clock by d and lets every timer due by then fire.
func advanceClock(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func TestEphemeralNeverExitsBeforeTheFirstClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, x := newCountedEphemeral()
		advanceClock(24 * time.Hour)
		if x.n.Load() != 0 {
			t.Fatal("exited before any client connected")
		}
	})
}

func TestEphemeralExitsOneGraceAfterTheLastClientLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, x := newCountedEphemeral()
		e.Connected()
		e.Connected()
		e.Disconnected()
		advanceClock(24 * time.Hour)
		if x.n.Load() != 0 {
			t.Fatal("exited with a client still connected")
		}
		e.Disconnected()
		advanceClock(EphemeralGrace - time.Nanosecond)
		if x.n.Load() != 0 {
			t.Fatalf("exited before the grace of %s was over", EphemeralGrace)
		}
		advanceClock(time.Nanosecond)
		if x.n.Load() != 1 {
			t.Fatalf("exit called %d times at the end of the grace, want 1", x.n.Load())
		}
		advanceClock(24 * time.Hour)
		if x.n.Load() != 1 {
			t.Fatalf("exit called %d times, want once", x.n.Load())
		}
		log := x.log.String()
		if !strings.Contains(log, `msg="ephemeral: a client left" clients=1`) ||
			!strings.Contains(log, `msg="ephemeral: a client left" clients=0 exitAfter=1s`) {
			t.Errorf("log does not tell the count left and the exit:\n%s", log)
		}
	})
}

func TestEphemeralReconnectWithinTheGraceCancelsTheExit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, x := newCountedEphemeral()
		e.Connected()
		e.Disconnected()
		advanceClock(EphemeralGrace - time.Nanosecond)
		e.Connected() // the last instant of the grace
		advanceClock(24 * time.Hour)
		if x.n.Load() != 0 {
			t.Fatal("a reconnect within the grace did not cancel the exit")
		}
		if !strings.Contains(x.log.String(), `msg="ephemeral: a client connected within the grace; not exiting"`) {
			t.Errorf("the cancelled exit is not logged:\n%s", x.log.String())
		}
		// The grace starts over when that client leaves.
		e.Disconnected()
		advanceClock(EphemeralGrace - time.Nanosecond)
		if x.n.Load() != 0 {
			t.Fatal("exited before the new grace was over")
		}
		advanceClock(time.Nanosecond)
		if x.n.Load() != 1 {
			t.Fatalf("exit called %d times, want 1", x.n.Load())
		}
	})
}

// TestEphemeralCountsTheServersConnections wires the ephemeral tracker to a real
// rpc.Server, as Run does, over net.Pipe: every admitted connection counts until it
// closes, and one refused at the connection limit never counts.
func TestEphemeralCountsTheServersConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, x := newCountedEphemeral()
		dir := t.TempDir()
		st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		catalog, err := session.BuildCatalog(config.Default(), dir, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		quiet := slog.New(slog.DiscardHandler)
		sessions := session.NewManager(catalog, session.Options{Store: st, Logger: quiet})
		srv := rpc.NewServer(rpc.Config{MaxConnections: 1, DaemonUID: os.Getuid(), Clients: e, Sessions: sessions, Logger: quiet})
		var wg sync.WaitGroup
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sessions.Shutdown(ctx)
			srv.Shutdown(ctx)
			wg.Wait()
		}()
		connect := func() net.Conn {
			c, s := net.Pipe()
			wg.Go(func() { srv.ServeStream(s, rpc.Peer{Label: "pipe:test", UID: os.Getuid(), PID: -1}) })
			return c
		}
		buf := make([]byte, 4096)
		first := connect()
		defer first.Close()
		// Initialized, so that the handshake deadline does not close it.
		first.Write([]byte(`{"jsonrpc":"2.0","method":"initialize","id":1}` + "\n"))
		if n, err := first.Read(buf); err != nil || !bytes.Contains(buf[:n], []byte(`"result"`)) {
			t.Fatalf("initialize: %q, %v", buf[:n], err)
		}
		refused := connect() // beyond the limit: one error, then closed
		if n, err := refused.Read(buf); err != nil || !bytes.Contains(buf[:n], []byte(`"code":-32004`)) {
			t.Fatalf("the second connection got %q, %v; want a -32004 error", buf[:n], err)
		}
		refused.Close()
		advanceClock(24 * time.Hour)
		if x.n.Load() != 0 {
			t.Fatal("exited while the first connection was open")
		}
		first.Close()
		advanceClock(EphemeralGrace - time.Nanosecond)
		if x.n.Load() != 0 {
			t.Fatal("exited before the grace was over")
		}
		advanceClock(time.Nanosecond)
		if x.n.Load() != 1 {
			t.Fatalf("exit called %d times after the last connection closed, want 1", x.n.Load())
		}
	})
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
