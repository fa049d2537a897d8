package metrics

import (
	"os"
	"slices"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	activeSessionsDesc = prometheus.NewDesc("zeroclaw_active_sessions",
		"Live sessions (in memory, idle or running).", nil, nil)
	mcpServersDesc = prometheus.NewDesc("zeroclaw_mcp_servers",
		"Configured MCP servers, by state (stopped, starting, running, failed).", []string{"state"}, nil)
	storeBytesDesc = prometheus.NewDesc("zeroclaw_store_bytes",
		"Size of the store's files, by file (db, wal).", []string{"file"}, nil)
)

// mcpStates are always reported, 0 when no server is in them, so that an alert
// on failed servers has a series to read.
var mcpStates = []string{"stopped", "starting", "running", "failed"}

// gauges reads its Sources at scrape time: nothing here is kept up to date by
// the daemon, and nothing takes a session's lock.
type gauges struct{ src Sources }

func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- activeSessionsDesc
	ch <- mcpServersDesc
	ch <- storeBytesDesc
}

func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	if g.src.ActiveSessions != nil {
		ch <- prometheus.MustNewConstMetric(activeSessionsDesc, prometheus.GaugeValue, float64(g.src.ActiveSessions()))
	}
	if g.src.MCPServers != nil {
		counts := g.src.MCPServers()
		states := append([]string(nil), mcpStates...)
		for s := range counts {
			if !slices.Contains(states, s) {
				states = append(states, s)
			}
		}
		sort.Strings(states)
		for _, s := range states {
			ch <- prometheus.MustNewConstMetric(mcpServersDesc, prometheus.GaugeValue, float64(counts[s]), s)
		}
	}
	for label, path := range g.src.StoreFiles {
		var size int64 // a WAL that is not there (checkpointed away) is 0 bytes
		if fi, err := os.Stat(path); err == nil {
			size = fi.Size()
		}
		ch <- prometheus.MustNewConstMetric(storeBytesDesc, prometheus.GaugeValue, float64(size), label)
	}
}
