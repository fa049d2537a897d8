package rpc

import (
	"context"
	"encoding/json/jsontext"
	"time"
)

type statusResult struct {
	ServerVersion   string          `json:"serverVersion"`
	ProtocolVersion int             `json:"protocolVersion"`
	PID             int             `json:"pid"`
	UptimeMs        int64           `json:"uptimeMs"`
	DataDir         string          `json:"dataDir"`
	Endpoint        string          `json:"endpoint"`
	Connections     int             `json:"connections"`
	ActiveSessions  int             `json:"activeSessions"`
	Sessions        []sessionStatus `json:"sessions"`
}

type sessionStatus struct {
	SessionID  string `json:"sessionId"`
	AgentAlias string `json:"agentAlias"`
	State      string `json:"state"`
}

// status reports the server and the sessions the caller may see. Params are ignored.
func (s *Server) status(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	return statusResult{
		ServerVersion:   ServerVersion,
		ProtocolVersion: ProtocolVersion,
		PID:             s.pid,
		UptimeMs:        time.Since(s.started).Milliseconds(),
		DataDir:         s.cfg.DataDir,
		Endpoint:        s.cfg.Endpoint,
		Connections:     s.Connections(),
		ActiveSessions:  0,
		Sessions:        []sessionStatus{},
	}, nil
}
