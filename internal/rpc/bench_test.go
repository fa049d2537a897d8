//go:build unix

package rpc_test

// End-to-end benchmarks of one status call: a real Server serving a real Unix socket,
// and a client that initializes and then calls status. The "raw" client writes and
// reads bytes directly, so the figure is almost all server; the "conn" client is a
// jsonrpc.Conn, the way Go clients of the daemon talk.
//
//	go test -run '^$' -bench . -benchmem ./internal/rpc/

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/rpc"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// benchServer is an rpc.Server on a Unix socket in a temp dir.
type benchServer struct {
	srv  *rpc.Server
	ln   net.Listener
	path string
	wg   sync.WaitGroup
}

func startBenchServer(b *testing.B) *benchServer {
	b.Helper()
	dir := b.TempDir()
	path := filepath.Join(dir, "daemon.sock")
	if len(path) >= 108 { // sun_path; TMPDIR may be long
		var err error
		if dir, err = os.MkdirTemp("/tmp", "zcb"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		path = filepath.Join(dir, "daemon.sock")
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	s := &benchServer{
		srv: newBenchServer(b, rpc.Config{
			DataDir:  dir,
			Endpoint: path,
		}),
		ln:   ln,
		path: path,
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.srv.ServeStream(nc, rpc.Peer{Label: "bench", UID: os.Getuid(), PID: os.Getpid()})
			}()
		}
	}()
	b.Cleanup(s.stop)
	return s
}

// newBenchServer builds a Server as the daemon does, with the built-in agents and
// logs discarded. Its sessions shut down at cleanup, after the server.
func newBenchServer(b *testing.B, cfg rpc.Config) *rpc.Server {
	cfg.DaemonUID = os.Getuid()
	cfg.Logger = slog.New(slog.DiscardHandler)
	catalog, err := session.BuildCatalog(config.Default(), cfg.DataDir, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(b.TempDir()+"/sessions.db", store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	cfg.Sessions = session.NewManager(catalog, session.Options{Logger: cfg.Logger, Store: st})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cfg.Sessions.Shutdown(ctx); err != nil {
			b.Errorf("sessions shutdown: %v", err)
		}
	})
	return rpc.NewServer(cfg)
}

func (s *benchServer) stop() {
	s.ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
	s.wg.Wait()
}

// rawClient is a minimal NDJSON client: one request line out, one response line in.
type rawClient struct {
	nc  net.Conn
	r   *bufio.Reader
	buf []byte
	id  int
}

func dialRaw(b *testing.B, path string) *rawClient {
	nc, err := net.Dial("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	c := &rawClient{nc: nc, r: bufio.NewReaderSize(nc, 16<<10)}
	line, err := c.call("initialize", `,"params":{"protocolVersion":1}`)
	if err != nil {
		b.Fatal(err)
	}
	if !bytes.Contains(line, []byte(`"result"`)) {
		b.Fatalf("initialize answered %s", line)
	}
	return c
}

// call sends one request and returns its response line (valid until the next call).
func (c *rawClient) call(method, params string) ([]byte, error) {
	c.id++
	c.buf = append(c.buf[:0], `{"jsonrpc":"2.0","method":"`...)
	c.buf = append(c.buf, method...)
	c.buf = append(c.buf, '"')
	c.buf = append(c.buf, params...)
	c.buf = append(c.buf, `,"id":`...)
	c.buf = strconv.AppendInt(c.buf, int64(c.id), 10)
	c.buf = append(c.buf, "}\n"...)
	if _, err := c.nc.Write(c.buf); err != nil {
		return nil, err
	}
	return c.r.ReadSlice('\n')
}

func (c *rawClient) status(b *testing.B) {
	line, err := c.call("status", "")
	if err != nil {
		b.Error(err)
		return
	}
	// The id closes the line: check it so a mismatched answer cannot pass unnoticed.
	want := `,"id":` + strconv.Itoa(c.id) + "}\n"
	if !bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","result":{`)) || !bytes.HasSuffix(line, []byte(want)) {
		b.Errorf("status answered %s", line)
	}
}

