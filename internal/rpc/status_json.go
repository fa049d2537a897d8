package rpc

import (
	"encoding/json/jsontext"
	"errors"
	"strconv"
	"sync"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
)

// AppendJSON encodes the status result by hand (jsonrpc.Appender): status is the
// call a client polls and pipelines, and reflection was most of its cost. The
// bytes are exactly what encoding/json/v2 writes for the struct's tags
// (TestStatusEncodingMatchesEncodingJSON).
func (r statusResult) AppendJSON(dst []byte) ([]byte, error) {
	p, err := r.parts()
	if err != nil {
		return dst, err
	}
	return p.append(dst, r.UptimeMs, r.Connections, r.ActiveSessions, r.Sessions)
}

// statusParts are the bytes of a status answer that never change while the server
// runs, encoded once: head ends before the uptime's value, mid before the
// connection count's.
type statusParts struct {
	head, mid []byte
}

// parts encodes the members of r that the server fixes when it starts.
func (r statusResult) parts() (statusParts, error) {
	var p statusParts
	var errs [3]error
	p.head = append(p.head, `{"serverVersion":`...)
	p.head, errs[0] = jsontext.AppendQuote(p.head, r.ServerVersion)
	p.head = append(p.head, `,"protocolVersion":`...)
	p.head = strconv.AppendInt(p.head, int64(r.ProtocolVersion), 10)
	p.head = append(p.head, `,"pid":`...)
	p.head = strconv.AppendInt(p.head, int64(r.PID), 10)
	p.head = append(p.head, `,"uptimeMs":`...)
	p.mid = append(p.mid, `,"dataDir":`...)
	p.mid, errs[1] = jsontext.AppendQuote(p.mid, r.DataDir)
	p.mid = append(p.mid, `,"endpoint":`...)
	p.mid, errs[2] = jsontext.AppendQuote(p.mid, r.Endpoint)
	p.mid = append(p.mid, `,"connections":`...)
	return p, errors.Join(errs[:]...)
}

// append encodes a status answer with the given changing members.
func (p *statusParts) append(dst []byte, uptimeMs int64, connections, active int, sessions []session.Info) ([]byte, error) {
	dst = append(dst, p.head...)
	dst = strconv.AppendInt(dst, uptimeMs, 10)
	dst = append(dst, p.mid...)
	dst = strconv.AppendInt(dst, int64(connections), 10)
	dst = append(dst, `,"activeSessions":`...)
	dst = strconv.AppendInt(dst, int64(active), 10)
	dst = append(dst, `,"sessions":[`...)
	for i, s := range sessions {
		if i > 0 {
			dst = append(dst, ',')
		}
		var errs [3]error
		dst = append(dst, `{"sessionId":`...)
		dst, errs[0] = jsontext.AppendQuote(dst, s.SessionID)
		dst = append(dst, `,"agentAlias":`...)
		dst, errs[1] = jsontext.AppendQuote(dst, s.AgentAlias)
		dst = append(dst, `,"state":`...)
		if dst, errs[2] = jsontext.AppendQuote(dst, s.State); errs != [3]error{} {
			return dst, errors.Join(errs[:]...)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...), nil
}

// statusCache holds a server's statusParts, encoded at its first status call.
type statusCache struct {
	once  sync.Once
	parts statusParts
	err   error
}

func (c *statusCache) get(r statusResult) (*statusParts, error) {
	c.once.Do(func() { c.parts, c.err = r.parts() })
	return &c.parts, c.err
}
