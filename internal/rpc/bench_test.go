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
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/rpc"
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
		srv: rpc.NewServer(rpc.Config{
			DataDir:   dir,
			Endpoint:  path,
			DaemonUID: os.Getuid(),
			Logger:    slog.New(slog.DiscardHandler),
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
