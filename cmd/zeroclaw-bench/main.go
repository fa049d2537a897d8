//go:build linux

// Command zeroclaw-bench is the load generator behind docs/BENCHMARKS.md. In one run
// it measures the real daemon binary and, side by side, a raw NDJSON echo server
// built into this tool (the cost of the socket and the framing alone):
//
//   - status round-trip latency on one connection, sequential calls (p50/p90/p99);
//   - pipelined throughput: several connections, each with 64 requests in flight;
//   - memory per idle initialized connection (the daemon's VmRSS before and after);
//   - the daemon's idle RSS right after start, and the time from exec to its socket
//     accepting a connect (median of several starts);
//   - on a fresh daemon of their own, sessions of the built-in echo agent: memory per
//     idle session, session/new latency (p50/p90/p99), and the rate of session/update
//     notifications one client receives while an echo turn streams a long reply.
//
// It starts every daemon itself in a fresh config dir under /tmp, touches only Unix
// sockets, stops each daemon with SIGTERM and checks that it exited 0. Every loop and
// every wait is bounded. Linux only: memory comes from /proc/<pid>/status.
//
//	go run ./cmd/zeroclaw-bench [--zeroclaw PATH] [--quick] [--json]
//	go run ./cmd/zeroclaw-bench soak --duration D [--zeroclaw PATH] [--json] [--report FILE]
//	go run ./cmd/zeroclaw-bench metrics-cost --baseline PATH [--zeroclaw PATH] [--rounds N] [--json]
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// options are what one run measures and how much.
type options struct {
	Zeroclaw  string        `json:"zeroclaw"`    // daemon binary; built when empty
	Calls     int           `json:"calls"`       // sequential status calls per server
	Warmup    int           `json:"warmup"`      // unmeasured calls before them
	Rounds    int           `json:"rounds"`      // latency rounds alternating the servers
	Conns     int           `json:"conns"`       // pipelined connections
	Depth     int           `json:"depth"`       // requests in flight per connection
	Duration  time.Duration `json:"duration_ns"` // pipelined run per server
	IdleConns int           `json:"idle_conns"`  // idle initialized connections
	Starts    int           `json:"starts"`      // daemon starts timed
	Settle    time.Duration `json:"settle_ns"`   // pause before reading RSS
	// The session measurements, on a fresh daemon of their own.
	IdleSessions int `json:"idle_sessions"` // idle sessions for the memory figure
	SessionNews  int `json:"session_news"`  // sequential session/new calls timed
	Turns        int `json:"turns"`         // echo turns whose session/update stream is counted
	StreamWarmup int `json:"stream_warmup"` // rounds of a daemon and an echo turn before those counted
	PromptLines  int `json:"prompt_lines"`  // lines of each turn's prompt
	// BigPromptLines lines of BigWords words make the big turns of the second
	// stream comparison (0: none).
	BigPromptLines int `json:"big_prompt_lines"`
	BigWords       int `json:"big_words"`
	Uploads        int `json:"uploads"` // rounds of 10 MiB uploads
	// OutboundFrames is rpc.outbound_frames of the session daemon (with 64 MiB of
	// rpc.outbound_bytes); 0, the default, leaves the daemon's defaults.
	OutboundFrames int `json:"outbound_frames"`
	// The long-running scenarios (longrun.go): turns of one session, and the
	// watcher counts of one session's turn of WatchPromptLines lines.
	HistoryTurns     int   `json:"history_turns"`
	Watchers         []int `json:"watchers"`
	WatchPromptLines int   `json:"watch_prompt_lines"`
	WatchRepeats     int   `json:"watch_repeats"` // rounds per watcher count; the median's figures are kept
	// EchoInProcess serves the echo baseline from this process instead of a child.
	EchoInProcess bool `json:"echo_in_process"`
	// Only names the parts to run (of scenarioNames); empty runs them all.
	Only []string `json:"only,omitempty"`
}

// scenarioNames are the parts of a run --only may name: the start and the
// status, pipelined and idle-connection figures against the echo server; the
// sessions, their stream and uploads; history; watchers.
var scenarioNames = []string{"status", "sessions", "history", "watchers"}

// runs tells whether the run includes the part name.
func (o options) runs(name string) bool { return len(o.Only) == 0 || slices.Contains(o.Only, name) }

func defaultOptions() options {
	return options{
		Calls: 20000, Warmup: 1000, Rounds: 4,
		Conns: 8, Depth: 64, Duration: 5 * time.Second,
		IdleConns: 2000, Starts: 5, Settle: 200 * time.Millisecond,
		IdleSessions: 60, SessionNews: 2000, Turns: 30, StreamWarmup: 10, PromptLines: 2000, Uploads: 8,
		BigPromptLines: 2000, BigWords: 8,
		HistoryTurns: 5000, Watchers: []int{1, 10, 100}, WatchPromptLines: 2000, WatchRepeats: 5,
	}
}

