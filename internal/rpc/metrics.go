package rpc

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"runtime"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/metrics"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// The metrics of docs/protocol.md, "Metrics and traces": every call of the method
// table is counted by method and outcome and timed at the gate (Handle), each
// connection by transport (lagged readers are counted by the feed, at the detach:
// session.Options.OnLagged); metrics/scrape renders them.

func (s *Server) metricsMethods() []methodRow {
	return []methodRow{
		{name: "metrics/scrape", grant: auth.SystemRead, handler: s.metricsScrape},
	}
}

type scrapeResult struct {
	ContentType string `json:"contentType"`
	Text        string `json:"text"`
}

// metricsScrape answers what the [metrics] listen listener serves at /metrics.
// Params are ignored.
func (s *Server) metricsScrape(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	if s.cfg.Metrics == nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "metrics are not collected by this server")
	}
	ct, text := s.cfg.Metrics.Scrape()
	return scrapeResult{ContentType: ct, Text: text}, nil
}

// clock is when a call of row starts, read for every call but those of inline
// methods, one in metrics.SampleEvery of which is timed; the zero time for a call
// that is counted only.
func (c *connState) clock(row *methodRow) time.Time {
	if row.onReader() && c.inlineCalls.Add(1)%metrics.SampleEvery != 0 {
		return time.Time{}
	}
	return time.Now()
}

// wireCode is the JSON-RPC error code err is answered with (0: none).
func wireCode(err error) int64 {
	if err == nil {
		return 0
	}
	if je, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return je.Code
	}
	return jsonrpc.CodeInternalError
}

// transportOf is the transport label of a connection: "wss", else the local
// endpoint's kind.
func transportOf(p Peer) string {
	switch {
	case p.Remote:
		return "wss"
	case runtime.GOOS == "windows":
		return "pipe"
	}
	return "unix"
}
