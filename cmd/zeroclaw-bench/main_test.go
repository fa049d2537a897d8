//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// zeroclawBin is the daemon binary TestMain builds.
var zeroclawBin string

func TestMain(m *testing.M) {
	if echoChild() { // the echo baseline runs in a child process of this binary
		os.Exit(serveEchoChild())
	}
	dir, err := os.MkdirTemp("", "zeroclaw-bench-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	zeroclawBin = filepath.Join(dir, "zeroclaw")
	build := exec.Command("go", "build", "-o", zeroclawBin, "github.com/zeroclaw-labs/zeroclaw-go/cmd/zeroclaw")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building zeroclaw:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestQuickRunProducesSaneFigures runs every measurement in quick mode against the
// real binary. It checks that the figures exist and are plausible, never how good
// they are: the machine is shared, and the targets are for docs/BENCHMARKS.md.
func TestQuickRunProducesSaneFigures(t *testing.T) {
	o := defaultOptions().quick()
	o.Zeroclaw = zeroclawBin
	o.Calls, o.Warmup, o.IdleConns, o.Starts = 500, 50, 100, 3
	o.Duration = 300 * time.Millisecond
	r, err := run(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !r.DaemonExitedCleanly {
		t.Error("the daemon did not exit 0 after SIGTERM")
	}
	for name, p := range map[string]percentiles{"daemon": r.Latency.Daemon, "echo": r.Latency.Echo} {
		if !(0 < p.P50us && p.P50us <= p.P90us && p.P90us <= p.P99us) {
			t.Errorf("%s latency percentiles %+v are not positive and ordered", name, p)
		}
	}
	if r.Latency.RatioP50 <= 0 {
		t.Errorf("latency ratio %v", r.Latency.RatioP50)
	}
	if r.Throughput.Daemon <= 0 || r.Throughput.Echo <= 0 || r.Throughput.Ratio <= 0 {
		t.Errorf("throughput %+v", r.Throughput)
	}
	if r.Idle.RSSBeforeKiB <= 0 || r.Idle.RSSAfterKiB <= r.Idle.RSSBeforeKiB || r.Idle.PerConnKiB <= 0 {
		t.Errorf("idle connections %+v: the daemon's RSS should grow with 100 connections", r.Idle)
	}
	if len(r.Startup.ReadyMs) != o.Starts || r.Startup.ReadyMsMedian <= 0 || r.Startup.IdleRSSMB <= 0 {
		t.Errorf("startup %+v", r.Startup)
	}
	if len(r.Targets) != 5 {
		t.Errorf("%d targets judged, want 5", len(r.Targets))
	}

	var table strings.Builder
	r.print(&table)
	for _, want := range []string{"p50 (µs)", "requests/s", "per idle initialized connection", "exec to accepting", "exit 0 after SIGTERM"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
}

// TestEchoAnswersWithTheRequestID drives the echo server with the tool's client:
// the baseline must answer like the daemon, id last, or the comparison is void.
func TestEchoAnswersWithTheRequestID(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "zcb")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	e, err := startEcho(filepath.Join(dir, "echo.sock"), []byte(`{"pid":1}`), []byte(`{"protocolVersion":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	c, err := dial(e.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	c.nc.SetDeadline(time.Now().Add(ioTimeout))
	res, err := c.call("initialize", `{"protocolVersion":1}`)
	if err != nil || string(res) != `{"protocolVersion":1}` {
		t.Fatalf("initialize: %q, %v", res, err)
	}
	for range 3 {
		res, err := c.call("status", "")
		if err != nil || string(res) != `{"pid":1}` {
			t.Fatalf("status %d: %q, %v", c.id, res, err)
		}
	}
}

func TestRejectsOutOfRangeOptions(t *testing.T) {
	o := defaultOptions()
	o.Conns = 0
	if o.validate() == nil {
		t.Error("0 connections accepted")
	}
	if err := defaultOptions().validate(); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
	if err := defaultOptions().quick().validate(); err != nil {
		t.Errorf("quick refused: %v", err)
	}
}

func TestPercentilesAndMedian(t *testing.T) {
	l := latencies{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if p := l.percentile(0.5); p != 6 && p != 5 {
		t.Errorf("p50 of 1..10 = %d", p)
	}
	if p := l.percentile(0.99); p != 10 {
		t.Errorf("p99 of 1..10 = %d", p)
	}
	if m := median([]float64{5, 1, 3}); m != 3 {
		t.Errorf("median = %v", m)
	}
	if m := medianInt([]int64{4, 1, 3, 2}); m != 2 {
		t.Errorf("median = %v", m)
	}
}
