//go:build unix

package web_test

import (
	"bufio"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"
)

// p50 is the median of ds in microseconds.
func p50(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Nanoseconds()) / 1e3
}

// BenchmarkStatusRoundTrip measures what the bridge adds to a status round trip:
// the same request on a local connection of the daemon's, and over a tab's
// WebSocket through zeroclaw web (docs/BENCHMARKS.md, "The web client").
func BenchmarkStatusRoundTrip(b *testing.B) {
	s := newStack(b, "")
	b.Run("socket", func(b *testing.B) {
		nc, err := net.Dial("unix", s.sock)
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		r := bufio.NewReader(nc)
		send := func(id int, method string) {
			nc.Write([]byte(`{"jsonrpc":"2.0","method":"` + method + `","params":{},"id":` + strconv.Itoa(id) + "}\n"))
			if _, err := r.ReadBytes('\n'); err != nil {
				b.Fatal(err)
			}
		}
		send(0, "initialize")
		var ds []time.Duration
		for i := 1; b.Loop(); i++ {
			start := time.Now()
			send(i, "status")
			ds = append(ds, time.Since(start))
		}
		b.ReportMetric(p50(ds), "p50-µs")
	})
	b.Run("bridge", func(b *testing.B) {
		tb := s.openTab()
		var ds []time.Duration
		for b.Loop() {
			start := time.Now()
			tb.call("status", "{}")
			ds = append(ds, time.Since(start))
		}
		b.ReportMetric(p50(ds), "p50-µs")
	})
}