// quick shrinks the counts for a CI smoke run.
func (o options) quick() options {
	o.Calls, o.Warmup, o.Duration, o.IdleConns = 2000, 200, time.Second, 200
	o.SessionNews, o.Turns, o.StreamWarmup, o.Uploads = 200, 3, 1, 2
	o.BigPromptLines = 500
	o.HistoryTurns, o.Watchers, o.WatchPromptLines, o.WatchRepeats = 150, []int{1, 10}, 500, 1
	return o
}

func main() {
	if echoChild() {
		os.Exit(serveEchoChild())
	}
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "soak": // soak.go
			os.Exit(soakMain(os.Args[2:]))
		case "metrics-cost": // cost.go
			os.Exit(costMain(os.Args[2:]))
		case "mcp-child": // the soak's MCP server that crashes (soak_env.go)
			os.Exit(serveMCPChild())
		}
	}
	o := defaultOptions()
	flag.StringVar(&o.Zeroclaw, "zeroclaw", "", "the zeroclaw binary (default: go build ./cmd/zeroclaw into a temp dir)")
	flag.DurationVar(&o.Duration, "duration", o.Duration, "pipelined run per server")
	flag.IntVar(&o.Calls, "calls", o.Calls, "sequential status calls per server, after the warm-up")
	flag.IntVar(&o.Warmup, "warmup", o.Warmup, "unmeasured status calls per server before the timed ones")
	flag.IntVar(&o.Conns, "conns", o.Conns, "pipelined connections")
	flag.IntVar(&o.Depth, "depth", o.Depth, "requests in flight per pipelined connection")
	flag.IntVar(&o.IdleConns, "idle-conns", o.IdleConns, "idle initialized connections for the memory figure")
	flag.IntVar(&o.Starts, "starts", o.Starts, "daemon starts timed (the median is reported)")
	flag.IntVar(&o.IdleSessions, "idle-sessions", o.IdleSessions, "idle sessions for the memory figure (at most 63: the daemon keeps 64 live)")
	flag.IntVar(&o.SessionNews, "session-news", o.SessionNews, "sequential session/new calls timed")
	flag.IntVar(&o.Turns, "turns", o.Turns, "echo turns whose session/update stream is counted")
	flag.IntVar(&o.StreamWarmup, "stream-warmup", o.StreamWarmup, "rounds of one daemon and one echo turn run before those counted")
	flag.IntVar(&o.PromptLines, "prompt-lines", o.PromptLines, "lines of each streamed turn's prompt")
	flag.IntVar(&o.BigPromptLines, "big-prompt-lines", o.BigPromptLines, "lines of each big streamed turn's prompt (0: no big turns)")
	flag.IntVar(&o.BigWords, "big-words", o.BigWords, "words per line of the big turns' prompts (an update a word)")
	flag.IntVar(&o.Uploads, "uploads", o.Uploads, "rounds of 10 MiB uploads per server")
	flag.IntVar(&o.OutboundFrames, "outbound-frames", o.OutboundFrames, "rpc.outbound_frames of the session daemon, with 64 MiB of rpc.outbound_bytes (0: the daemon's defaults)")
	flag.IntVar(&o.HistoryTurns, "history-turns", o.HistoryTurns, "turns of the history scenario's session")
	flag.Func("watchers", "comma-separated watcher counts of the watchers scenario, \"\" for none (default 1,10,100)", func(v string) error {
		o.Watchers = nil
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 || n > 2000 {
				return fmt.Errorf("watcher count %q: want 1 to 2000", f)
			}
			o.Watchers = append(o.Watchers, n)
		}
		return nil
	})
	flag.Func("only", "comma-separated parts to run, of "+strings.Join(scenarioNames, ",")+" (default all); targets of the others read 0", func(v string) error {
		o.Only = nil
		for _, f := range strings.Split(v, ",") {
			if !slices.Contains(scenarioNames, f) {
				return fmt.Errorf("unknown part %q (want %s)", f, strings.Join(scenarioNames, ","))
			}
			o.Only = append(o.Only, f)
		}
		return nil
	})
	flag.IntVar(&o.WatchPromptLines, "watch-prompt-lines", o.WatchPromptLines, "lines of the watched turn's prompt (4 updates a line)")
	flag.IntVar(&o.WatchRepeats, "watch-repeats", o.WatchRepeats, "rounds of each watcher count, each on a fresh daemon; the one of median memory growth is reported")
	flag.BoolVar(&o.EchoInProcess, "echo-in-process", false, "serve the echo baseline from this process (flatters it: see echo.go)")
	asJSON := flag.Bool("json", false, "print the report as JSON instead of a table")
	quick := flag.Bool("quick", false, "small counts (2000 calls, 1 s, 200 idle connections, 200 session/new, 3 turns, 150 history turns, 1 and 10 watchers, one round each) for a CI smoke test")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "zeroclaw-bench: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if *quick { // explicit flags still win
		q := o.quick()
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["calls"] {
			o.Calls = q.Calls
		}
		if !set["warmup"] {
			o.Warmup = q.Warmup
		}
		if !set["duration"] {
			o.Duration = q.Duration
		}
		if !set["idle-conns"] {
			o.IdleConns = q.IdleConns
		}
		if !set["session-news"] {
			o.SessionNews = q.SessionNews
		}
		if !set["turns"] {
			o.Turns = q.Turns
		}
		if !set["stream-warmup"] {
			o.StreamWarmup = q.StreamWarmup
		}
		if !set["uploads"] {
			o.Uploads = q.Uploads
		}
		if !set["history-turns"] {
			o.HistoryTurns = q.HistoryTurns
		}
		if !set["watchers"] {
			o.Watchers = q.Watchers
		}
		if !set["watch-prompt-lines"] {
			o.WatchPromptLines = q.WatchPromptLines
		}
		if !set["watch-repeats"] {
			o.WatchRepeats = q.WatchRepeats
		}
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "zeroclaw-bench:", err)
		os.Exit(2)
	}

	r, err := run(o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zeroclaw-bench:", err)
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, "zeroclaw-bench:", err)
			os.Exit(1)
		}
		return
	}
	r.print(os.Stdout)
}

