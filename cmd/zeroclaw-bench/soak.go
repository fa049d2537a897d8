//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// zeroclaw-bench soak --duration D runs the daemon under mixed work and faults
// (docs/BENCHMARKS.md, "Soak"): turns with tools, attaches, uploads, config
// writes, an MCP server that crashes, the disk of a small tmpfs filling and
// freeing, kill -9 and a restart every few minutes. From outside it checks, after
// every restart and at the end, that everything the daemon acknowledged is still
// there, and samples RSS, fds, goroutines, the WAL and the data dir. It exits 1
// when anything acknowledged was lost, a resource grew without bound, the daemon
// did not work again once the disk was freed, or it did not stop cleanly.

type soakOptions struct {
	Zeroclaw    string        `json:"zeroclaw"`
	Duration    time.Duration `json:"duration_ns"`
	KillEvery   time.Duration `json:"kill_every_ns"`
	FillEvery   time.Duration `json:"fill_every_ns"`
	SampleEvery time.Duration `json:"sample_every_ns"`
	TmpfsMiB    int           `json:"tmpfs_mib"`
}

// soak is one run: the daemon, the ledger, the counts and the samples.
type soak struct {
	o     soakOptions
	d     *soakDaemon
	data  string
	led   ledger
	fault sync.Mutex // one fault at a time: a kill or a disk fill
	log   io.Writer

	markers, uploads, configs atomic.Int64

	mu      sync.Mutex
	counts  map[string]int
	samples []soakSample
	lives   int
}

func (s *soak) count(what string) { s.add(what, 1) }

func (s *soak) add(what string, n int) {
	s.mu.Lock()
	s.counts[what] += n
	s.mu.Unlock()
}

// soakSample is the daemon as seen from outside at one moment.
type soakSample struct {
	At         float64 `json:"at_s"` // since the start
	Life       int     `json:"life"` // which daemon process (1 + restarts)
	RSSKiB     int64   `json:"rss_kib"`
	FDs        int64   `json:"fds"`
	Goroutines int64   `json:"goroutines"` // go_goroutines of metrics/scrape
	WALBytes   int64   `json:"wal_bytes"`
	DataBytes  int64   `json:"data_bytes"`
}

// soakReport is the machine-readable outcome.
type soakReport struct {
	Options          soakOptions    `json:"options"`
	Tmpfs            bool           `json:"tmpfs"`
	Notes            []string       `json:"notes"`
	Lives            int            `json:"daemon_lives"`
	Kills            int            `json:"kills"`
	DiskFills        int            `json:"disk_fills"`
	Verifications    int            `json:"verifications"`
	RowsAcknowledged int            `json:"rows_acknowledged"`
	RowsLost         int            `json:"rows_lost"`
	Lost             []string       `json:"lost,omitempty"`
	Counts           map[string]int `json:"counts"`
	Growth           []growthCheck  `json:"growth"`
	Samples          []soakSample   `json:"samples"`
	Failures         []string       `json:"failures"`
	Pass             bool           `json:"pass"`
}

