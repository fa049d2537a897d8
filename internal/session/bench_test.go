//go:build unix

package session_test

// Benchmarks of sessions through a real rpc.Server on a Unix socket, with a store in
// a temp dir and the built-in echo agent, for profiling what cmd/zeroclaw-bench
// measures on the binary:
//
//	go test -run '^$' -bench . -benchmem ./internal/session/
//	go test -run '^$' -bench UpdateStream -cpuprofile cpu.out ./internal/session/
//
// Client and server share the process and its CPUs: the figures are for comparing
// changes and finding costs, the tool's are the ones docs/BENCHMARKS.md reports.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/rpc"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// startServer serves an rpc.Server on a Unix socket in a short temp dir under /tmp
// (sun_path is 108 bytes) and returns the socket's path.
func startServer(b *testing.B) string {
	b.Helper()
	dir, err := os.MkdirTemp("/tmp", "zcsb")
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.RemoveAll(dir)
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	st, err := store.Open(filepath.Join(dir, "sessions.db"), store.Options{})
	if err != nil {
		ln.Close()
		os.RemoveAll(dir)
		b.Fatal(err)
	}
	catalog, err := session.BuildCatalog(config.Default(), dir, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	sessions := session.NewManager(catalog, session.Options{Logger: log, Store: st})
	// The default settings: a client reading at its pace is never lagged
	// (docs/protocol.md, "A daemon that runs for months").
	srv := rpc.NewServer(rpc.Config{DataDir: dir, Endpoint: path, DaemonUID: os.Getuid(), Logger: log, Sessions: sessions})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				srv.ServeStream(nc, rpc.Peer{Label: "bench", UID: os.Getuid(), PID: os.Getpid()})
			}()
		}
	}()
	b.Cleanup(func() {
		ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sessions.Shutdown(ctx); err != nil {
			b.Errorf("sessions shutdown: %v", err)
		}
		if err := srv.Shutdown(ctx); err != nil {
			b.Errorf("server shutdown: %v", err)
		}
		wg.Wait()
		st.Close()
		os.RemoveAll(dir)
	})
	return path
}

// client writes request lines and reads lines; it parses only what it checks.
type client struct {
	nc  net.Conn
	r   *bufio.Reader
	buf []byte
	id  int
}

var (
	resultPrefix = []byte(`{"jsonrpc":"2.0","result":`)
	updatePrefix = []byte(`{"jsonrpc":"2.0","method":"session/update"`)
)

