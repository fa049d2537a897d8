package rpc

import (
	"context"
	"encoding/json/jsontext"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// statusResult is the result of status: package protocol's shape, which the client
// decodes.
type statusResult protocol.Status

// status reports the server and the sessions the caller may see. Params are ignored.
// The answer is read when it is encoded, right after this returns (statusAnswer).
func (s *Server) status(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	return statusAnswer{c}, nil
}

// statusAnswer is the answer to status, read as it is encoded (jsonrpc encodes a
// result as soon as its handler returns, on the same goroutine). It is one pointer,
// so returning it as a result allocates nothing, where the statusResult it fills
// took an allocation of its own per call.
type statusAnswer struct{ c *connState }

// The members the server fixed at its start are encoded once (statusCache).
func (a statusAnswer) AppendJSON(dst []byte) ([]byte, error) {
	s := a.c.srv
	p, err := s.statusParts.get(statusResult{
		ServerVersion:   ServerVersion,
		ProtocolVersion: ProtocolVersion,
		PID:             s.pid,
		DataDir:         s.cfg.DataDir,
		Endpoint:        s.cfg.Endpoint,
	})
	if err != nil {
		return dst, err
	}
	sessions := s.cfg.Sessions.List(a.c.caller())
	return p.append(dst, time.Since(s.started).Milliseconds(), s.Connections(), len(sessions), sessions)
}