func soakMain(args []string) int {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	o := soakOptions{}
	fs.StringVar(&o.Zeroclaw, "zeroclaw", "", "the zeroclaw binary (default: go build ./cmd/zeroclaw into a temp dir)")
	fs.DurationVar(&o.Duration, "duration", time.Hour, "how long the work runs")
	fs.DurationVar(&o.KillEvery, "kill-every", 0, "kill -9 and restart the daemon this often (default: 3m, or a third of --duration when shorter)")
	fs.DurationVar(&o.FillEvery, "fill-every", 0, "fill and free the tmpfs this often (default: 50s, or a fifth of --duration when shorter)")
	fs.DurationVar(&o.SampleEvery, "sample-every", 0, "sample the daemon's resources this often (default: 5s, or 1s under 5 minutes)")
	fs.IntVar(&o.TmpfsMiB, "tmpfs-mib", 128, "size of the tmpfs the data dir lives on (root only)")
	asJSON := fs.Bool("json", false, "print the report as JSON on stdout")
	reportFile := fs.String("report", "", "also write the JSON report to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.Duration < 10*time.Second || o.Duration > 48*time.Hour {
		fmt.Fprintln(os.Stderr, "zeroclaw-bench soak: --duration must be between 10s and 48h")
		return 2
	}
	if o.KillEvery <= 0 {
		o.KillEvery = min(3*time.Minute, o.Duration/3)
	}
	if o.FillEvery <= 0 {
		o.FillEvery = min(50*time.Second, o.Duration/5)
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = 5 * time.Second
		if o.Duration < 5*time.Minute {
			o.SampleEvery = time.Second
		}
	}
	// A signal ends the work early, and the run cleans up (the tmpfs, the daemon)
	// and reports what it saw.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := runSoak(ctx, o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zeroclaw-bench soak:", err)
		return 1
	}
	out, _ := json.MarshalIndent(r, "", "  ")
	if *reportFile != "" {
		if err := os.WriteFile(*reportFile, append(out, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "zeroclaw-bench soak:", err)
			return 1
		}
	}
	if *asJSON {
		os.Stdout.Write(append(out, '\n'))
	}
	r.summarize(os.Stderr)
	if !r.Pass {
		return 1
	}
	return 0
}

func runSoak(parent context.Context, o soakOptions, log io.Writer) (*soakReport, error) {
	log = &lockedWriter{w: log} // the workers and the fault loop write to it at once
	r := &soakReport{Options: o}
	if o.Zeroclaw == "" {
		dir, err := os.MkdirTemp("", "zcsoakbin")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(log, "building zeroclaw …")
		if o.Zeroclaw, err = buildDaemon(dir); err != nil {
			return nil, err
		}
		r.Options.Zeroclaw = ""
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("/tmp", "zcsoak") // /tmp: the socket path must fit in sun_path
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	s := &soak{o: o, data: filepath.Join(dir, "data"), log: log, counts: map[string]int{}}
	s.led.sessions, s.led.retired, s.led.cfgAcked = map[string][]int64{}, map[string]bool{}, -1
	if err := os.Mkdir(s.data, 0o700); err != nil {
		return nil, err
	}
	if err := mountTmpfs(s.data, o.TmpfsMiB); err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("no tmpfs (%v): the data dir is on %s's filesystem and the disk never fills", err, dir))
	} else {
		r.Tmpfs = true
		defer unmount(s.data)
		r.Notes = append(r.Notes, fmt.Sprintf("the data dir is a tmpfs of %d MiB, filled and freed every %s", o.TmpfsMiB, o.FillEvery))
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(soakConfig(self)), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "daemon.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	s.d = &soakDaemon{bin: o.Zeroclaw, configDir: dir, socket: filepath.Join(s.data, "daemon.sock"), log: logf}
	if err := s.d.start(); err != nil {
		return nil, err
	}
	s.lives = 1
	fmt.Fprintf(log, "soak: %s of mixed work, kill -9 every %s …\n", o.Duration, o.KillEvery)

	ctx, cancel := context.WithTimeout(parent, o.Duration)
	defer cancel()
	var wg sync.WaitGroup
	spawn := func(f func()) { wg.Go(f) }
	for range 2 {
		p := &prompter{s: s, turns: map[string]int{}}
		spawn(func() { s.worker(ctx, "prompt", 50*time.Millisecond, p.step) })
	}
	spawn(func() { s.worker(ctx, "attach", 300*time.Millisecond, s.attach) })
	spawn(func() { s.worker(ctx, "upload", 700*time.Millisecond, s.upload) })
	spawn(func() { s.worker(ctx, "config", time.Second, s.writeConfig) })
	spawn(func() { s.sampler(ctx) })
	if r.Tmpfs {
		spawn(func() { s.filler(ctx, r) })
	}
	lostSet := map[string]bool{}
	var lost []string
	rows := 0
	note := func(l []string) {
		for _, x := range l {
			if !lostSet[x] {
				lostSet[x] = true
				lost = append(lost, x)
				fmt.Fprintln(log, "soak: LOST:", x)
			}
		}
	}
	for pause(ctx, o.KillEvery) {
		s.fault.Lock()
		s.d.kill9()
		r.Kills++
		err := s.d.start()
		s.mu.Lock()
		s.lives++
		s.mu.Unlock()
		s.fault.Unlock()
		if err != nil {
			cancel()
			wg.Wait()
			return nil, fmt.Errorf("restart after kill -9: %w", err)
		}
		n, l := s.verify()
		r.Verifications++
		rows = n
		note(l)
		fmt.Fprintf(log, "soak: kill -9 #%d, restarted; %d rows checked, %d lost so far\n", r.Kills, n, len(lost))
	}
	wg.Wait()

	// The end: one more kill -9 and restart, the last verification, and a clean stop.
	s.d.kill9()
	r.Kills++
	if err := s.d.start(); err != nil {
		return nil, fmt.Errorf("the last restart after kill -9: %w", err)
	}
	s.lives++
	n, l := s.verify()
	r.Verifications++
	rows = n
	note(l)
	if err := s.d.stop(); err != nil {
		r.Failures = append(r.Failures, err.Error())
	}
	_ = rows
	r.RowsAcknowledged = 2*s.led.acked + s.counts["config writes acknowledged"]
	r.RowsLost, r.Lost = len(lost), lost[:min(len(lost), 20)]
	r.Lives, r.Counts, r.Samples = s.lives, s.counts, s.samples
	r.judge()
	return r, nil
}

