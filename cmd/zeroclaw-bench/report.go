//go:build linux

package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// report is everything one run measured; --json prints it as is.
type report struct {
	Machine             machine            `json:"machine"`
	Options             options            `json:"options"`
	Baseline            string             `json:"baseline"`
	Latency             latencyReport      `json:"latency"`
	Throughput          throughputReport   `json:"throughput"`
	Idle                idleReport         `json:"idle_connections"`
	Startup             startupReport      `json:"startup"`
	IdleSessions        idleSessionsReport `json:"idle_sessions"`
	SessionNew          sessionNewReport   `json:"session_new"`
	Stream              streamReport       `json:"session_update_stream"`
	StreamBig           streamReport       `json:"session_update_stream_big"`
	Upload              uploadReport       `json:"upload"`
	History             historyReport      `json:"history"`
	Watchers            watchersReport     `json:"watchers"`
	DaemonExitedCleanly bool               `json:"daemon_exited_cleanly"` // exit 0 after SIGTERM
	Targets             []target           `json:"targets"`
}

type machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	GoVersion string `json:"go_version"` // of this tool; build the daemon with the same
	OS        string `json:"os"`
	Kernel    string `json:"kernel"`
	NoFile    uint64 `json:"nofile"`
	// The 1, 5 and 15 minute load averages before and after the run.
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
	// Wake is how long a goroutine waits for an idle CPU, before the run
	// (wakeLatency); at most 3 ms is measured.
	Wake percentiles `json:"wake"`
}

type percentiles struct {
	P50us float64 `json:"p50_us"`
	P90us float64 `json:"p90_us"`
	P99us float64 `json:"p99_us"`
}

type latencyReport struct {
	Calls         int         `json:"calls"`
	ResponseBytes int         `json:"response_bytes"` // one status answer line, both servers
	Daemon        percentiles `json:"daemon"`
	Echo          percentiles `json:"echo"`
	// RatioP50 is the median over the rounds of echo p50 / daemon p50: the daemon's
	// speed as a fraction of the echo server's.
	RatioP50 float64 `json:"ratio_p50"`
}

type throughputReport struct {
	Conns   int     `json:"conns"`
	Depth   int     `json:"depth"`
	Seconds float64 `json:"seconds"`
	Daemon  float64 `json:"daemon_rps"`
	Echo    float64 `json:"echo_rps"`
	Ratio   float64 `json:"ratio"` // median of the per-round ratios daemon / echo
	// Server CPU time (user + system) per answered request, in µs; 0 when unknown.
	DaemonCPUus float64 `json:"daemon_cpu_us_per_request"`
	EchoCPUus   float64 `json:"echo_cpu_us_per_request"`
}

type idleReport struct {
	Conns        int     `json:"conns"`
	RSSBeforeKiB int64   `json:"rss_before_kib"`
	RSSAfterKiB  int64   `json:"rss_after_kib"`
	PerConnKiB   float64 `json:"per_conn_kib"`
}

type startupReport struct {
	Starts        int       `json:"starts"`
	ReadyMs       []float64 `json:"ready_ms"` // exec to accepting a connect, each start
	ReadyMsMedian float64   `json:"ready_ms_median"`
	IdleRSSKiB    []int64   `json:"idle_rss_kib"` // each start, after the settle pause
	IdleRSSMB     float64   `json:"idle_rss_mb"`  // median, in 10^6 bytes
}

// idleSessionsReport is the memory of idle sessions on a fresh daemon.
type idleSessionsReport struct {
	Sessions      int     `json:"sessions"`
	RSSFreshKiB   int64   `json:"rss_fresh_kib"`  // one initialized connection, no session yet
	RSSBeforeKiB  int64   `json:"rss_before_kib"` // after one session was created and closed
	RSSAfterKiB   int64   `json:"rss_after_kib"`  // with the idle sessions
	PerSessionKiB float64 `json:"per_session_kib"`
}

// sessionNewReport is the latency of session/new, sequential calls on one connection.
type sessionNewReport struct {
	Calls   int         `json:"calls"`
	Latency percentiles `json:"latency"`
}