func BenchmarkStatusRoundTrip(b *testing.B) {
	s := startBenchServer(b)

	b.Run("raw/sequential", func(b *testing.B) {
		c := dialRaw(b, s.path)
		defer c.nc.Close()
		b.ReportAllocs()
		for b.Loop() {
			c.status(b)
		}
	})

	b.Run("raw/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			c := dialRaw(b, s.path)
			defer c.nc.Close()
			for pb.Next() {
				c.status(b)
			}
		})
	})

	b.Run("conn/sequential", func(b *testing.B) {
		c := dialConn(b, s.path)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			var st struct {
				PID int `json:"pid"`
			}
			if err := c.Call(ctx, "status", nil, &st); err != nil || st.PID == 0 {
				b.Fatalf("status: %v (pid %d)", err, st.PID)
			}
		}
	})

	b.Run("conn/parallel_shared", func(b *testing.B) {
		// One connection, many callers: the daemon serves them concurrently.
		c := dialConn(b, s.path)
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := c.Call(ctx, "status", nil, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkStatusPipelined keeps 64 status requests in flight on each of 8
// connections, as the load generator does; ns/op is the server's time per request
// at full load (the client shares the process and its CPUs).
func BenchmarkStatusPipelined(b *testing.B) {
	const conns, depth = 8, 64
	s := startBenchServer(b)
	clients := make([]*rawClient, conns)
	for i := range clients {
		clients[i] = dialRaw(b, s.path)
		defer clients[i].nc.Close()
	}
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, c := range clients {
		quota := b.N / conns
		if i < b.N%conns {
			quota++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.pipeline(quota, depth); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
}

// pipeline sends n status requests with at most depth unanswered, writing each
// refill in one write once every answer already received is counted.
func (c *rawClient) pipeline(n, depth int) error {
	c.nc.SetDeadline(time.Now().Add(time.Minute))
	defer c.nc.SetDeadline(time.Time{})
	sent, answered, owed := 0, 0, min(depth, n)
	for answered < n {
		if owed > 0 && c.r.Buffered() == 0 {
			c.buf = c.buf[:0]
			for range owed {
				c.id++
				c.buf = append(c.buf, `{"jsonrpc":"2.0","method":"status","id":`...)
				c.buf = strconv.AppendInt(c.buf, int64(c.id), 10)
				c.buf = append(c.buf, "}\n"...)
			}
			if _, err := c.nc.Write(c.buf); err != nil {
				return err
			}
			sent, owed = sent+owed, 0
		}
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","result":{`)) {
			return fmt.Errorf("status answered %s", line)
		}
		answered++
		if sent < n {
			owed++
			owed = min(owed, n-sent)
		}
	}
	return nil
}

// dialConn returns an initialized jsonrpc.Conn client, closed at cleanup.
func dialConn(b *testing.B, path string) *jsonrpc.Conn {
	nc, err := net.Dial("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	refuse := jsonrpc.HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "not served")
	})
	c := jsonrpc.NewConn(jsonrpc.NewNDJSON(nc), refuse, jsonrpc.Options{Logger: slog.New(slog.DiscardHandler)})
	done := make(chan struct{})
	go func() {
		c.Run()
		close(done)
	}()
	b.Cleanup(func() {
		c.Close()
		<-done
	})
	if err := c.Call(context.Background(), "initialize", map[string]any{"protocolVersion": 1}, nil); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkIdleConnection opens b.N initialized connections (in batches, so that the
// count never nears the open-file limit) and reports what one idle connection keeps
// in the server: live heap and goroutine stack after a GC, and the heap in use before
// it (garbage included, closer to what RSS sees). The client ends are bare file
// descriptors, so nothing of the client is counted.
//
//	go test -run '^$' -bench IdleConnection -benchtime 2000x ./internal/rpc/
func BenchmarkIdleConnection(b *testing.B) {
	srv := newBenchServer(b, rpc.Config{DataDir: b.TempDir(), MaxConnections: 4096})
	var wg sync.WaitGroup
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		wg.Wait()
	}()
	const batch = 1000
	var liveHeap, stack, heapInUse float64
	for done := 0; done < b.N; {
		n := min(batch, b.N-done)
		before := memStats(true)
		fds := make([]int, 0, n)
		for range n {
			fd, err := idleConnection(srv, &wg)
			if err != nil {
				b.Fatal(err)
			}
			fds = append(fds, fd)
		}
		inUse := memStats(false)
		after := memStats(true)
		heapInUse += float64(inUse.HeapInuse) - float64(before.HeapInuse)
		liveHeap += float64(after.HeapAlloc) - float64(before.HeapAlloc)
		stack += float64(after.StackInuse) - float64(before.StackInuse)
		for _, fd := range fds {
			syscall.Close(fd)
		}
		for srv.Connections() > 0 { // let the server let go of the batch
			time.Sleep(time.Millisecond)
		}
		done += n
	}
	b.ReportMetric(liveHeap/float64(b.N), "live-heap-B/conn")
	b.ReportMetric(stack/float64(b.N), "stack-B/conn")
	b.ReportMetric(heapInUse/float64(b.N), "heap-inuse-B/conn")
}

func memStats(gc bool) runtime.MemStats {
	if gc {
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// idleConnection connects a socket pair to srv, initializes it through the client's
// bare descriptor and returns that descriptor.
func idleConnection(srv *rpc.Server, wg *sync.WaitGroup) (int, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return -1, err
	}
	f := os.NewFile(uintptr(fds[1]), "server")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		syscall.Close(fds[0])
		return -1, err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		srv.ServeStream(nc, rpc.Peer{Label: "bench", UID: os.Getuid(), PID: os.Getpid()})
	}()
	req := []byte(`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}` + "\n")
	if _, err := syscall.Write(fds[0], req); err != nil {
		syscall.Close(fds[0])
		return -1, err
	}
	var buf [1024]byte
	for got := 0; ; {
		n, err := syscall.Read(fds[0], buf[got:])
		if err != nil || n == 0 {
			syscall.Close(fds[0])
			return -1, fmt.Errorf("reading the initialize answer: %v", err)
		}
		got += n
		if bytes.IndexByte(buf[:got], '\n') >= 0 {
			if !bytes.Contains(buf[:got], []byte(`"result"`)) {
				syscall.Close(fds[0])
				return -1, fmt.Errorf("initialize answered %s", buf[:got])
			}
			return fds[0], nil
		}
		if got == len(buf) {
			syscall.Close(fds[0])
			return -1, errors.New("initialize answer longer than 1 KiB")
		}
	}
}