// verify checks, on a connection of its own, that every acknowledged turn of the
// ledger has its prompt and its answer in session/messages, and that the config
// holds the last value written; then it deletes the retired sessions it checked.
// It returns the rows checked and those missing.
func (s *soak) verify() (rows int, lost []string) {
	sessions, retired := s.led.snapshot()
	c, err := dialSoak(s.d.socket)
	if err != nil {
		return 0, []string{"verification: cannot connect: " + err.Error()}
	}
	defer c.close()
	for id, markers := range sessions {
		if len(markers) == 0 {
			continue
		}
		var m struct {
			Messages []struct {
				Role string `json:"role"`
				Text string `json:"text"`
			} `json:"messages"`
		}
		if err := c.call("session/messages", map[string]any{"sessionId": id, "limit": 10000}, &m); err != nil {
			var re *rpcError
			if errors.As(err, &re) && re.Code == -32000 && s.deletedMeanwhile(id) {
				continue
			}
			rows += 2 * len(markers)
			lost = append(lost, fmt.Sprintf("session %s: session/messages: %v (%d acknowledged turns)", id, err, len(markers)))
			continue
		}
		seen := map[string]bool{}
		for _, msg := range m.Messages {
			if first, _, _ := strings.Cut(msg.Text, "\n"); msg.Role == "user" || msg.Role == "assistant" {
				seen[msg.Role+" "+first] = true
			}
		}
		for _, mk := range markers {
			rows += 2
			if !seen[fmt.Sprintf("user soak-%d", mk)] {
				lost = append(lost, fmt.Sprintf("session %s: the prompt of acknowledged turn soak-%d", id, mk))
			}
			if !seen[fmt.Sprintf("assistant echo: soak-%d", mk)] {
				lost = append(lost, fmt.Sprintf("session %s: the answer of acknowledged turn soak-%d", id, mk))
			}
		}
		s.add("rows verified", 2*len(markers))
		if retired[id] {
			err := c.call("session/delete", map[string]any{"sessionId": id}, nil)
			if err == nil {
				s.led.forget(id)
				s.count("sessions deleted")
			} else if errors.Is(err, errNoAnswer) {
				return rows, lost
			}
		}
	}
	if from := s.led.configSince(); from >= 0 {
		rows++
		var g struct {
			Value int `json:"value"`
		}
		err := c.call("config/get", map[string]any{"prop": "rpc.upload_idle_secs"}, &g)
		allowed := s.led.configAllowed(from)
		if err != nil || !slices.Contains(allowed, g.Value) {
			lost = append(lost, fmt.Sprintf("config: rpc.upload_idle_secs = %d (%v), want the acknowledged %d or one written since", g.Value, err, allowed[0]))
		}
	}
	return rows, lost
}

