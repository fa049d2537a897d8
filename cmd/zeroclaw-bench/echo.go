//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// echoServer is the baseline: the cost of a Unix socket and NDJSON framing with no
// JSON-RPC engine behind it. Each connection gets a goroutine that reads lines and
// answers each with one write of a fixed response line, the shape and size of the
// daemon's own status answer, with the request's id spliced in. It answers
// initialize with the daemon's initialize result, so one client drives both.
//
// It parses nothing beyond finding the id, which this tool's client always writes
// last ({…,"id":N}): it serves this tool's client only.
type echoServer struct {
	ln         net.Listener
	status     []byte // the result member of a status answer
	initialize []byte // the result member of an initialize answer

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// startEcho listens on path and serves until close.
func startEcho(path string, statusResult, initializeResult []byte) (*echoServer, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	e := &echoServer{ln: ln, status: statusResult, initialize: initializeResult, conns: make(map[net.Conn]struct{})}
	e.wg.Add(1)
	go e.accept()
	return e, nil
}

func (e *echoServer) accept() {
	defer e.wg.Done()
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return // closed
		}
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			c.Close()
			return
		}
		e.conns[c] = struct{}{}
		e.mu.Unlock()
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.serve(c)
			e.mu.Lock()
			delete(e.conns, c)
			e.mu.Unlock()
			c.Close()
		}()
	}
}

var (
	resultPrefix   = []byte(`{"jsonrpc":"2.0","result":`)
	idMember       = []byte(`"id":`)
	initializeName = []byte(`"method":"initialize"`)
)

func (e *echoServer) serve(c net.Conn) {
	r := bufio.NewReaderSize(c, 64<<10)
	out := make([]byte, 0, len(resultPrefix)+max(len(e.status), len(e.initialize))+64)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return // longer than any line this tool's client sends
		}
		if err != nil {
			return
		}
		i := bytes.LastIndex(line, idMember)
		if i < 0 {
			continue // a notification: no answer
		}
		id := bytes.TrimRight(line[i+len(idMember):], "}\r\n \t")
		body := e.status
		if bytes.Contains(line, initializeName) {
			body = e.initialize
		}
		out = append(out[:0], resultPrefix...)
		out = append(out, body...)
		out = append(out, ',')
		out = append(out, idMember...)
		out = append(out, id...)
		out = append(out, "}\n"...)
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// close stops accepting, closes every connection and waits for their goroutines.
func (e *echoServer) close() {
	e.ln.Close()
	e.mu.Lock()
	e.closed = true
	for c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// The echo server runs in a child process of this same binary by default, so that it
// pays what the daemon pays: its own threads asleep in epoll, woken across processes.
// Served from the client's own process it answers faster than any server could,
// because the client's runtime is already awake when the request lands.
const (
	echoSocketEnv     = "ZEROCLAW_BENCH_ECHO_SOCKET"
	echoStatusEnv     = "ZEROCLAW_BENCH_ECHO_STATUS"
	echoInitializeEnv = "ZEROCLAW_BENCH_ECHO_INITIALIZE"
)

// echoChild reports whether this process was started to be the echo server.
func echoChild() bool { return os.Getenv(echoSocketEnv) != "" }

// serveEchoChild serves the echo server of the environment until SIGTERM or SIGINT
// and returns the exit code.
func serveEchoChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	e, err := startEcho(os.Getenv(echoSocketEnv), []byte(os.Getenv(echoStatusEnv)), []byte(os.Getenv(echoInitializeEnv)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "zeroclaw-bench echo:", err)
		return 1
	}
	<-ctx.Done()
	e.close()
	return 0
}

// echoProcess is the echo server in a child process.
type echoProcess struct {
	dir, socket string
	cmd         *exec.Cmd
	exited      chan struct{}
	err         error
}

// startEchoProcess starts this binary as the echo server on a socket in a fresh dir
// under /tmp and waits until it accepts a connect.
func startEchoProcess(statusResult, initializeResult []byte) (*echoProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("/tmp", "zcb")
	if err != nil {
		return nil, err
	}
	p := &echoProcess{dir: dir, socket: filepath.Join(dir, "echo.sock"), exited: make(chan struct{})}
	p.cmd = exec.Command(self)
	p.cmd.Env = append(os.Environ(),
		echoSocketEnv+"="+p.socket, echoStatusEnv+"="+string(statusResult), echoInitializeEnv+"="+string(initializeResult))
	p.cmd.Stderr = os.Stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the run
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	for start := time.Now(); ; {
		if c, err := net.Dial("unix", p.socket); err == nil {
			c.Close()
			return p, nil
		}
		select {
		case <-p.exited:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("echo server exited at start: %v", p.err)
		case <-time.After(time.Millisecond):
		}
		if time.Since(start) > readyTimeout {
			p.cmd.Process.Kill()
			<-p.exited
			os.RemoveAll(dir)
			return nil, fmt.Errorf("echo server not accepting after %s", readyTimeout)
		}
	}
}

// stop ends the echo process with SIGTERM and waits for it.
func (p *echoProcess) stop() error {
	defer os.RemoveAll(p.dir)
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		p.cmd.Process.Kill()
		<-p.exited
		return errors.New("echo server did not exit after SIGTERM; killed")
	}
	if p.err != nil {
		return fmt.Errorf("echo server: %w", p.err)
	}
	return nil
}