// streamReport is the rate of session/update notifications one client receives
// during echo turns.
type streamReport struct {
	PromptLines int       `json:"prompt_lines"`
	Words       int       `json:"words_per_line,omitempty"` // 0: 4
	Turns       int       `json:"turns"`
	Warmup      int       `json:"warmup"`     // rounds run before the counted ones, each server warming up
	Updates     []int     `json:"updates"`    // each turn
	TurnMs      []float64 `json:"turn_ms"`    // each turn, prompt written to answer read
	PerSecond   []float64 `json:"per_second"` // each turn
	// EchoPerSecond is the echo server's rate, replaying the daemon's bytes, in the
	// round of each turn; Ratio is the median of the per-round ratios daemon / echo.
	EchoPerSecond       []float64 `json:"echo_per_second"`
	EchoMedianPerSecond float64   `json:"echo_median_per_second"`
	Ratio               float64   `json:"ratio"`
	// MedianPerSecond is the median of PerSecond; TotalPerSecond is every update over
	// every turn's time.
	MedianPerSecond float64 `json:"median_per_second"`
	TotalUpdates    int     `json:"total_updates"`
	TotalSeconds    float64 `json:"total_seconds"`
	TotalPerSecond  float64 `json:"total_per_second"`
	// CPU time (user + system) per update of the daemon and of this client, in µs,
	// at /proc's 10 ms resolution.
	DaemonCPUus float64 `json:"daemon_cpu_us_per_update"`
	ClientCPUus float64 `json:"client_cpu_us_per_update"`
	// FirstUpdateMs is, each turn, the time from writing the prompt to reading its
	// first update: what durable before visible (docs/protocol.md,
	// "A daemon that runs for months") adds shows here.
	FirstUpdateMs       []float64 `json:"first_update_ms"`
	FirstUpdateMedianMs float64   `json:"first_update_median_ms"`
}

