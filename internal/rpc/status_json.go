package rpc

import (
	"encoding/json/jsontext"
	"errors"
	"strconv"
)

// AppendJSON encodes the status result by hand (jsonrpc.Appender): status is the
// call a client polls and pipelines, and reflection was most of its cost. The
// bytes are exactly what encoding/json/v2 writes for the struct's tags
// (TestStatusEncodingMatchesEncodingJSON).
func (r statusResult) AppendJSON(dst []byte) ([]byte, error) {
	var errs [5]error
	dst = append(dst, `{"serverVersion":`...)
	dst, errs[0] = jsontext.AppendQuote(dst, r.ServerVersion)
	dst = append(dst, `,"protocolVersion":`...)
	dst = strconv.AppendInt(dst, int64(r.ProtocolVersion), 10)
	dst = append(dst, `,"pid":`...)
	dst = strconv.AppendInt(dst, int64(r.PID), 10)
	dst = append(dst, `,"uptimeMs":`...)
	dst = strconv.AppendInt(dst, r.UptimeMs, 10)
	dst = append(dst, `,"dataDir":`...)
	dst, errs[1] = jsontext.AppendQuote(dst, r.DataDir)
	dst = append(dst, `,"endpoint":`...)
	dst, errs[2] = jsontext.AppendQuote(dst, r.Endpoint)
	dst = append(dst, `,"connections":`...)
	dst = strconv.AppendInt(dst, int64(r.Connections), 10)
	dst = append(dst, `,"activeSessions":`...)
	dst = strconv.AppendInt(dst, int64(r.ActiveSessions), 10)
	dst = append(dst, `,"sessions":[`...)
	for i, s := range r.Sessions {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"sessionId":`...)
		dst, errs[3] = jsontext.AppendQuote(dst, s.SessionID)
		dst = append(dst, `,"agentAlias":`...)
		dst, errs[4] = jsontext.AppendQuote(dst, s.AgentAlias)
		dst = append(dst, `,"state":`...)
		var err error
		if dst, err = jsontext.AppendQuote(dst, s.State); err != nil || errs[3] != nil || errs[4] != nil {
			return dst, errors.Join(err, errs[3], errs[4])
		}
		dst = append(dst, '}')
	}
	dst = append(dst, "]}"...)
	return dst, errors.Join(errs[:3]...)
}
