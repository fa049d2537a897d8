package acp

import (
	"encoding/json/jsontext"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// acpError maps a native error to ACP's codes (docs/protocol.md, "ACP").
func acpError(err error) error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je
	}
	var e *client.Error
	if errors.As(err, &e) {
		code := e.Code
		switch code {
		case client.CodeSessionNotFound:
			code = -32002 // ACP's "resource not found"; its -32000 means "authentication required"
		case client.CodeSessionLimit, client.CodeSessionBusy, client.CodeConnectionLimit:
			code = jsonrpc.CodeInternalError
		}
		return &jsonrpc.Error{Code: code, Message: e.Message, Data: e.Data}
	}
	if errors.Is(err, client.ErrClosed) {
		return jsonrpc.NewError(jsonrpc.CodeInternalError,
			"the zeroclaw daemon went away before answering; the next request reconnects", nil)
	}
	return jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error(), nil)
}

// stdio joins the editor's stdin and stdout into the stream the framer reads and
// writes. The end of input (or a read error) is reported once through eof.
type stdio struct {
	in   io.Reader
	out  io.Writer
	eof  func()
	once sync.Once

	mu sync.Mutex
	// waiting is closed while the reader waits in Read for the editor's next bytes:
	// then every frame the editor sent before is served (the reader frames what it
	// holds before it reads again, and serves notifications inline). Nil until
	// asked for by caughtUp.
	waiting chan struct{}
	reading bool
}

func (s *stdio) Read(p []byte) (int, error) {
	s.mu.Lock()
	s.reading = true
	if s.waiting != nil {
		close(s.waiting)
		s.waiting = nil
	}
	s.mu.Unlock()
	n, err := s.in.Read(p)
	s.mu.Lock()
	s.reading = false
	s.mu.Unlock()
	if err != nil {
		s.once.Do(s.eof)
	}
	return n, err
}

// caughtUp returns a channel that is closed once the reader has served every frame
// it received so far and waits for more (at once when it waits already).
func (s *stdio) caughtUp() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reading {
		return closedChan
	}
	if s.waiting == nil {
		s.waiting = make(chan struct{})
	}
	return s.waiting
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (s *stdio) Write(p []byte) (int, error) { return s.out.Write(p) }

func (s *stdio) Close() error {
	if c, ok := s.in.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// trimID is an ACP request id as the map of requests keys it.
func trimID(v jsontext.Value) string { return strings.TrimSpace(string(v)) }
