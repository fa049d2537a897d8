//go:build linux

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// zeroclaw-bench metrics-cost measures what the metrics cost the daemon's hottest
// path (docs/BENCHMARKS.md, "Metrics cost"): pipelined status, on a daemon without
// them (--baseline, a build from before they existed) and on this one with its
// [metrics] listen listener scraped every second, in alternating rounds, the order
// of each pair swapped every round so that a drift of the machine falls on both.

type costReport struct {
	Rounds   int       `json:"rounds"`
	Round    float64   `json:"round_s"`
	Conns    int       `json:"conns"`
	Depth    int       `json:"depth"`
	Off      []float64 `json:"off_per_s"` // each round, the baseline
	On       []float64 `json:"on_per_s"`  // each round, metrics on and scraped
	Ratios   []float64 `json:"ratios"`    // on / off, each round
	Ratio    float64   `json:"ratio"`     // their median
	OffCPUus float64   `json:"off_cpu_us_per_request"`
	OnCPUus  float64   `json:"on_cpu_us_per_request"`
	Scrapes  int       `json:"scrapes"`
	Pass     bool      `json:"pass"` // Ratio ≥ 0.97
}

func costMain(args []string) int {
	fs := flag.NewFlagSet("metrics-cost", flag.ContinueOnError)
	baseline := fs.String("baseline", "", "a zeroclaw binary without metrics (required; e.g. built from main before issue 52)")
	bin := fs.String("zeroclaw", "", "the zeroclaw binary with metrics (default: go build ./cmd/zeroclaw)")
	rounds := fs.Int("rounds", 20, "rounds per daemon")
	round := fs.Duration("round", time.Second, "length of one round")
	conns := fs.Int("conns", 8, "pipelined connections")
	depth := fs.Int("depth", 64, "requests in flight per connection")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *baseline == "" || *rounds < 1 || *round < 100*time.Millisecond {
		fmt.Fprintln(os.Stderr, "zeroclaw-bench metrics-cost: --baseline is required; --rounds ≥ 1, --round ≥ 100ms")
		return 2
	}
	if *bin == "" {
		dir, err := os.MkdirTemp("", "zccostbin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if *bin, err = buildDaemon(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	r, err := measureCost(*baseline, *bin, *rounds, *round, *conns, *depth, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zeroclaw-bench metrics-cost:", err)
		return 1
	}
	if *asJSON {
		out, _ := json.MarshalIndent(r, "", "  ")
		os.Stdout.Write(append(out, '\n'))
	}
	fmt.Fprintf(os.Stderr, "pipelined status, %d rounds of %s: off %.0f/s, on %.0f/s (medians); on/off %.4f (median of the rounds' ratios); CPU %.2f vs %.2f µs/request; %d scrapes\n",
		r.Rounds, *round, median(r.Off), median(r.On), r.Ratio, r.OffCPUus, r.OnCPUus, r.Scrapes)
	if !r.Pass {
		fmt.Fprintln(os.Stderr, "FAIL: metrics on costs more than 3%")
		return 1
	}
	return 0
}

var servingMetrics = regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)

func measureCost(baseline, bin string, rounds int, round time.Duration, conns, depth int, log io.Writer) (*costReport, error) {
	off, err := startDaemon(baseline, 4*conns)
	if err != nil {
		return nil, fmt.Errorf("the baseline: %w", err)
	}
	defer off.kill()
	on, err := startDaemon(bin, 4*conns, "\n[metrics]\nlisten = \"127.0.0.1:0\"\n")
	if err != nil {
		return nil, fmt.Errorf("the daemon with metrics: %w", err)
	}
	defer on.kill()
	var addr string
	for deadline := time.Now().Add(readyTimeout); addr == ""; {
		b, _ := os.ReadFile(filepath.Join(on.dir, "daemon.log"))
		if m := servingMetrics.FindSubmatch(b); m != nil {
			addr = string(m[1])
		} else if time.Now().After(deadline) {
			return nil, fmt.Errorf("no \"serving metrics\" line in the log:\n%s", on.logTail())
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	r := &costReport{Rounds: rounds, Round: round.Seconds(), Conns: conns, Depth: depth}
	fmt.Fprintf(log, "metrics cost: %d rounds of %s per daemon, %d connections × %d in flight …\n", rounds, round, conns, depth)
	var toff, ton throughput
	// Warm both up, unmeasured.
	for _, d := range []*daemon{off, on} {
		if _, err := measureThroughput(d.socket, 0, conns, depth, round/2); err != nil {
			return nil, err
		}
	}
	for i := range rounds {
		var a, b throughput
		measureOn := func() error {
			ctx, stop := context.WithCancel(context.Background())
			scraped := make(chan int)
			go func() { scraped <- scrapeEvery(ctx, "http://"+addr+"/metrics", time.Second) }()
			t, err := measureThroughput(on.socket, on.cmd.Process.Pid, conns, depth, round)
			stop()
			r.Scrapes += <-scraped
			b = t
			return err
		}
		measureOff := func() (err error) {
			a, err = measureThroughput(off.socket, off.cmd.Process.Pid, conns, depth, round)
			return err
		}
		first, second := measureOff, measureOn
		if i%2 == 1 {
			first, second = measureOn, measureOff
		}
		if err := first(); err != nil {
			return nil, err
		}
		if err := second(); err != nil {
			return nil, err
		}
		toff, ton = toff.add(a), ton.add(b)
		r.Off = append(r.Off, a.perSecond())
		r.On = append(r.On, b.perSecond())
		r.Ratios = append(r.Ratios, ratio(b.perSecond(), a.perSecond()))
	}
	r.Ratio = median(r.Ratios)
	r.OffCPUus, r.OnCPUus = toff.cpuPerRequest(), ton.cpuPerRequest()
	r.Pass = r.Ratio >= 0.97
	return r, nil
}

// scrapeEvery GETs url at once and then every period until ctx ends, and
// returns how many scrapes answered 200.
func scrapeEvery(ctx context.Context, url string, period time.Duration) int {
	n := 0
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				n++
			}
		}
		if !pause(ctx, period) {
			return n
		}
	}
}
