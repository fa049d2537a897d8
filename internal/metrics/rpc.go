package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Method is the collectors of one JSON-RPC method, resolved once when the method
// table is built, so that a call costs two atomic adds and a histogram
// observation, not a label lookup (docs/BENCHMARKS.md, "Metrics cost"). A nil
// *Method records nothing.
type Method struct {
	m        *Metrics
	name     string
	ok       prometheus.Counter
	duration prometheus.Observer
}

// Method returns the collectors of method name; name is a method of the table,
// never what a client sent (unknown methods share "unknown").
func (m *Metrics) Method(name string) *Method {
	if m == nil {
		return nil
	}
	return &Method{
		m:        m,
		name:     name,
		ok:       m.rpcRequests.WithLabelValues(name, OutcomeOK),
		duration: m.rpcDuration.WithLabelValues(name),
	}
}

// Outcomes of a request (the outcome label).
const (
	OutcomeOK = "ok"
)

// outcomes names the daemon's error codes (docs/protocol.md, "Error codes"); any
// other code is "error".
var outcomes = map[int64]string{
	-32700: "parse_error",
	-32600: "invalid_request",
	-32601: "method_not_found",
	-32602: "invalid_params",
	-32603: "internal_error",
	-32000: "session_not_found",
	-32001: "session_limit",
	-32002: "session_busy",
	-32004: "connection_limit",
	-32010: "unauthenticated",
	-32011: "version_mismatch",
	-32012: "forbidden",
}

// Done records a call that started at start and was answered with the error code
// code (0: a result).
func (r *Method) Done(start time.Time, code int64) {
	if r == nil {
		return
	}
	r.duration.Observe(time.Since(start).Seconds())
	if code == 0 {
		r.ok.Inc()
		return
	}
	outcome, known := outcomes[code]
	if !known {
		outcome = "error"
	}
	r.m.rpcRequests.WithLabelValues(r.name, outcome).Inc()
}
