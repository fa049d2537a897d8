//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ioTimeout bounds every wait for the server, so a stuck server fails the run
// instead of hanging it.
const ioTimeout = 30 * time.Second

// client is a minimal NDJSON JSON-RPC client on one connection: it writes request
// lines with increasing integer ids (the id last, which the echo server relies on) and
// reads response lines. It is driven by one goroutine at a time.
type client struct {
	nc  conn
	r   *bufio.Reader
	buf []byte
	id  int64
}

func dial(path string) (*client, error) { return dialSize(path, 16<<10) }

// conn is what the client needs of its connection: a net.Conn, or a blockingConn.
type conn interface {
	Read(b []byte) (int, error)
	Write(b []byte) (int, error)
	Close() error
	SetDeadline(t time.Time) error
	SetReadDeadline(t time.Time) error
}

// dialSize dials path with a read buffer of size bytes, the longest line it reads.
func dialSize(path string, size int) (*client, error) {
	nc, err := net.DialTimeout("unix", path, ioTimeout)
	if err != nil {
		return nil, err
	}
	return &client{nc: nc, r: bufio.NewReaderSize(nc, size)}, nil
}

// dialInitialized dials path and completes the handshake.
func dialInitialized(path string) (*client, error) { return dialInitializedSize(path, 16<<10) }

// dialInitializedSize is dialInitialized with a read buffer of size bytes.
func dialInitializedSize(path string, size int) (*client, error) {
	c, err := dialSize(path, size)
	if err != nil {
		return nil, err
	}
	return initialized(c)
}

// dialBlockingInitialized is dialInitialized over a blockingConn.
func dialBlockingInitialized(path string, size int) (*client, error) {
	nc, err := dialBlocking(path)
	if err != nil {
		return nil, err
	}
	return initialized(&client{nc: nc, r: bufio.NewReaderSize(nc, size)})
}

// initialize completes the handshake; on failure it closes the connection.
func (c *client) initialize() error {
	c.nc.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := c.call("initialize", `{"protocolVersion":1,"clientInfo":{"name":"zeroclaw-bench","version":"1"}}`); err != nil {
		c.nc.Close()
		return fmt.Errorf("initialize: %w", err)
	}
	return c.nc.SetDeadline(time.Time{})
}

