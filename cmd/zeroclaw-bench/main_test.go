//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
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
	if len(os.Args) > 1 && os.Args[1] == "mcp-child" { // the soak's MCP server
		os.Exit(serveMCPChild())
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
	o.IdleSessions, o.SessionNews, o.Turns, o.PromptLines = 10, 20, 2, 200
	o.HistoryTurns, o.Watchers, o.WatchPromptLines = 120, []int{1, 4}, 200
	r, err := run(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !r.DaemonExitedCleanly {
		t.Error("the daemon did not exit 0 after SIGTERM")
	}
	for name, p := range map[string]percentiles{"daemon": r.Latency.Daemon, "echo": r.Latency.Echo, "wake": r.Machine.Wake} {
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
	is := r.IdleSessions
	if is.Sessions != o.IdleSessions || is.RSSFreshKiB <= 0 || is.RSSBeforeKiB <= 0 || is.RSSAfterKiB <= 0 {
		t.Errorf("idle sessions %+v", is)
	}
	if p := r.SessionNew.Latency; r.SessionNew.Calls != o.SessionNews || !(0 < p.P50us && p.P50us <= p.P90us && p.P90us <= p.P99us) {
		t.Errorf("session/new %+v: want %d calls, positive and ordered percentiles", r.SessionNew, o.SessionNews)
	}
	st := r.Stream
	if len(st.Updates) != o.Turns || len(st.TurnMs) != o.Turns || len(st.PerSecond) != o.Turns || st.Warmup != o.StreamWarmup || o.StreamWarmup < 1 {
		t.Errorf("stream %+v: want %d turns after %d (at least 1) not counted", st, o.Turns, o.StreamWarmup)
	}
	sum := 0
	for _, n := range st.Updates {
		// The echo reply repeats each 4-word line: one update per word, and "echo:".
		if n < 4*o.PromptLines {
			t.Errorf("a turn of %d lines brought %d updates, want at least %d", o.PromptLines, n, 4*o.PromptLines)
		}
		sum += n
	}
	if st.TotalUpdates != sum || st.MedianPerSecond <= 0 || st.TotalPerSecond <= 0 || st.TotalSeconds <= 0 {
		t.Errorf("stream totals %+v", st)
	}
	if len(st.EchoPerSecond) != o.Turns || st.EchoMedianPerSecond <= 0 || st.Ratio <= 0 {
		t.Errorf("stream against the echo server %+v", st)
	}
	if up := r.Upload; up.Rounds != o.Uploads || len(up.DaemonMiBs) != o.Uploads || len(up.EchoMiBs) != o.Uploads ||
		up.DaemonMedian <= 0 || up.EchoMedian <= 0 || up.Ratio <= 0 {
		t.Errorf("uploads %+v", up)
	}
	if len(st.FirstUpdateMs) != o.Turns || st.FirstUpdateMedianMs <= 0 {
		t.Errorf("first updates %+v", st.FirstUpdateMs)
	}
	if h := r.History; h.Turns != o.HistoryTurns || h.EarlyP50 <= 0 || h.LateP50 <= 0 || h.DBBytes <= 0 || h.DataBytes < h.DBBytes ||
		h.Rounds < 50 || h.AltLongP50 <= 0 || h.AltShortP50 <= 0 || h.Ratio != h.AltLongP50/h.AltShortP50 {
		t.Errorf("history %+v", h)
	}
	if len(r.Watchers.Rounds) != len(o.Watchers) {
		t.Errorf("watchers %+v: want %d rounds", r.Watchers, len(o.Watchers))
	}
	for i, w := range r.Watchers.Rounds {
		if w.Watchers != o.Watchers[i] || w.Updates < 4*o.WatchPromptLines || w.Lagged != 0 ||
			w.Delivered != int64(w.Watchers*w.Updates) || w.CPUusPerUpdate < 0 || w.RSSIdleKiB <= 0 { // CPU: 10 ms resolution
			t.Errorf("watchers round %+v", w)
		}
		// Linux lets a process's owner reset its VmHWM: the peak is read, not
		// only sampled.
		if w.PeakFrom != "VmHWM" {
			t.Errorf("watchers round %+v: the peak should be read from VmHWM", w)
		}
	}
	if h := r.History; h.RowsBytes <= 0 || h.StoppedDataBytes <= 0 || h.DataRatio <= 0 {
		t.Errorf("history storage %+v", h)
	}
	if big := r.StreamBig; big.Turns != o.Turns || big.Words != o.BigWords || len(big.Updates) != o.Turns ||
		big.Updates[0] < o.BigPromptLines*o.BigWords || big.Ratio <= 0 || big.EchoMedianPerSecond <= 0 {
		t.Errorf("the big turns' stream %+v", big)
	}
	if len(r.Targets) != 18 {
		t.Errorf("%d targets judged, want 18", len(r.Targets))
	}

	var table strings.Builder
	r.print(&table)
	for _, want := range []string{"p50 (µs)", "requests/s", "per idle initialized connection", "exec to accepting",
		"exited 0 after SIGTERM", "session/update to one client", "session/new p50", "memory per idle session",
		"10 MiB upload", "replaying the same bytes", "first update", "history:", "watchers:", "stream of big turns"} {
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
	e, err := startEcho(filepath.Join(dir, "echo.sock"), &answers{Results: map[string][]byte{
		"status": []byte(`{"pid":1}`), "initialize": []byte(`{"protocolVersion":1}`)}})
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

func TestScanRequestFindsTheMethodAndIdWithoutDecoding(t *testing.T) {
	big := strings.Repeat("QUJD", 350_000) // a 1.4 MB base64 chunk
	for _, tt := range []struct{ line, method, id string }{
		{`{"jsonrpc":"2.0","method":"status","id":7}`, "status", "7"},
		{`{"id":"a\"}b","jsonrpc":"2.0","method":"status"}`, "status", `"a\"}b"`},
		{`{"jsonrpc":"2.0","method":"file/upload/chunk","params":{"upload_id":"up_1","id":3,"data_b64":"` + big + `"},"id":12}`, "file/upload/chunk", "12"},
		{`{"jsonrpc":"2.0","method":"m","params":{"nested":{"id":5},"list":[{"id":6}],"s":"\\"},"id": null }`, "m", "null"},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"id":1}}`, "session/update", ""},
	} {
		method, id := scanRequest([]byte(tt.line))
		if string(method) != tt.method || string(id) != tt.id {
			t.Errorf("scanRequest(%.80s) = %q, %q; want %q, %q", tt.line, method, id, tt.method, tt.id)
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

// TestStreamClientCountsUpdates drives the stream client, over a blocking socket,
// against a fake daemon that sends a known number of updates and other lines.
func TestStreamClientCountsUpdates(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "zcb")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "fake.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const updates = 5000
	served := make(chan error, 1)
	go func() {
		served <- func() error {
			nc, err := ln.Accept()
			if err != nil {
				return err
			}
			defer nc.Close()
			r := bufio.NewReader(nc)
			for id := 1; id <= 2; id++ { // initialize, then session/prompt
				if _, err := r.ReadSlice('\n'); err != nil {
					return err
				}
				var out []byte
				if id == 2 {
					for seq := range updates {
						out = fmt.Appendf(out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","seq":%d,"type":"agent_message_chunk","text":"w "}}`+"\n", seq+1)
						if len(out) > 32<<10 {
							if _, err := nc.Write(out); err != nil {
								return err
							}
							out = out[:0]
						}
					}
				}
				out = fmt.Appendf(out, `{"jsonrpc":"2.0","result":{"stopReason":"end_turn","text":"echo: x","usage":{"outputTokens":2}},"id":%d}`+"\n", id)
				if _, err := nc.Write(out); err != nil {
					return err
				}
			}
			return nil
		}()
	}()
	c, err := dialBlockingInitialized(path, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	c.nc.SetDeadline(time.Now().Add(ioTimeout))
	turn, err := c.promptAndCount("s", echoPrompt(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Updates != updates || turn.Elapsed <= 0 {
		t.Errorf("counted %d updates in %v, want %d", turn.Updates, turn.Elapsed, updates)
	}
	if err := checkAnswer(turn.Answer, c.id, turn.Updates, 0); err != nil {
		t.Error(err)
	}
	if err := checkAnswer(turn.Answer, c.id, 1, 0); err == nil {
		t.Error("fewer updates than reply words passed the check")
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

func TestEchoPromptAndStringMember(t *testing.T) {
	if p := echoPrompt(3); p != "line 1 word word\nline 2 word word\nline 3 word word" {
		t.Errorf("echoPrompt(3) = %q", p)
	}
	id, ok := stringMember([]byte(`{"sessionId":"abc-1","agentAlias":"default"}`), `"sessionId":"`)
	if !ok || id != "abc-1" {
		t.Errorf("stringMember = %q, %v", id, ok)
	}
	if _, ok := stringMember([]byte(`{"agentAlias":"default"}`), `"sessionId":"`); ok {
		t.Error("stringMember found a missing member")
	}
}
