//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
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

	"github.com/zeroclaw-labs/zeroclaw-go/internal/scan"
)

// echoServer is the baseline: what a server that does only what the socket needs
// costs, with no JSON-RPC engine behind it. Per connection it runs one reader and
// one writer goroutine. The reader finds each line's method and id without decoding
// (scanRequest: strings are skipped with one bytes.IndexByte each, so a 1.4 MB
// base64 chunk costs about one memchr) and appends a fixed answer line with that id
// spliced in to the connection's output buffer, under a mutex; it wakes the writer
// only when it is about to block in read. The writer swaps the buffer out and writes
// all of it in one system call. So a burst of pipelined requests gets its answers in
// one write, as the daemon's own batching does.
//
// The answers are the daemon's own, recorded at the start of the run (answers), so
// both servers send the same bytes: a status result, an initialize result, the
// results of session and upload calls, and for session/prompt the exact bytes the
// daemon sent during a turn (its session/update lines) replayed before the answer.
// An unknown method gets the status result.
type echoServer struct {
	ln      net.Listener
	answers *answers

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// answers are what the echo server replies, per method.
type answers struct {
	// Results maps a method to the result member of its answer; "status" answers
	// every method missing here.
	Results map[string][]byte `json:"results"`
	// Replay is written, as is, before the answer to session/prompt.
	Replay []byte `json:"replay"`
}

// startEcho listens on path and serves until close.
func startEcho(path string, a *answers) (*echoServer, error) {
	if a.Results["status"] == nil {
		return nil, errors.New("echo server: no status result to answer with")
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	e := &echoServer{ln: ln, answers: a, conns: make(map[net.Conn]struct{})}
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

var resultPrefix = []byte(`{"jsonrpc":"2.0","result":`)

// maxEchoLine bounds one request line, as the daemon's 8 MiB frame limit does.
const maxEchoLine = 8 << 20

// serve is the reader of one connection; it starts the connection's writer.
func (e *echoServer) serve(c net.Conn) {
	w := &echoWriter{c: c, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	defer func() {
		close(w.wake)
		<-w.done
	}()
	buf := make([]byte, 64<<10)
	start, scan, end := 0, 0, 0 // buf[start:end] is unread; buf[start:scan] holds no newline
	for {
		for {
			i := bytes.IndexByte(buf[scan:end], '\n')
			if i < 0 {
				scan = end
				break
			}
			line := buf[start : scan+i]
			start, scan = scan+i+1, scan+i+1
			e.answer(line, w)
		}
		w.kick() // about to block in read
		if start == end {
			start, scan, end = 0, 0, 0
		} else if start > 0 {
			copy(buf, buf[start:end])
			scan, end, start = scan-start, end-start, 0
		}
		if end == len(buf) {
			if len(buf) >= maxEchoLine {
				return
			}
			buf = append(buf, make([]byte, len(buf))...)
		}
		n, err := c.Read(buf[end:])
		if err != nil {
			return
		}
		end += n
	}
}

// answer appends the answer to one request line; a notification gets none.
func (e *echoServer) answer(line []byte, w *echoWriter) {
	method, id := scanRequest(line)
	if id == nil {
		return
	}
	result, ok := e.answers.Results[string(method)]
	if !ok {
		result = e.answers.Results["status"]
	}
	w.mu.Lock()
	if string(method) == "session/prompt" {
		w.buf = append(w.buf, e.answers.Replay...)
	}
	w.buf = append(w.buf, resultPrefix...)
	w.buf = append(w.buf, result...)
	w.buf = append(w.buf, `,"id":`...)
	w.buf = append(w.buf, id...)
	w.buf = append(w.buf, "}\n"...)
	w.mu.Unlock()
}

// echoWriter is the writer of one connection.
type echoWriter struct {
	c    net.Conn
	mu   sync.Mutex
	buf  []byte        // answers not yet taken by the writer
	wake chan struct{} // one token: there may be output
	done chan struct{}
}

func (w *echoWriter) kick() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *echoWriter) run() {
	defer close(w.done)
	var spare []byte
	for range w.wake {
		w.mu.Lock()
		out := w.buf
		w.buf = spare[:0]
		w.mu.Unlock()
		if len(out) > 0 {
			if _, err := w.c.Write(out); err != nil {
				w.c.Close() // the reader's next read fails
			}
		}
		if cap(out) > 1<<20 {
			out = nil // a replayed turn: do not keep megabytes per connection
		}
		spare = out
	}
}

// scanRequest finds the method and the id of a request line without decoding it: it
// walks the top-level object's members, skipping nested values by their brackets and
// every string with one bytes.IndexByte per quote. It trusts the line to be valid
// JSON (this tool's client writes it) and returns nil for what it does not find.
func scanRequest(line []byte) (method, id []byte) {
	depth := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			end := stringEnd(line, i+1)
			if end < 0 {
				return method, id
			}
			key := line[i+1 : end]
			i = end
			if depth != 1 {
				continue
			}
			j := scan.Space(line, end+1)
			if j >= len(line) || line[j] != ':' {
				continue // a string value, not a member name
			}
			v := scan.Space(line, j+1)
			switch string(key) {
			case "id":
				id = line[v:valueEnd(line, v)]
				i = v + len(id) - 1
			case "method":
				if v < len(line) && line[v] == '"' {
					if e := stringEnd(line, v+1); e > 0 {
						method = line[v+1 : e]
						i = e
					}
				}
			}
		}
	}
	return method, id
}

// stringEnd returns the index of the quote that ends the string starting at from,
// or -1.
func stringEnd(b []byte, from int) int {
	for {
		q := bytes.IndexByte(b[from:], '"')
		if q < 0 {
			return -1
		}
		q += from
		n := 0 // backslashes right before the quote
		for k := q - 1; k >= from && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		from = q + 1
	}
}

// valueEnd returns the end of the scalar value (an id: string, number or null) at v.
func valueEnd(b []byte, v int) int {
	if v < len(b) && b[v] == '"' {
		if e := stringEnd(b, v+1); e > 0 {
			return e + 1
		}
		return len(b)
	}
	e := v
	for e < len(b) && b[e] != ',' && b[e] != '}' && b[e] != ' ' && b[e] != '\t' && b[e] != '\r' {
		e++
	}
	return e
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
	echoSocketEnv  = "ZEROCLAW_BENCH_ECHO_SOCKET"
	echoAnswersEnv = "ZEROCLAW_BENCH_ECHO_ANSWERS" // a file holding the answers as JSON
)

// echoChild reports whether this process was started to be the echo server.
func echoChild() bool { return os.Getenv(echoSocketEnv) != "" }

// serveEchoChild serves the echo server of the environment until SIGTERM or SIGINT
// and returns the exit code.
func serveEchoChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var a answers
	b, err := os.ReadFile(os.Getenv(echoAnswersEnv))
	if err == nil {
		err = json.Unmarshal(b, &a)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "zeroclaw-bench echo: reading the answers:", err)
		return 1
	}
	e, err := startEcho(os.Getenv(echoSocketEnv), &a)
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
func startEchoProcess(a *answers) (*echoProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("/tmp", "zcb")
	if err != nil {
		return nil, err
	}
	p := &echoProcess{dir: dir, socket: filepath.Join(dir, "echo.sock"), exited: make(chan struct{})}
	b, err := json.Marshal(a)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "answers.json"), b, 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p.cmd = exec.Command(self)
	p.cmd.Env = append(os.Environ(), echoSocketEnv+"="+p.socket, echoAnswersEnv+"="+filepath.Join(dir, "answers.json"))
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
