//go:build linux

package main

import (
	"bufio"
	"bytes"
	"cmp"
	"database/sql"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite"
)

// The long-running scenarios (docs/protocol.md, "A daemon that runs for months"),
// each on a fresh daemon with the default settings: history (a turn's cost as the
// session grows, and the storage left after) and watchers (many clients on one
// session during one long turn).

// historyReport is one session's turns one after the other.
type historyReport struct {
	Turns    int     `json:"turns"`
	EarlyAt  int     `json:"early_at"`     // the turn around which EarlyP50 is taken
	EarlyP50 float64 `json:"early_p50_ms"` // p50 of the 50 turns up to EarlyAt
	LateP50  float64 `json:"late_p50_ms"`  // p50 of the last 50 turns
	// The comparison (measureHistory): Rounds turns of the long session, each
	// followed by one of a second session taken from EarlyAt/2 turns to
	// EarlyAt/2+Rounds, so that both see the same load; AltLongP50 and AltShortP50
	// are their p50s, and Ratio is AltLongP50 / AltShortP50.
	Rounds      int     `json:"rounds"`
	AltLongP50  float64 `json:"alt_long_p50_ms"`
	AltShortP50 float64 `json:"alt_short_p50_ms"`
	Ratio       float64 `json:"ratio"`
	WALBytes    int64   `json:"wal_bytes"`  // sessions.db-wal after the turns
	DBBytes     int64   `json:"db_bytes"`   // sessions.db after the turns
	DataBytes   int64   `json:"data_bytes"` // the data dir after the turns
	// WALAfterPauseBytes is the WAL once writes paused for 2 s (docs/protocol.md,
	// "A daemon that runs for months": truncated).
	WALAfterPauseBytes int64 `json:"wal_after_pause_bytes"`
	// RowsBytes is what the session's transcript and replay rows hold (the text
	// and the payloads), read once the daemon stopped; StoppedDataBytes the data
	// dir then; DataRatio their ratio (docs/protocol.md,
	// "A daemon that runs for months": at most 3).
	RowsBytes        int64   `json:"rows_bytes"`
	StoppedDataBytes int64   `json:"stopped_data_bytes"`
	DataRatio        float64 `json:"data_ratio"`
	// Marks are the figures at turns 200, 1,000, 2,000 and 5,000 (those reached).
	Marks []historyMark `json:"marks"`
}

// historyMark is the turn p50 of the historyTurnWindow turns up to a turn, and the
// database and WAL sizes right after it.
type historyMark struct {
	Turn     int     `json:"turn"`
	P50      float64 `json:"p50_ms"`
	DBBytes  int64   `json:"db_bytes"`
	WALBytes int64   `json:"wal_bytes"`
}

// historyMarks are the turns the table gives figures at.
var historyMarks = []int{200, 1000, 2000, 5000}

// historyTurnWindow is how many turns each p50 of the history is taken over.
const historyTurnWindow = 50