func dial(b *testing.B, path string) *client {
	b.Helper()
	nc, err := net.Dial("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	c := &client{nc: nc, r: bufio.NewReaderSize(nc, 4<<20)}
	nc.SetDeadline(time.Now().Add(time.Minute))
	if _, err := c.call("initialize", `{"protocolVersion":1}`); err != nil {
		b.Fatal(err)
	}
	return c
}

func (c *client) send(method, params string) error {
	c.id++
	c.buf = append(c.buf[:0], `{"jsonrpc":"2.0","method":"`...)
	c.buf = append(c.buf, method...)
	c.buf = append(c.buf, `","params":`...)
	c.buf = append(c.buf, params...)
	c.buf = append(c.buf, `,"id":`...)
	c.buf = strconv.AppendInt(c.buf, int64(c.id), 10)
	c.buf = append(c.buf, "}\n"...)
	_, err := c.nc.Write(c.buf)
	return err
}

// answer checks that line is a result for the last request and returns it.
func (c *client) answer(line []byte) ([]byte, error) {
	suffix := `,"id":` + strconv.Itoa(c.id) + "}\n"
	if !bytes.HasPrefix(line, resultPrefix) || !bytes.HasSuffix(line, []byte(suffix)) {
		return nil, fmt.Errorf("unexpected answer to request %d: %.300s", c.id, line)
	}
	return line[len(resultPrefix) : len(line)-len(suffix)], nil
}

func (c *client) call(method, params string) ([]byte, error) {
	if err := c.send(method, params); err != nil {
		return nil, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	return c.answer(line)
}

func (c *client) newSession(b *testing.B) string {
	res, err := c.call("session/new", `{"agentAlias":"default","keep_siblings":true}`)
	if err != nil {
		b.Fatal(err)
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.SessionID == "" {
		b.Fatalf("session/new result %.200s: %v", res, err)
	}
	return r.SessionID
}

// BenchmarkUpdateStream: one op is one echo turn whose 2,000-line prompt streams
// back as about 8,000 session/update notifications to the one attached client,
// which counts them by their prefix until the prompt's answer.
func BenchmarkUpdateStream(b *testing.B) {
	c := dial(b, startServer(b))
	id := c.newSession(b)
	var prompt strings.Builder
	for i := range 2000 {
		if i > 0 {
			prompt.WriteByte('\n')
		}
		fmt.Fprintf(&prompt, "line %d word word", i+1)
	}
	params, err := json.Marshal(map[string]string{"sessionId": id, "prompt": prompt.String()})
	if err != nil {
		b.Fatal(err)
	}
	updates := 0
	cpu0 := processCPU(b)
	for b.Loop() {
		c.nc.SetDeadline(time.Now().Add(time.Minute))
		if err := c.send("session/prompt", string(params)); err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			line, err := c.r.ReadSlice('\n')
			if err != nil {
				b.Fatalf("after %d updates: %v", n, err)
			}
			if bytes.HasPrefix(line, updatePrefix) {
				n++
				continue
			}
			if _, err := c.answer(line); err != nil {
				b.Fatal(err)
			}
			break
		}
		if n < 8000 {
			b.Fatalf("%d updates for a reply of 8,001 words", n)
		}
		updates += n
	}
	b.ReportMetric(float64(updates)/b.Elapsed().Seconds(), "updates/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(updates), "ns/update")
	// The process's CPU (server and client) per update: steadier than the rate on a
	// shared machine, where the rate also measures how much of the CPUs it got.
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(updates), "cpu-ns/update")
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLongSession: one op is one echo turn of a one-line prompt, all in one
// session, so that a turn's cost as the history grows shows (docs/protocol.md,
// "A daemon that runs for months": the 5,000th turn at most 1.25 times the 100th).
// Run it long and profile it:
//
//	go test -run '^$' -bench LongSession -benchtime 5000x -cpuprofile cpu.out ./internal/session/
func BenchmarkLongSession(b *testing.B) {
	c := dial(b, startServer(b))
	id := c.newSession(b)
	params, err := json.Marshal(map[string]string{"sessionId": id, "prompt": "line 1 word word"})
	if err != nil {
		b.Fatal(err)
	}
	var turns []time.Duration
	for b.Loop() {
		start := time.Now()
		c.nc.SetDeadline(start.Add(time.Minute))
		if err := c.send("session/prompt", string(params)); err != nil {
			b.Fatal(err)
		}
		for {
			line, err := c.r.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if bytes.HasPrefix(line, updatePrefix) {
				continue
			}
			if _, err := c.answer(line); err != nil {
				b.Fatal(err)
			}
			break
		}
		turns = append(turns, time.Since(start))
	}
	if n := len(turns) / 10; n > 0 {
		b.ReportMetric(medianMs(turns[:n]), "first-tenth-p50-ms")
		b.ReportMetric(medianMs(turns[len(turns)-n:]), "last-tenth-p50-ms")
	}
}

func medianMs(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// BenchmarkSessionNewClose: one op is a session/new with keep_siblings and the
// session/close of the new session, sequential on one connection.
func BenchmarkSessionNewClose(b *testing.B) {
	c := dial(b, startServer(b))
	for b.Loop() {
		id := c.newSession(b)
		if _, err := c.call("session/close", `{"sessionId":`+strconv.Quote(id)+`}`); err != nil {
			b.Fatal(err)
		}
	}
}
