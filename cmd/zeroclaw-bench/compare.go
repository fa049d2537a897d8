//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// measureAgainstEcho times the daemon's starts, then, on a daemon of its own, its
// idle connections and the status figures against the echo server.
func measureAgainstEcho(o options, maxConns int, r *report, log io.Writer) error {
	fmt.Fprintf(log, "timing %d daemon starts …\n", o.Starts)
	if err := measureStartup(o, maxConns, &r.Startup); err != nil {
		return err
	}

	fmt.Fprintln(log, "starting the daemon under test …")
	d, err := startDaemon(o.Zeroclaw, maxConns)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			d.kill()
		}
	}()

	// Idle connections first, while the daemon's heap is fresh: memory the later
	// load freed would otherwise be reused and hide the connections' cost.
	fmt.Fprintf(log, "opening %d idle connections …\n", o.IdleConns)
	if err := measureIdle(d, o, &r.Idle); err != nil {
		return err
	}

	if err := compareWithEcho(d, o, r, log); err != nil {
		return err
	}
	stopped = true
	if err := d.stop(); err != nil {
		return err
	}
	return nil
}

// compareWithEcho starts the echo baseline and measures the status round trip and
// the pipelined throughput of the daemon and of the echo server, alternating them.
func compareWithEcho(d *daemon, o options, r *report, log io.Writer) error {
	statusResult, initResult, err := sampleResults(d.socket)
	if err != nil {
		return err
	}
	echo, err := startBaseline(o.EchoInProcess, &answers{Results: map[string][]byte{"status": statusResult, "initialize": initResult}})
	if err != nil {
		return err
	}
	echoStopped := false
	defer func() {
		if !echoStopped {
			echo.stop()
		}
	}()
	r.Baseline = "echo server in a child process"
	if o.EchoInProcess {
		r.Baseline = "echo server in the client's process"
	}
	r.Latency.ResponseBytes = len(resultPrefix) + len(statusResult) + len(`,"id":1}`) + 1

	fmt.Fprintf(log, "status latency: %d sequential calls per server …\n", o.Calls)
	lat, p50s, err := measureLatency([]string{d.socket, echo.addr}, o.Warmup, o.Calls, o.Rounds)
	if err != nil {
		return err
	}
	r.Latency.Calls = o.Calls
	r.Latency.Daemon, r.Latency.Echo = summarize(lat[0]), summarize(lat[1])
	var latRatios []float64
	for i := range p50s[0] {
		latRatios = append(latRatios, ratio(us(p50s[1][i]), us(p50s[0][i])))
	}
	r.Latency.RatioP50 = median(latRatios)

	// Like the latency, the pipelined runs alternate between the servers, in rounds
	// of at least half a second each.
	rounds := max(1, min(o.Rounds, int(o.Duration/(500*time.Millisecond))))
	fmt.Fprintf(log, "pipelined throughput: %d connections × %d in flight, %s per server in %d rounds …\n",
		o.Conns, o.Depth, o.Duration, rounds)
	r.Throughput.Conns, r.Throughput.Depth, r.Throughput.Seconds = o.Conns, o.Depth, o.Duration.Seconds()
	var td, te throughput
	var ratios []float64
	for range rounds {
		t, err := measureThroughput(d.socket, d.cmd.Process.Pid, o.Conns, o.Depth, o.Duration/time.Duration(rounds))
		if err != nil {
			return fmt.Errorf("daemon: %w", err)
		}
		td = td.add(t)
		u, err := measureThroughput(echo.addr, echo.pid, o.Conns, o.Depth, o.Duration/time.Duration(rounds))
		if err != nil {
			return fmt.Errorf("echo: %w", err)
		}
		te = te.add(u)
		ratios = append(ratios, ratio(t.perSecond(), u.perSecond()))
	}
	r.Throughput.Daemon, r.Throughput.Echo = td.perSecond(), te.perSecond()
	r.Throughput.DaemonCPUus, r.Throughput.EchoCPUus = td.cpuPerRequest(), te.cpuPerRequest()
	r.Throughput.Ratio = median(ratios)

	echoStopped = true
	return echo.stop()
}

// baseline is the running echo server.
type baseline struct {
	addr string
	pid  int // of its process; 0 when it runs in this one
	stop func() error
}

// startBaseline starts the echo server, in a child process or in this one.
func startBaseline(inProcess bool, a *answers) (baseline, error) {
	if !inProcess {
		p, err := startEchoProcess(a)
		if err != nil {
			return baseline{}, err
		}
		return baseline{addr: p.socket, pid: p.cmd.Process.Pid, stop: p.stop}, nil
	}
	dir, err := os.MkdirTemp("/tmp", "zcb")
	if err != nil {
		return baseline{}, err
	}
	e, err := startEcho(filepath.Join(dir, "echo.sock"), a)
	if err != nil {
		os.RemoveAll(dir)
		return baseline{}, err
	}
	return baseline{addr: e.ln.Addr().String(), stop: func() error {
		e.close()
		return os.RemoveAll(dir)
	}}, nil
}