// measureHistory runs o.HistoryTurns turns of a one-line echo prompt in one
// session and reports the turn p50 near turn 100 and at the end, and the storage.
func measureHistory(bin string, maxConns int, o options, h *historyReport) error {
	d, err := startDaemon(bin, maxConns)
	if err != nil {
		return err
	}
	defer d.kill()
	c, err := dialInitializedSize(d.socket, streamReadBuffer)
	if err != nil {
		return err
	}
	defer c.close()
	c.nc.SetDeadline(time.Now().Add(ioTimeout))
	id, err := c.newSession()
	if err != nil {
		return err
	}
	h.Turns = o.HistoryTurns
	h.EarlyAt = min(100, o.HistoryTurns)
	prompt := echoPrompt(1)
	var early, late, recent []float64
	data := filepath.Join(d.dir, "data")
	for i := range o.HistoryTurns {
		c.nc.SetDeadline(time.Now().Add(ioTimeout))
		t, err := c.promptAndCount(id, prompt, nil)
		if err != nil {
			return fmt.Errorf("history turn %d: %w", i+1, err)
		}
		if err := checkAnswer(t.Answer, c.id, t.Updates, 1); err != nil {
			return fmt.Errorf("history turn %d: %w", i+1, err)
		}
		n := i + 1
		if n > h.EarlyAt-historyTurnWindow && n <= h.EarlyAt {
			early = append(early, ms(t.Elapsed))
		}
		if n > o.HistoryTurns-historyTurnWindow {
			late = append(late, ms(t.Elapsed))
		}
		if recent = append(recent, ms(t.Elapsed)); len(recent) > historyTurnWindow {
			recent = recent[1:]
		}
		if slices.Contains(historyMarks, n) {
			h.Marks = append(h.Marks, historyMark{Turn: n, P50: median(recent),
				DBBytes: sizeOf(filepath.Join(data, "sessions.db")), WALBytes: sizeOf(filepath.Join(data, "sessions.db-wal"))})
		}
	}
	h.EarlyP50, h.LateP50 = median(early), median(late)
	h.WALBytes = sizeOf(filepath.Join(data, "sessions.db-wal"))
	h.DBBytes = sizeOf(filepath.Join(data, "sessions.db"))
	h.DataBytes = dirSize(data)
	if err := compareHistory(c, id, prompt, h); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // a pause in the writes, which the WAL figure is about
	h.WALAfterPauseBytes = sizeOf(filepath.Join(data, "sessions.db-wal"))
	c.close()
	if err := d.terminate(); err != nil { // the deferred kill removes the dir
		return err
	}
	h.StoppedDataBytes = dirSize(data)
	if h.RowsBytes, err = rowsBytes(filepath.Join(data, "sessions.db")); err != nil {
		return err
	}
	h.DataRatio = ratio(float64(h.StoppedDataBytes), float64(h.RowsBytes))
	return nil
}

// compareHistory sets the comparison of h: the long session id against a second
// session near turn h.EarlyAt, one turn of each in turn, so that a change in the
// machine's load (other work, the page cache, a GC) weighs on both alike. Turns
// of the same session, thousands apart, were compared before: their p50s moved
// by ±30 % with the load of a shared machine. The second session is deleted after,
// so that the storage figures are about the long one.
func compareHistory(c *client, id, prompt string, h *historyReport) error {
	short, err := c.newSession()
	if err != nil {
		return err
	}
	turn := func(session string, what string, n int) (float64, error) {
		c.nc.SetDeadline(time.Now().Add(ioTimeout))
		t, err := c.promptAndCount(session, prompt, nil)
		if err == nil {
			err = checkAnswer(t.Answer, c.id, t.Updates, 1)
		}
		if err != nil {
			return 0, fmt.Errorf("history: %s turn %d: %w", what, n, err)
		}
		return ms(t.Elapsed), nil
	}
	warm := h.EarlyAt / 2
	for i := range warm {
		if _, err := turn(short, "second session", i+1); err != nil {
			return err
		}
	}
	h.Rounds = max(h.EarlyAt, historyTurnWindow)
	long, near := make([]float64, 0, h.Rounds), make([]float64, 0, h.Rounds)
	for i := range h.Rounds {
		l, err := turn(id, "compared", h.Turns+i+1)
		if err != nil {
			return err
		}
		n, err := turn(short, "second session", warm+i+1)
		if err != nil {
			return err
		}
		long, near = append(long, l), append(near, n)
	}
	h.AltLongP50, h.AltShortP50 = median(long), median(near)
	h.Ratio = ratio(h.AltLongP50, h.AltShortP50)
	if _, err := c.call("session/delete", `{"sessionId":`+strconv.Quote(short)+`}`); err != nil {
		return fmt.Errorf("history: session/delete of the second session: %w", err)
	}
	return nil
}

// rowsBytes sums what the transcript and the replay log of a stopped daemon's
// database hold.
func rowsBytes(path string) (int64, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	err = db.QueryRow(`SELECT (SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) FROM transcript) +
		(SELECT coalesce(sum(length(payload)), 0) FROM update_runs)`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("reading the rows of %s: %w", path, err)
	}
	return n, nil
}

