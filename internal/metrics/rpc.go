package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// The RPC families, zeroclaw_rpc_requests_total{method,outcome} and
// zeroclaw_rpc_duration_seconds{method}, are counted on the daemon's hottest path
// (pipelined status answers in about a microsecond): not in client_golang's
// vectors, whose shared atomics every core would contend for, but in shards, one
// per connection in turn, summed at scrape (docs/BENCHMARKS.md, "Metrics cost").

// rpcBounds are the upper bounds of the duration buckets, in nanoseconds:
// 100 µs × 4^i, from 100 µs to 26 s.
var rpcBounds = func() [10]int64 {
	var b [10]int64
	v := int64(100 * time.Microsecond)
	for i := range b {
		b[i] = v
		v *= 4
	}
	return b
}()

// Shards is how many shards each method's figures are split in.
const Shards = 16

// Method is the figures of one JSON-RPC method, resolved once when the method
// table is built. A nil *Method records nothing; Done is safe for concurrent use.
type Method struct {
	name   string
	shards [Shards]methodShard

	mu       sync.Mutex
	outcomes map[string]uint64 // the error outcomes, rare: under mu
}

// methodShard is one shard's counts: the calls by bucket (the last one past every
// bound), the ok ones, and the nanoseconds they took; two cache lines, so that two
// shards never share one.
type methodShard struct {
	buckets [len(rpcBounds) + 1]atomic.Uint64
	ok      atomic.Uint64
	sumNs   atomic.Uint64
	_       [128 - (len(rpcBounds)+3)*8]byte
}

// Method returns the figures of method name; name is a method of the table,
// never what a client sent (unknown methods share "unknown").
func (m *Metrics) Method(name string) *Method {
	if m == nil {
		return nil
	}
	r := &Method{name: name, outcomes: map[string]uint64{}}
	m.rpc.mu.Lock()
	m.rpc.methods = append(m.rpc.methods, r)
	m.rpc.mu.Unlock()
	return r
}

// OutcomeOK is the outcome of a call answered with a result.
const OutcomeOK = "ok"

// outcomes names the daemon's error codes (docs/protocol.md, "Error codes"); any
// other code is "error".
var outcomes = map[int64]string{
	jsonrpc.CodeParseError:       "parse_error",
	jsonrpc.CodeInvalidRequest:   "invalid_request",
	jsonrpc.CodeMethodNotFound:   "method_not_found",
	jsonrpc.CodeInvalidParams:    "invalid_params",
	jsonrpc.CodeInternalError:    "internal_error",
	protocol.CodeSessionNotFound: "session_not_found",
	protocol.CodeSessionLimit:    "session_limit",
	protocol.CodeSessionBusy:     "session_busy",
	protocol.CodeConnectionLimit: "connection_limit",
	protocol.CodeUnauthenticated: "unauthenticated",
	protocol.CodeVersionMismatch: "version_mismatch",
	protocol.CodeForbidden:       "forbidden",
}

// SampleEvery is how often a call of a method served inline (answered at once by
// the connection's reader: status and the like) is timed: one in SampleEvery. A
// clock read costs as much as a tenth of such a call; the counts stay exact.
const SampleEvery = 8

// Done records a call answered with the error code code (0: a result), in shard
// (any number: the connection's, say). start is when it started, or the zero
// time for a call counted but not timed (one of SampleEvery's others).
func (r *Method) Done(shard uint32, start time.Time, code int64) {
	if r == nil {
		return
	}
	s := &r.shards[shard%Shards]
	if !start.IsZero() {
		d := int64(time.Since(start))
		i := 0
		for i < len(rpcBounds) && d > rpcBounds[i] {
			i++
		}
		s.buckets[i].Add(1)
		s.sumNs.Add(uint64(d))
	}
	if code == 0 {
		s.ok.Add(1)
		return
	}
	outcome, known := outcomes[code]
	if !known {
		outcome = "error"
	}
	r.mu.Lock()
	r.outcomes[outcome]++
	r.mu.Unlock()
}

var (
	rpcRequestsDesc = prometheus.NewDesc("zeroclaw_rpc_requests_total",
		"JSON-RPC requests answered, by method and outcome.", []string{"method", "outcome"}, nil)
	rpcDurationDesc = prometheus.NewDesc("zeroclaw_rpc_duration_seconds",
		"JSON-RPC requests, by method, from dispatch to answer.", []string{"method"}, nil)
)

// rpcCollector sums every method's shards at scrape.
type rpcCollector struct {
	mu      sync.Mutex
	methods []*Method
}

func (c *rpcCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rpcRequestsDesc
	ch <- rpcDurationDesc
}

func (c *rpcCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	methods := append([]*Method(nil), c.methods...)
	c.mu.Unlock()
	for _, r := range methods {
		var counts [len(rpcBounds) + 1]uint64
		var ok, sumNs uint64
		for i := range r.shards {
			s := &r.shards[i]
			for b := range counts {
				counts[b] += s.buckets[b].Load()
			}
			ok += s.ok.Load()
			sumNs += s.sumNs.Load()
		}
		// The count is the buckets' sum, so the exposition is consistent whatever
		// calls end during the scrape.
		var total uint64
		cumulative := make(map[float64]uint64, len(rpcBounds))
		for b, bound := range rpcBounds {
			total += counts[b]
			cumulative[time.Duration(bound).Seconds()] = total
		}
		total += counts[len(rpcBounds)]
		ch <- prometheus.MustNewConstHistogram(rpcDurationDesc, total, time.Duration(sumNs).Seconds(), cumulative, r.name)
		ch <- prometheus.MustNewConstMetric(rpcRequestsDesc, prometheus.CounterValue, float64(ok), r.name, OutcomeOK)
		r.mu.Lock()
		for outcome, n := range r.outcomes {
			ch <- prometheus.MustNewConstMetric(rpcRequestsDesc, prometheus.CounterValue, float64(n), r.name, outcome)
		}
		r.mu.Unlock()
	}
}