// deletedMeanwhile tells whether the prompter deleted id since the snapshot.
func (s *soak) deletedMeanwhile(id string) bool {
	s.led.mu.Lock()
	defer s.led.mu.Unlock()
	_, still := s.led.sessions[id]
	return !still
}

// sampler records the daemon's resources every SampleEvery.
func (s *soak) sampler(ctx context.Context) {
	start := time.Now()
	var c *soakClient
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	for pause(ctx, s.o.SampleEvery) {
		s.fault.Lock() // not while the daemon restarts or the disk is full
		s.mu.Lock()
		life := s.lives
		s.mu.Unlock()
		pid := s.d.pid()
		smp := soakSample{At: time.Since(start).Seconds(), Life: life, FDs: fdCount(pid),
			WALBytes: sizeOf(filepath.Join(s.data, "sessions.db-wal")), DataBytes: dirSize(s.data)}
		smp.RSSKiB, _ = rssKiB(pid)
		if c == nil {
			c, _ = dialSoak(s.d.socket)
		}
		var sc struct {
			Text string `json:"text"`
		}
		if c != nil {
			if err := c.call("metrics/scrape", map[string]any{}, &sc); err != nil {
				c.close()
				c = nil
			}
		}
		s.fault.Unlock()
		g, ok := metricValue(sc.Text, "go_goroutines")
		if !ok {
			continue // the daemon died under the scrape: no sample
		}
		smp.Goroutines = int64(g)
		s.mu.Lock()
		s.samples = append(s.samples, smp)
		s.mu.Unlock()
	}
}

// filler fills the tmpfs, holds it full for 3 s while the work goes on (and
// fails, visibly), frees it, and checks the daemon works again without a restart.
func (s *soak) filler(ctx context.Context, r *soakReport) {
	for pause(ctx, s.o.FillEvery) {
		s.fault.Lock()
		path, n, err := fillDisk(s.data)
		pause(ctx, 3*time.Second)
		os.Remove(path)
		s.fault.Unlock()
		if err != nil {
			s.count("disk fill: " + err.Error())
			continue
		}
		s.mu.Lock()
		r.DiskFills++
		s.mu.Unlock()
		fmt.Fprintf(s.log, "soak: disk filled (%d MiB written) and freed\n", n>>20)
		if ctx.Err() == nil {
			if err := s.probe(ctx); err != nil && ctx.Err() == nil {
				s.count("no recovery after the disk was freed")
				fmt.Fprintf(s.log, "soak: the daemon does not work after the disk was freed: %v\n", err)
			}
		}
	}
}

func (r *soakReport) summarize(w io.Writer) {
	fmt.Fprintf(w, "soak: %s, %d daemon lives (%d kill -9), %d disk fills, %d verifications\n",
		r.Options.Duration, r.Lives, r.Kills, r.DiskFills, r.Verifications)
	fmt.Fprintf(w, "soak: rows acknowledged %d, lost %d\n", r.RowsAcknowledged, r.RowsLost)
	keys := make([]string, 0, len(r.Counts))
	for k := range r.Counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-48s %d\n", k, r.Counts[k])
	}
	for _, g := range r.Growth {
		fmt.Fprintf(w, "  %-12s after warm-up %12.0f, at the end %12.0f (limit %12.0f) %s\n", g.Resource, g.Early, g.Late, g.Limit,
			map[bool]string{true: "GREW", false: "flat"}[g.Grew])
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	for _, f := range r.Failures {
		fmt.Fprintln(w, "FAIL:", f)
	}
	if r.Pass {
		fmt.Fprintln(w, "soak: pass")
	}
}

// lockedWriter serializes the writes of several goroutines to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