func sizeOf(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// watchersReport is, per number of watchers, one turn watched by them all.
type watchersReport struct {
	PromptLines int          `json:"prompt_lines"`
	Rounds      []watchRound `json:"rounds"`
}

type watchRound struct {
	Watchers int `json:"watchers"`
	Updates  int `json:"updates"` // of the turn
	// Delivered counts the updates every watcher received; Lagged the watchers told
	// lagged.
	Delivered int64   `json:"delivered"`
	Lagged    int64   `json:"lagged"`
	TurnMs    float64 `json:"turn_ms"` // prompt written to the last watcher's last update
	// CPUusPerUpdate is the daemon's CPU time per delivered update.
	CPUusPerUpdate float64 `json:"daemon_cpu_us_per_delivered_update"`
	// RSSIdleKiB is the daemon's VmRSS with the watchers attached, before the turn;
	// RSSPeakKiB the highest it was during the turn (its VmHWM, reset before the
	// turn, or where that cannot be reset the highest of VmRSS sampled every 5 ms,
	// RSSSampledKiB, which misses the peak of a short turn); PerWatcherKiB what a watcher costs
	// beyond an idle attached connection: in the first round the growth (the turn's
	// own cost included), in later ones the growth beyond the first round's, per
	// watcher beyond the first (measureWatchers).
	RSSIdleKiB    int64   `json:"rss_idle_kib"`
	RSSPeakKiB    int64   `json:"rss_peak_kib"`
	RSSSampledKiB int64   `json:"rss_sampled_peak_kib"`
	PeakFrom      string  `json:"peak_from"` // "VmHWM" or "sampled"
	PerWatcherKiB float64 `json:"per_watcher_kib"`
	// GrowthsKiB is the growth (peak minus idle) of every round of this count, in
	// the order they ran; this round is the one of median growth.
	GrowthsKiB []int64 `json:"growths_kib"`
}

// measureWatchers runs, for each count of o.Watchers, o.WatchRepeats rounds of
// one echo turn of o.WatchPromptLines lines, each on a fresh daemon, with that
// many connections attached to the session and reading as fast as they can, and
// keeps the round of median memory growth. One round is one sample of when the
// collector ran: the one-watcher round's growth alone moved by 1 MB from one fresh
// daemon to the next (5.0–6.6 MB), which is 10 KiB a watcher of the 100.
func measureWatchers(bin string, maxConns int, o options, w *watchersReport) error {
	w.PromptLines = o.WatchPromptLines
	for _, n := range o.Watchers {
		rounds := make([]watchRound, 0, o.WatchRepeats)
		growths := make([]int64, 0, o.WatchRepeats)
		for range max(1, o.WatchRepeats) {
			r, err := watchRoundOf(bin, maxConns, n, o.WatchPromptLines)
			if err != nil {
				return fmt.Errorf("%d watchers: %w", n, err)
			}
			rounds = append(rounds, r)
			growths = append(growths, r.RSSPeakKiB-r.RSSIdleKiB)
		}
		slices.SortStableFunc(rounds, func(a, b watchRound) int {
			return cmp.Compare(a.RSSPeakKiB-a.RSSIdleKiB, b.RSSPeakKiB-b.RSSIdleKiB)
		})
		r := rounds[(len(rounds)-1)/2]
		r.GrowthsKiB = growths
		w.Rounds = append(w.Rounds, r)
	}
	// What the turn itself costs (its log, its store pages) is in every round's
	// growth: the first round's, with its one watcher, is taken as that cost, and
	// each later round's per-watcher figure is what it grew beyond it, per watcher
	// beyond the first.
	if len(w.Rounds) > 1 {
		base := w.Rounds[0].RSSPeakKiB - w.Rounds[0].RSSIdleKiB
		for i := 1; i < len(w.Rounds); i++ {
			r := &w.Rounds[i]
			if r.Watchers > 1 {
				r.PerWatcherKiB = float64(r.RSSPeakKiB-r.RSSIdleKiB-base) / float64(r.Watchers-1)
			}
		}
	}
	return nil
}

func watchRoundOf(bin string, maxConns, n, lines int) (watchRound, error) {
	r := watchRound{Watchers: n}
	d, err := startDaemon(bin, maxConns)
	if err != nil {
		return r, err
	}
	defer d.kill()
	p, err := dialInitializedSize(d.socket, streamReadBuffer)
	if err != nil {
		return r, err
	}
	defer p.close()
	p.nc.SetDeadline(time.Now().Add(ioTimeout))
	id, err := p.newSession()
	if err != nil {
		return r, err
	}
	var delivered, lagged atomic.Int64
	var wg sync.WaitGroup
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}()
	for range n {
		c, err := dialInitialized(d.socket)
		if err != nil {
			return r, err
		}
		c.nc.SetDeadline(time.Now().Add(ioTimeout))
		if _, err := c.call("session/attach", `{"sessionId":"`+id+`"}`); err != nil {
			c.close()
			return r, err
		}
		c.nc.SetDeadline(time.Time{})
		conns = append(conns, c.nc.(net.Conn))
		wg.Add(1)
		go func() {
			defer wg.Done()
			countUpdates(c.r, &delivered, &lagged)
		}()
	}
	time.Sleep(200 * time.Millisecond) // settle before sampling RSS
	if r.RSSIdleKiB, err = d.rssKiB(); err != nil {
		return r, err
	}
	peak := r.RSSIdleKiB
	exact := d.resetPeakRSS()
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if k, err := d.rssKiB(); err == nil && k > peak {
					peak = k
				}
			}
		}
	}()
	cpu0 := processCPU(d.cmd.Process.Pid)
	start := time.Now()
	p.nc.SetDeadline(time.Now().Add(ioTimeout))
	t, err := p.promptAndCount(id, echoPrompt(lines), nil)
	if err == nil {
		err = checkAnswer(t.Answer, p.id, t.Updates, lines)
	}
	if err != nil {
		close(stop)
		<-sampled
		return r, err
	}
	r.Updates = t.Updates
	want := int64(n * t.Updates)
	deadline := time.Now().Add(2 * time.Minute)
	for delivered.Load()+lagged.Load()*int64(t.Updates) < want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polling counters the readers keep
	}
	r.TurnMs = ms(time.Since(start))
	cpu := processCPU(d.cmd.Process.Pid) - cpu0
	close(stop)
	<-sampled
	r.Delivered, r.Lagged, r.RSSPeakKiB, r.RSSSampledKiB, r.PeakFrom = delivered.Load(), lagged.Load(), peak, peak, "sampled"
	if hwm, err := d.peakRSSKiB(); exact && err == nil {
		r.RSSPeakKiB, r.PeakFrom = max(hwm, peak), "VmHWM"
	}
	if r.Delivered < want && r.Lagged == 0 {
		return r, fmt.Errorf("the watchers received %d of %d updates", r.Delivered, want)
	}
	r.CPUusPerUpdate = us(cpu) / float64(max(1, r.Delivered))
	r.PerWatcherKiB = float64(r.RSSPeakKiB-r.RSSIdleKiB) / float64(n)
	p.close()
	return r, d.stop()
}

// countUpdates counts the session/update lines of a watcher's connection until it
// closes; a lagged one counts apart.
func countUpdates(r *bufio.Reader, delivered, lagged *atomic.Int64) {
	prefix := []byte(updatePrefix)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			delivered.Add(1)
			continue
		}
		if err != nil { // closed: io.EOF, or the round closed it
			return
		}
		if bytes.HasPrefix(line, prefix) {
			if bytes.Contains(line, []byte(`"type":"lagged"`)) {
				lagged.Add(1)
				continue
			}
			delivered.Add(1)
		}
	}
}
