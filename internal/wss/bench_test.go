package wss_test

import (
	"context"
	"net"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/rpc"
)

// BenchmarkStatusRoundTrip compares one status call over WSS with the same call over
// a Unix socket, on the same server, through the same Go client. It reports the p50
// of each and their ratio (target: WSS p50 at most 3x the Unix socket's).
func BenchmarkStatusRoundTrip(b *testing.B) {
	d := startDaemon(b, daemonOptions{})
	dir, err := os.MkdirTemp("", "zcwb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", dir+"/s.sock")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go d.srv.ServeStream(nc, rpc.Peer{Label: "bench", UID: os.Getuid(), PID: os.Getpid()})
		}
	}()
	b.Cleanup(func() { ln.Close(); <-done })

	ctx := context.Background()
	local, err := client.Dial(ctx, dir+"/s.sock")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { local.Close() })
	remote := d.dial(b, client.WithToken(d.token(b, "")))
	for _, c := range []*client.Client{local, remote} {
		if _, err := c.Initialize(ctx); err != nil {
			b.Fatal(err)
		}
	}
	p50 := func(c *client.Client, n int) time.Duration {
		lat := make([]time.Duration, n)
		for i := range lat {
			start := time.Now()
			if _, err := c.Status(ctx); err != nil {
				b.Fatal(err)
			}
			lat[i] = time.Since(start)
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		return lat[n/2]
	}
	p50(local, 200) // warm up both
	p50(remote, 200)
	b.ResetTimer()
	var unix, wss time.Duration
	for b.Loop() {
		unix += p50(local, 500)
		wss += p50(remote, 500)
	}
	b.ReportMetric(float64(unix.Microseconds())/float64(b.N), "unix-p50-µs")
	b.ReportMetric(float64(wss.Microseconds())/float64(b.N), "wss-p50-µs")
	b.ReportMetric(float64(wss)/float64(unix), "wss/unix")
}
