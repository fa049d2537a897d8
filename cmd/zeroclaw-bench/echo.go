//go:build linux

package main

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"sync"
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