func (o options) validate() error {
	switch {
	case o.Calls < 1 || o.Calls > 10_000_000:
		return errors.New("--calls must be between 1 and 10000000")
	case o.Warmup < 0 || o.Warmup > 10_000_000:
		return errors.New("--warmup must be between 0 and 10000000")
	case o.Conns < 1 || o.Conns > 1024:
		return errors.New("--conns must be between 1 and 1024")
	case o.Depth < 1 || o.Depth > 4096:
		return errors.New("--depth must be between 1 and 4096")
	case o.Duration < 10*time.Millisecond || o.Duration > time.Hour:
		return errors.New("--duration must be between 10ms and 1h")
	case o.IdleConns < 1 || o.IdleConns > 60000:
		return errors.New("--idle-conns must be between 1 and 60000")
	case o.Starts < 1 || o.Starts > 100:
		return errors.New("--starts must be between 1 and 100")
	case o.IdleSessions < 1 || o.IdleSessions > 63:
		return errors.New("--idle-sessions must be between 1 and 63")
	case o.SessionNews < 1 || o.SessionNews > 1_000_000:
		return errors.New("--session-news must be between 1 and 1000000")
	case o.Turns < 1 || o.Turns > 1000:
		return errors.New("--turns must be between 1 and 1000")
	case o.StreamWarmup < 0 || o.StreamWarmup > 1000:
		return errors.New("--stream-warmup must be between 0 and 1000")
	case o.PromptLines < 1 || o.PromptLines > 100_000:
		return errors.New("--prompt-lines must be between 1 and 100000")
	case o.BigPromptLines < 0 || o.BigPromptLines > 100_000:
		return errors.New("--big-prompt-lines must be between 0 (no big turns) and 100000")
	case o.BigPromptLines > 0 && (o.BigWords < 2 || o.BigWords > 100):
		return errors.New("--big-words must be between 2 and 100")
	case o.Uploads < 1 || o.Uploads > 100:
		return errors.New("--uploads must be between 1 and 100")
	case o.OutboundFrames < 0 || o.OutboundFrames > 1<<20:
		return errors.New("--outbound-frames must be between 0 and 1048576")
	case o.HistoryTurns < 1 || o.HistoryTurns > 1_000_000:
		return errors.New("--history-turns must be between 1 and 1000000")
	case o.WatchPromptLines < 1 || o.WatchPromptLines > 100_000:
		return errors.New("--watch-prompt-lines must be between 1 and 100000")
	case o.WatchRepeats < 1 || o.WatchRepeats > 100:
		return errors.New("--watch-repeats must be between 1 and 100")
	}
	return nil
}