// initialized returns c after initialize, or initialize's error.
func initialized(c *client) (*client, error) {
	if err := c.initialize(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *client) close() error { return c.nc.Close() }

// appendRequest appends one request line with the next id.
func (c *client) appendRequest(dst []byte, method, params string) []byte {
	c.id++
	dst = append(dst, `{"jsonrpc":"2.0","method":"`...)
	dst = append(dst, method...)
	dst = append(dst, '"')
	if params != "" {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	dst = append(dst, `,"id":`...)
	dst = strconv.AppendInt(dst, c.id, 10)
	return append(dst, "}\n"...)
}

// call sends one request and returns the result member's raw bytes (valid until the
// next read). It fails on an error answer or an answer to another id.
func (c *client) call(method, params string) ([]byte, error) {
	c.buf = c.appendRequest(c.buf[:0], method, params)
	if _, err := c.nc.Write(c.buf); err != nil {
		return nil, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	return resultOf(line, c.id)
}

// resultOf checks that line answers id with a result and returns the result's bytes.
// Both servers put the result first and the id last, as the seed orders members.
func resultOf(line []byte, id int64) ([]byte, error) {
	var tail [32]byte
	suffix := strconv.AppendInt(append(tail[:0], `,"id":`...), id, 10)
	suffix = append(suffix, "}\n"...)
	if !bytes.HasPrefix(line, resultPrefix) || !bytes.HasSuffix(line, suffix) {
		return nil, fmt.Errorf("unexpected answer to request %d: %.200s", id, line)
	}
	return line[len(resultPrefix) : len(line)-len(suffix)], nil
}

// latencies are the round trips of sequential calls, sorted.
type latencies []time.Duration

func (l latencies) percentile(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	return l[int(p*float64(len(l)-1)+0.5)]
}

// measureLatency runs warmup then calls sequential status calls on one connection
// to each server. The calls are made in rounds that alternate between the servers,
// so that a change in the machine's load during the run hits both alike. It returns
// every server's round trips, sorted, and the p50 of each round per server.
func measureLatency(servers []string, warmup, calls, rounds int) ([]latencies, [][]time.Duration, error) {
	clients := make([]*client, len(servers))
	for i, path := range servers {
		c, err := dialInitialized(path)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		defer c.close()
		clients[i] = c
		if _, err := timedCalls(c, warmup, nil); err != nil {
			return nil, nil, fmt.Errorf("%s: warm-up: %w", path, err)
		}
	}
	out := make([]latencies, len(servers))
	p50s := make([][]time.Duration, len(servers))
	for i := range out {
		out[i] = make(latencies, 0, calls)
	}
	rounds = max(1, min(rounds, calls))
	for r := range rounds {
		n := calls/rounds + boolInt(r < calls%rounds)
		for i, c := range clients {
			round, err := timedCalls(c, n, make(latencies, 0, n))
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", servers[i], err)
			}
			out[i] = append(out[i], round...)
			slices.Sort(round)
			p50s[i] = append(p50s[i], round.percentile(0.5))
		}
	}
	for _, l := range out {
		slices.Sort(l)
	}
	return out, p50s, nil
}

// timedCalls makes n status calls one at a time and appends each round trip to into
// (a nil into keeps nothing: a warm-up).
func timedCalls(c *client, n int, into latencies) (latencies, error) {
	c.nc.SetDeadline(time.Now().Add(ioTimeout + time.Duration(n)*time.Millisecond))
	defer c.nc.SetDeadline(time.Time{})
	for range n {
		start := time.Now()
		if _, err := c.call("status", ""); err != nil {
			return into, err
		}
		if into != nil {
			into = append(into, time.Since(start))
		}
	}
	return into, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// throughput is the outcome of one pipelined run.
type throughput struct {
	Requests int64         // answered within the measured window
	Window   time.Duration // the measured window
	CPU      time.Duration // the server process's CPU time in the window; 0 when unknown
}

func (t throughput) add(u throughput) throughput {
	return throughput{Requests: t.Requests + u.Requests, Window: t.Window + u.Window, CPU: t.CPU + u.CPU}
}

// cpuPerRequest is the server's CPU time per answered request, in microseconds.
func (t throughput) cpuPerRequest() float64 {
	if t.Requests == 0 {
		return 0
	}
	return us(t.CPU) / float64(t.Requests)
}

func (t throughput) perSecond() float64 {
	if t.Window <= 0 {
		return 0
	}
	return float64(t.Requests) / t.Window.Seconds()
}

// measureThroughput opens conns connections to path, keeps depth status requests in
// flight on each, and counts the answers received during duration, after a ramp of
// a tenth of it (at least 100 ms) that is not counted. Then it stops sending, waits
// for every outstanding answer, and closes the connections. When pid is not 0, the
// CPU time that process spent in the window is measured too.
func measureThroughput(path string, pid, conns, depth int, duration time.Duration) (throughput, error) {
	pipes := make([]*pipeline, 0, conns)
	defer func() {
		for _, p := range pipes {
			p.c.close()
		}
	}()
	for range conns {
		c, err := dialInitialized(path)
		if err != nil {
			return throughput{}, err
		}
		pipes = append(pipes, newPipeline(c, depth))
	}
	ramp := max(duration/10, 100*time.Millisecond)
	// One deadline for the whole run, never moved forward: the drain below moves it
	// back to wake a reader that has every answer.
	deadline := time.Now().Add(ramp + duration + ioTimeout)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var answered atomic.Int64
	errs := make(chan error, 2*conns)
	var writers, readers sync.WaitGroup
	for _, p := range pipes {
		p.c.nc.SetDeadline(deadline)
		writers.Add(1)
		readers.Add(1)
		go func() { defer writers.Done(); errs <- p.write(ctx) }()
		go func() { defer readers.Done(); defer close(p.readerDone); errs <- p.read(&answered) }()
	}

	time.Sleep(ramp)
	n0, t0, cpu0 := answered.Load(), time.Now(), processCPU(pid)
	time.Sleep(duration)
	n1, t1, cpu1 := answered.Load(), time.Now(), processCPU(pid)
	stop()
	writers.Wait()
	drainBy := time.Now().Add(ioTimeout)
	for _, p := range pipes {
		p.drain(drainBy)
	}
	readers.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return throughput{}, err
		}
	}
	for i, p := range pipes {
		if got, sent := p.got.Load(), p.sent.Load(); got != sent {
			return throughput{}, fmt.Errorf("connection %d: %d answers to %d requests", i, got, sent)
		}
	}
	return throughput{Requests: n1 - n0, Window: t1.Sub(t0), CPU: cpu1 - cpu0}, nil
}

// pipeline keeps up to depth requests outstanding on one connection: the writer takes
// a token per request, the reader returns one per answer.
type pipeline struct {
	c          *client
	tokens     chan struct{}
	sent, got  atomic.Int64
	finished   atomic.Bool   // every answer arrived after the writer stopped
	readerDone chan struct{} // closed when the reader returns
}

func newPipeline(c *client, depth int) *pipeline {
	p := &pipeline{c: c, tokens: make(chan struct{}, depth), readerDone: make(chan struct{})}
	for range depth {
		p.tokens <- struct{}{}
	}
	return p
}

// write sends requests while tokens are free, as many per write as there are free
// tokens, until ctx ends.
func (p *pipeline) write(ctx context.Context) error {
	var buf []byte
	for {
		select {
		case <-p.tokens:
		case <-ctx.Done():
			return nil
		}
		buf = p.c.appendRequest(buf[:0], "status", "")
		n := int64(1)
	batch:
		for {
			select {
			case <-p.tokens:
				buf = p.c.appendRequest(buf, "status", "")
				n++
			default:
				break batch
			}
		}
		p.sent.Add(n)
		if _, err := p.c.nc.Write(buf); err != nil {
			return fmt.Errorf("pipelined write: %w", err)
		}
	}
}

// read counts answers and returns a token for each. Answers come in any order; each
// must be a result. It returns when drain has seen every answer arrive.
func (p *pipeline) read(answered *atomic.Int64) error {
	for {
		line, err := p.c.r.ReadSlice('\n')
		if err != nil {
			if p.finished.Load() {
				return nil
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				return fmt.Errorf("pipelined read: answer longer than %d bytes", p.c.r.Size())
			}
			return fmt.Errorf("pipelined read after %d answers: %w", p.got.Load(), err)
		}
		if !bytes.HasPrefix(line, resultPrefix) {
			return fmt.Errorf("pipelined read: unexpected answer %.200s", line)
		}
		p.got.Add(1)
		answered.Add(1)
		p.tokens <- struct{}{}
	}
}

// drain waits, after the writer stopped, until every request has its answer (or the
// reader failed, or by), then wakes the reader, which is blocked reading.
func (p *pipeline) drain(by time.Time) {
	for p.got.Load() < p.sent.Load() && time.Now().Before(by) {
		select {
		case <-p.readerDone:
			return
		case <-time.After(time.Millisecond):
		}
	}
	p.finished.Store(p.got.Load() == p.sent.Load())
	p.c.nc.SetReadDeadline(time.Now())
}

// openIdle opens n connections to path and initializes each; the caller closes them.
func openIdle(path string, n int) ([]*client, error) {
	conns := make([]*client, 0, n)
	for range n {
		c, err := dialInitialized(path)
		if err != nil {
			closeAll(conns)
			return nil, fmt.Errorf("idle connection %d: %w", len(conns)+1, err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

func closeAll(conns []*client) {
	for _, c := range conns {
		c.close()
	}
}
