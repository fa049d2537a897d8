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

// acpError maps a native error to ACP's codes (SPEC §17).
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
}

func (s *stdio) Read(p []byte) (int, error) {
	n, err := s.in.Read(p)
	if err != nil {
		s.once.Do(s.eof)
	}
	return n, err
}

func (s *stdio) Write(p []byte) (int, error) { return s.out.Write(p) }

func (s *stdio) Close() error {
	if c, ok := s.in.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// trimID is an ACP request id as the map of requests keys it.
func trimID(v jsontext.Value) string { return strings.TrimSpace(string(v)) }