// run measures everything and stops every process it started. Progress goes to log.
func run(o options, log io.Writer) (*report, error) {
	r := &report{Machine: describeMachine(), Options: o}
	r.Machine.LoadBefore = loadAverage()
	r.Machine.Wake = wakeLatency()
	defer func() { r.Machine.LoadAfter = loadAverage() }()
	if err := raiseNoFile(uint64(o.IdleConns + o.Conns + 256)); err != nil {
		return nil, err
	}
	r.Machine.NoFile = currentNoFile()
	if o.Zeroclaw == "" {
		dir, err := os.MkdirTemp("", "zeroclaw-bench")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(log, "building ./cmd/zeroclaw …")
		if o.Zeroclaw, err = buildDaemon(dir); err != nil {
			return nil, err
		}
	}
	r.Options.Zeroclaw = o.Zeroclaw
	maxConns := max(4096, o.IdleConns+o.Conns+64)

	if o.runs("status") {
		if err := measureAgainstEcho(o, maxConns, r, log); err != nil {
			return nil, err
		}
	}
	if o.runs("sessions") {
		if err := measureSessions(o, maxConns, r, log); err != nil {
			return nil, err
		}
	}
	if o.runs("history") {
		fmt.Fprintf(log, "history: %d turns of one session …\n", o.HistoryTurns)
		if err := measureHistory(o.Zeroclaw, maxConns, o, &r.History); err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
	}
	if o.runs("watchers") {
		fmt.Fprintf(log, "watchers: %v clients on one session's %d-line turn …\n", o.Watchers, o.WatchPromptLines)
		if err := measureWatchers(o.Zeroclaw, maxConns, o, &r.Watchers); err != nil {
			return nil, fmt.Errorf("watchers: %w", err)
		}
	}
	r.DaemonExitedCleanly = true
	r.Targets = r.judge()
	return r, nil
}

// measureStartup starts and stops o.Starts daemons, each in a fresh config dir.
func measureStartup(o options, maxConns int, s *startupReport) error {
	s.Starts = o.Starts
	for range o.Starts {
		d, err := startDaemon(o.Zeroclaw, maxConns)
		if err != nil {
			return err
		}
		time.Sleep(o.Settle)
		rss, err := d.rssKiB()
		if err != nil {
			d.kill()
			return err
		}
		if err := d.stop(); err != nil {
			return err
		}
		s.ReadyMs = append(s.ReadyMs, ms(d.ReadyAfter))
		s.IdleRSSKiB = append(s.IdleRSSKiB, rss)
	}
	s.ReadyMsMedian = median(s.ReadyMs)
	s.IdleRSSMB = float64(medianInt(s.IdleRSSKiB)) * 1024 / 1e6
	return nil
}

// measureIdle reads the daemon's RSS, opens and initializes o.IdleConns connections,
// checks that the daemon counts them, reads its RSS again and closes them.
func measureIdle(d *daemon, o options, s *idleReport) error {
	s.Conns = o.IdleConns
	time.Sleep(o.Settle)
	before, err := d.rssKiB()
	if err != nil {
		return err
	}
	conns, err := openIdle(d.socket, o.IdleConns)
	if err != nil {
		return err
	}
	defer closeAll(conns)
	time.Sleep(o.Settle)
	after, err := d.rssKiB()
	if err != nil {
		return err
	}
	n, err := daemonConnections(d.socket)
	if err != nil {
		return err
	}
	if n < o.IdleConns {
		return fmt.Errorf("the daemon counts %d connections, want at least %d", n, o.IdleConns)
	}
	s.RSSBeforeKiB, s.RSSAfterKiB = before, after
	s.PerConnKiB = float64(after-before) / float64(o.IdleConns)
	return nil
}

// daemonConnections asks the daemon's status how many connections it has open.
func daemonConnections(socket string) (int, error) {
	c, err := dialInitialized(socket)
	if err != nil {
		return 0, err
	}
	defer c.close()
	c.nc.SetDeadline(time.Now().Add(ioTimeout))
	res, err := c.call("status", "")
	if err != nil {
		return 0, err
	}
	var st struct {
		Connections *int `json:"connections"`
	}
	if err := json.Unmarshal(res, &st); err != nil || st.Connections == nil {
		return 0, fmt.Errorf("status result without connections: %.200s", res)
	}
	return *st.Connections - 1, nil // not this one
}

// sampleResults returns the daemon's status and initialize results, the echo
// server's answers, so that both servers send lines of the same size.
func sampleResults(socket string) (status, initialize []byte, err error) {
	c, err := dial(socket)
	if err != nil {
		return nil, nil, err
	}
	defer c.close()
	c.nc.SetDeadline(time.Now().Add(ioTimeout))
	res, err := c.call("initialize", `{"protocolVersion":1,"clientInfo":{"name":"zeroclaw-bench","version":"1"}}`)
	if err != nil {
		return nil, nil, fmt.Errorf("initialize: %w", err)
	}
	initialize = slices.Clone(res)
	if res, err = c.call("status", ""); err != nil {
		return nil, nil, fmt.Errorf("status: %w", err)
	}
	return slices.Clone(res), initialize, nil
}

// buildDaemon builds ./cmd/zeroclaw of this module into dir.
func buildDaemon(dir string) (string, error) {
	bin := filepath.Join(dir, "zeroclaw")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/zeroclaw-labs/zeroclaw-go/cmd/zeroclaw")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/zeroclaw (run inside the module, or pass --zeroclaw): %w", err)
	}
	return bin, nil
}