// target is one figure judged against its goal.
type target struct {
	Figure string  `json:"figure"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Op     string  `json:"op"` // "<=" or ">="
	Goal   float64 `json:"goal"`
	Met    bool    `json:"met"`
}

func (r *report) judge() []target {
	t := []target{
		{Figure: "status p50 speed, echo p50 / daemon p50", Value: r.Latency.RatioP50, Op: ">=", Goal: 0.8},
		{Figure: "pipelined requests/s, daemon / echo", Value: r.Throughput.Ratio, Op: ">=", Goal: 0.32},
		{Figure: "server CPU per pipelined request", Value: r.Throughput.DaemonCPUus, Unit: "µs", Op: "<=", Goal: 1},
		{Figure: "memory per idle initialized connection", Value: r.Idle.PerConnKiB, Unit: "KiB", Op: "<=", Goal: 12},
		{Figure: "idle RSS after start", Value: r.Startup.IdleRSSMB * 1e6 / (1 << 20), Unit: "MiB", Op: "<=", Goal: 20},
		{Figure: "exec to accepting a connect (median)", Value: r.Startup.ReadyMsMedian, Unit: "ms", Op: "<=", Goal: 50},
		{Figure: "session/update to one client, daemon / echo", Value: r.Stream.Ratio, Op: ">=", Goal: 0.35},
		{Figure: "10 MiB upload payload rate", Value: r.Upload.DaemonMedian, Unit: "MiB/s", Op: ">=", Goal: 400},
		{Figure: "10 MiB upload, daemon / echo", Value: r.Upload.Ratio, Op: ">=", Goal: 0.25},
		{Figure: "session/new p50", Value: r.SessionNew.Latency.P50us, Unit: "µs", Op: "<=", Goal: 200},
		{Figure: "memory per idle session", Value: r.IdleSessions.PerSessionKiB, Unit: "KiB", Op: "<=", Goal: 32},
		{Figure: "history: turn p50 after the turns / near turn 100", Value: r.History.Ratio, Op: "<=", Goal: 1.25},
		{Figure: "history: WAL after the turns", Value: float64(r.History.WALBytes) / (1 << 20), Unit: "MiB", Op: "<=", Goal: 8},
		{Figure: "history: data dir / its transcript and replay rows", Value: r.History.DataRatio, Op: "<=", Goal: 3},
	}
	if r.StreamBig.Turns > 0 {
		t = append(t, target{Figure: fmt.Sprintf("session/update of %d-line turns of %d words a line to one client, daemon / echo",
			r.StreamBig.PromptLines, r.StreamBig.Words), Value: r.StreamBig.Ratio, Op: ">=", Goal: 0.3})
	}
	if rs := r.Watchers.Rounds; len(rs) > 1 {
		one, most := rs[0], rs[len(rs)-1]
		t = append(t,
			target{Figure: fmt.Sprintf("watchers: RSS per watcher of %d", most.Watchers), Value: most.PerWatcherKiB, Unit: "KiB", Op: "<=", Goal: 16},
			target{Figure: fmt.Sprintf("watchers: CPU per update, %d / 1", most.Watchers), Value: ratio(most.CPUusPerUpdate, one.CPUusPerUpdate), Op: "<=", Goal: 1.5},
			target{Figure: "watchers lagged", Value: float64(lagged(rs)), Op: "<=", Goal: 0})
	}
	for i := range t {
		if t[i].Op == "<=" {
			t[i].Met = t[i].Value <= t[i].Goal
		} else {
			t[i].Met = t[i].Value >= t[i].Goal
		}
	}
	return t
}

func (r *report) print(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "zeroclaw-bench  %s\n", r.Options.Zeroclaw)
	fmt.Fprintf(w, "machine: %d CPUs (%s), %s, %s, kernel %s\n", m.CPUs, m.CPUModel, m.GoVersion, m.OS, m.Kernel)
	fmt.Fprintf(w, "load average: %s before, %s after\n", m.LoadBefore, m.LoadAfter)
	fmt.Fprintf(w, "waking an idle CPU (µs, at most %.0f measured): p50 %.0f, p90 %.0f, p99 %.0f\n",
		us(wakeBusy), m.Wake.P50us, m.Wake.P90us, m.Wake.P99us)
	fmt.Fprintf(w, "baseline: %s\n\n", r.Baseline)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "status round trip: 1 connection, %d sequential calls per server (%d-byte answers)\n", r.Latency.Calls, r.Latency.ResponseBytes)
	fmt.Fprintf(tw, "%s\tdaemon\techo\techo/daemon\t\n", label(""))
	for _, row := range []struct {
		name string
		d, e float64
	}{
		{"p50 (µs)", r.Latency.Daemon.P50us, r.Latency.Echo.P50us},
		{"p90 (µs)", r.Latency.Daemon.P90us, r.Latency.Echo.P90us},
		{"p99 (µs)", r.Latency.Daemon.P99us, r.Latency.Echo.P99us},
	} {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.2f\t\n", label(row.name), row.d, row.e, ratio(row.e, row.d))
	}
	tw.Flush()

	fmt.Fprintf(w, "\npipelined: %d connections × %d in flight, %.1f s per server\n", r.Throughput.Conns, r.Throughput.Depth, r.Throughput.Seconds)
	fmt.Fprintf(tw, "%s\tdaemon\techo\tdaemon/echo\t\n", label(""))
	fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2f\t\n", label("requests/s"), r.Throughput.Daemon, r.Throughput.Echo, r.Throughput.Ratio)
	if r.Throughput.EchoCPUus > 0 {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t\n", label("server CPU µs/request"), r.Throughput.DaemonCPUus, r.Throughput.EchoCPUus,
			ratio(r.Throughput.DaemonCPUus, r.Throughput.EchoCPUus))
	} else {
		fmt.Fprintf(tw, "%s\t%.2f\t-\t-\t\n", label("server CPU µs/request"), r.Throughput.DaemonCPUus)
	}
	tw.Flush()

	fmt.Fprintf(w, "\nidle connections: %d initialized; daemon VmRSS %d KiB before, %d KiB after\n",
		r.Idle.Conns, r.Idle.RSSBeforeKiB, r.Idle.RSSAfterKiB)
	fmt.Fprintf(w, "daemon starts: %d; exec to accepting (ms): %s; idle VmRSS (KiB): %v\n",
		r.Startup.Starts, formatFloats(r.Startup.ReadyMs), r.Startup.IdleRSSKiB)

	is := r.IdleSessions
	fmt.Fprintf(w, "idle sessions: %d on one connection; daemon VmRSS %d KiB fresh, %d KiB after one session created and closed, %d KiB with them\n",
		is.Sessions, is.RSSFreshKiB, is.RSSBeforeKiB, is.RSSAfterKiB)
	sn := r.SessionNew.Latency
	fmt.Fprintf(w, "session/new: %d sequential calls, each session closed after (untimed); p50 %.1f µs, p90 %.1f µs, p99 %.1f µs\n",
		r.SessionNew.Calls, sn.P50us, sn.P90us, sn.P99us)
	printStream(w, "session/update stream", r.Stream)
	if r.StreamBig.Turns > 0 {
		printStream(w, "session/update stream of big turns", r.StreamBig)
	}
	hs := r.History
	fmt.Fprintf(w, "history: %d turns of a 1-line echo prompt in one session; turn p50 %.2f ms near turn %d, %.2f ms at the end\n",
		hs.Turns, hs.EarlyP50, hs.EarlyAt, hs.LateP50)
	fmt.Fprintf(w, "  then %d rounds of a turn of it and one of a second session at turns %d to %d: p50 %.2f ms and %.2f ms (%.2f×)\n",
		hs.Rounds, hs.EarlyAt/2+1, hs.EarlyAt/2+hs.Rounds, hs.AltLongP50, hs.AltShortP50, hs.Ratio)
	fmt.Fprintf(w, "  after: sessions.db %d bytes, WAL %d bytes (%d after a 2 s pause), data dir %d bytes\n",
		hs.DBBytes, hs.WALBytes, hs.WALAfterPauseBytes, hs.DataBytes)
	fmt.Fprintf(w, "  stopped: data dir %d bytes, its transcript and replay rows %d bytes (%.2f×)\n", hs.StoppedDataBytes, hs.RowsBytes, hs.DataRatio)
	for _, m := range hs.Marks {
		fmt.Fprintf(w, "  at turn %5d: turn p50 %.2f ms, sessions.db %d bytes, WAL %d bytes\n", m.Turn, m.P50, m.DBBytes, m.WALBytes)
	}
	fmt.Fprintf(w, "watchers: one session's %d-line echo turn, every watcher reading at full speed\n", r.Watchers.PromptLines)
	for _, wr := range r.Watchers.Rounds {
		fmt.Fprintf(w, "  %3d watchers: %d updates, %d delivered, %d lagged, %.0f ms; daemon CPU %.2f µs/delivered update; VmRSS %d KiB idle, %d KiB peak: %.1f KiB per watcher",
			wr.Watchers, wr.Updates, wr.Delivered, wr.Lagged, wr.TurnMs, wr.CPUusPerUpdate, wr.RSSIdleKiB, wr.RSSPeakKiB, wr.PerWatcherKiB)
		if len(wr.GrowthsKiB) > 1 {
			fmt.Fprintf(w, " (the median of %d rounds, which grew %s KiB)", len(wr.GrowthsKiB), formatInts(wr.GrowthsKiB))
		}
		fmt.Fprintln(w)
	}
	up := r.Upload
	fmt.Fprintf(w, "uploads: %d rounds of %d bytes in 1 MiB chunks, MiB/s: daemon %s (median %.0f), echo %s (median %.0f); per-round daemon/echo median %.3f\n",
		up.Rounds, up.Bytes, formatFloats(up.DaemonMiBs), up.DaemonMedian, formatFloats(up.EchoMiBs), up.EchoMedian, up.Ratio)
	exit := "each exited 0 after SIGTERM"
	if !r.DaemonExitedCleanly {
		exit = "did NOT exit 0 after SIGTERM"
	}
	fmt.Fprintf(w, "daemons under test (load, sessions): %s\n\n", exit)

	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\ttarget\tresult")
	for _, t := range r.Targets {
		verdict := "met"
		if !t.Met {
			verdict = "NOT MET"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\n", t.Figure, withUnit(t.Value, t.Unit), t.Op, withUnit(t.Goal, t.Unit), verdict)
	}
	tw.Flush()
}

// label pads a row label, so that the right-aligned table keeps its labels left.
func label(s string) string { return fmt.Sprintf("%-22s", s) }

func withUnit(v float64, unit string) string {
	s := fmt.Sprintf("%.2f", v)
	if v >= 100 {
		s = fmt.Sprintf("%.0f", v)
	}
	if unit == "" {
		return s
	}
	return s + " " + unit
}

func formatFloats(v []float64) string {
	s := ""
	for i, f := range v {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.1f", f)
	}
	return s
}

// formatInts joins v with ", ".
func formatInts(v []int64) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, ", ")
}

func summarize(l latencies) percentiles {
	return percentiles{P50us: us(l.percentile(0.50)), P90us: us(l.percentile(0.90)), P99us: us(l.percentile(0.99))}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianInt(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func lagged(rs []watchRound) int64 {
	var n int64
	for _, r := range rs {
		n += r.Lagged
	}
	return n
}

// printStream writes the figures of one stream comparison.
func printStream(w io.Writer, what string, st streamReport) {
	words := st.Words
	if words == 0 {
		words = 4
	}
	fmt.Fprintf(w, "%s: %d turns of a %d-line echo prompt of %d words a line, one client, after %d rounds not counted\n",
		what, st.Turns, st.PromptLines, words, st.Warmup)
	fmt.Fprintf(w, "  updates per turn: %v\n", st.Updates)
	fmt.Fprintf(w, "  turn (ms): %s\n", formatFloats(st.TurnMs))
	fmt.Fprintf(w, "  updates/s: median %.0f, total %d in %.3f s = %.0f; CPU µs/update: daemon %.2f, client %.2f\n",
		st.MedianPerSecond, st.TotalUpdates, st.TotalSeconds, st.TotalPerSecond, st.DaemonCPUus, st.ClientCPUus)
	fmt.Fprintf(w, "  echo server replaying the same bytes, updates/s: median %.0f; per-round daemon/echo median %.3f\n",
		st.EchoMedianPerSecond, st.Ratio)
	fmt.Fprintf(w, "  first update after the prompt (ms): %s; median %.2f\n", formatFloats(st.FirstUpdateMs), st.FirstUpdateMedianMs)
}
