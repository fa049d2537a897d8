package rpc

import (
	"context"
	"encoding/json/jsontext"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
)

type statusResult struct {
	ServerVersion   string         `json:"serverVersion"`
	ProtocolVersion int            `json:"protocolVersion"`
	PID             int            `json:"pid"`
	UptimeMs        int64          `json:"uptimeMs"`
	DataDir         string         `json:"dataDir"`
	Endpoint        string         `json:"endpoint"`
	Connections     int            `json:"connections"`
	ActiveSessions  int            `json:"activeSessions"`
	Sessions        []session.Info `json:"sessions"`
}

// status reports the server and the sessions the caller may see. Params are ignored.
func (s *Server) status(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	sessions := s.cfg.Sessions.List(c.caller())
	return statusResult{
		ServerVersion:   ServerVersion,
		ProtocolVersion: ProtocolVersion,
		PID:             s.pid,
		UptimeMs:        time.Since(s.started).Milliseconds(),
		DataDir:         s.cfg.DataDir,
		Endpoint:        s.cfg.Endpoint,
		Connections:     s.Connections(),
		ActiveSessions:  len(sessions),
		Sessions:        sessions,
	}, nil
}
