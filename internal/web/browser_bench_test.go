//go:build unix

package web_test

import (
	"bufio"
	"context"
	"encoding/json/v2"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
)

// sockClient is a plain NDJSON client of the daemon, the other client of a session.
type sockClient struct {
	tb testing.TB
	nc net.Conn
	r  *bufio.Reader
	id int
}

func dialSock(tb testing.TB, sock string) *sockClient {
	nc, err := net.Dial("unix", sock)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { nc.Close() })
	c := &sockClient{tb: tb, nc: nc, r: bufio.NewReaderSize(nc, 1<<20)}
	c.call("initialize", `{"protocolVersion":1}`, nil)
	return c
}

// call sends a request and reads until its response; seen gets each notification.
func (c *sockClient) call(method, params string, seen func(map[string]any)) map[string]any {
	c.id++
	fmt.Fprintf(c.nc, `{"jsonrpc":"2.0","method":%q,"params":%s,"id":%d}`+"\n", method, params, c.id)
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			c.tb.Fatalf("%s: %v", method, err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			c.tb.Fatal(err)
		}
		if m["id"] == float64(c.id) {
			if m["error"] != nil {
				c.tb.Fatalf("%s: %v", method, m["error"])
			}
			r, _ := m["result"].(map[string]any)
			return r
		}
		if seen != nil {
			seen(m)
		}
	}
}

// BenchmarkBrowserRender2000Messages: a page load of a session of 2,000 messages
// (1,000 turns) until its last reply is drawn (docs/BENCHMARKS.md, "The web client").
// Run with -benchtime=Nx: each iteration is one page load.
func BenchmarkBrowserRender2000Messages(b *testing.B) {
	s := newStack(b, "")
	c := dialSock(b, s.sock)
	sid := c.call("session/new", `{"agentAlias":"default"}`, nil)["sessionId"].(string)
	for i := range 1000 {
		c.call("session/prompt", `{"sessionId":"`+sid+`","prompt":"message `+strconv.Itoa(i)+` with **some** markdown and `+"`code`"+`"}`, nil)
	}
	for _, via := range []string{"socket", "bridge"} {
		start, n := time.Now(), 0
		count := func(map[string]any) { n++ }
		if via == "socket" {
			dialSock(b, s.sock).call("session/attach", `{"sessionId":"`+sid+`","afterSeq":0}`, count)
		} else {
			s.openTab().callSeeing("session/attach", `{"sessionId":"`+sid+`","afterSeq":0}`, count)
		}
		b.Logf("replay of %d updates over the %s: %s", n, via, time.Since(start))
	}
	ctx := browser(b)
	login(b, ctx, s)
	done := `(() => { const a = document.querySelectorAll(".msg.assistant");
		return a.length === 1000 && a[999].textContent.includes("message 999") && performance.now(); })()`
	var total, attach, replay float64
	metrics := func() map[string]float64 { return pageMetrics(ctx) }
	for b.Loop() {
		run(b, ctx, "loading the session", chromedp.Navigate(s.base+"/#s="+sid), chromedp.Reload())
		m0 := metrics()
		ms, err := chromedp.Run(ctx, chromedp.Poll[float64](done, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(60*time.Second)))
		if err != nil {
			b.Fatal(err)
		}
		total += ms
		t, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](`zeroclaw.timings[`+strconv.Quote(sid)+`]`))
		if err != nil {
			b.Fatal(err)
		}
		replay += t["attachEnd"] - t["attachStart"]
		logMetrics(b, m0, metrics())
		attach += t["attachStart"]
	}
	b.ReportMetric(total/float64(b.N), "ms/load")
	b.ReportMetric(attach/float64(b.N), "ms-to-attach")
	b.ReportMetric(replay/float64(b.N), "ms-replay")
}

// BenchmarkBrowserStream20000Chunks: a turn of 20,000 agent_message_chunk updates,
// prompted by another client, shown whole in a tab; the longest main-thread task
// meanwhile, from the page's long-task entries (docs/BENCHMARKS.md, "The web client").
func BenchmarkBrowserStream20000Chunks(b *testing.B) {
	s := newStack(b, "")
	c := dialSock(b, s.sock)
	sid := c.call("session/new", `{"agentAlias":"default"}`, nil)["sessionId"].(string)
	ctx := browser(b)
	login(b, ctx, s)
	run(b, ctx, "opening the session", chromedp.Navigate(s.base+"/#s="+sid), chromedp.Reload(),
		waitJS(`zeroclaw.state() === "connected" && !document.getElementById("input").disabled`))
	var lines []string
	for i := range 4000 { // 20,000 words: the echo provider streams a chunk a word
		lines = append(lines, fmt.Sprintf("line %d of the stream", i))
	}
	prompt := strings.Join(lines, `\n`)
	var worst, worstCPU, chunks float64
	traced := os.Getenv("ZEROCLAW_WEB_TRACE") != ""
	for i := 0; b.Loop(); i++ {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`if (!window.__long) new PerformanceObserver(l => {
				for (const e of l.getEntries()) { __long.push(e.duration); __longAt.push(Math.round(e.startTime)); } }).observe({type: "longtask"});
			window.__long = []; window.__longAt = []; true`))
		if err != nil {
			b.Fatal(err)
		}
		m0 := pageMetrics(ctx)
		before := mustEval[float64](b, ctx, `zeroclaw.counts.agent_message_chunk || 0`)
		endTrace := func() tasks { return tasks{} }
		if traced {
			endTrace = traceTasks(b, ctx)
		}
		c.call("session/prompt", `{"sessionId":"`+sid+`","prompt":"`+prompt+`"}`, nil)
		// The poll is cheap (it runs in the page every 50 ms, and a walk of the whole
		// transcript's text would be a main-thread task of its own): the last reply's
		// undrawn end is empty and its drawn tail holds the last line.
		want := fmt.Sprintf(`(() => { const a = document.querySelectorAll(".msg.assistant"); const v = [...zeroclaw.sessions.values()][0].view;
			return a.length === %d && v.cur && v.cur.shown === v.cur.text.length && a[a.length-1].lastElementChild.textContent.includes("line 3999 of the stream"); })()`, i+1)
		if err := chromedp.Do(ctx, waitJS(want)); err != nil {
			st, _ := eval[string](ctx, `JSON.stringify((() => { const v = [...zeroclaw.sessions.values()][0].view; const c = v.cur;
				return {n: document.querySelectorAll(".msg.assistant").length, dom: [...document.querySelectorAll(".msg.assistant")].map(e => e.textContent.length),
					cur: c && {text: c.text.length, shown: c.shown, cut: c.cut}, dirty: v.dirty.size, pending: v.framePending, lastSeq: [...zeroclaw.sessions.values()][0].lastSeq,
					notes: [...document.querySelectorAll(".note")].map(e => e.textContent), users: document.querySelectorAll(".msg.user").length, counts: zeroclaw.counts}; })())`)
			b.Fatalf("the whole stream shown: %v; %s", err, st)
		}
		long := mustEval[[]float64](b, ctx, `__long`)
		at := mustEval[[]float64](b, ctx, `__longAt`)
		if traced {
			tt := endTrace()
			worstCPU = max(worstCPU, tt.maxCPU)
			b.Logf("traced: %d tasks of the main thread; the longest %.1f ms (%.1f ms of it on the CPU); the most CPU in one %.1f ms; %d over 50 ms, %d over 100 ms",
				tt.n, tt.maxWall, tt.cpuOfLongestWall, tt.maxCPU, tt.over50, tt.over100)
		}
		// Measured; now that it is whole: every line, in order.
		missing := mustEval[float64](b, ctx, `(() => { const a = document.querySelectorAll(".msg.assistant"); const t = a[a.length-1].textContent;
			let at = 0; for (let k = 0; k < 4000; k++) { at = t.indexOf("line " + k + " of the stream", at); if (at < 0) return k; } return -1; })()`)
		if missing >= 0 {
			b.Fatalf("the reply shown lacks line %v of the stream", missing)
		}
		chunks += mustEval[float64](b, ctx, `zeroclaw.counts.agent_message_chunk`) - before
		for _, d := range long {
			worst = max(worst, d)
		}
		logMetrics(b, m0, pageMetrics(ctx))
		b.Logf("tasks over 50 ms (the page's long-task entries): %v ms, at %v ms", long, at)
	}
	b.ReportMetric(chunks/float64(b.N), "chunks/turn")
	b.ReportMetric(mustEval[float64](b, ctx, `zeroclaw.counts.lagged || 0`), "lagged")
	b.ReportMetric(worst, "max-task-ms")
	if traced {
		b.ReportMetric(worstCPU, "max-task-cpu-ms")
	}
}

// pageMetrics are the page's DevTools Performance metrics (seconds of task, script,
// layout and style work so far, and counts).
func pageMetrics(ctx context.Context) map[string]float64 {
	out := map[string]float64{}
	chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		cdp.Call(ctx, tg, performance.Enable, performance.EnableParams{})
		r, err := cdp.Call(ctx, tg, performance.GetMetrics, cdp.Empty{})
		for _, m := range r.Metrics {
			out[m.Name] = m.Value
		}
		return err
	}))
	return out
}

func logMetrics(b *testing.B, m0, m1 map[string]float64) {
	var parts []string
	for _, k := range []string{"TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration", "LayoutCount"} {
		parts = append(parts, fmt.Sprintf("%s %.3f", k, m1[k]-m0[k]))
	}
	b.Logf("DevTools metrics over the run: %s", strings.Join(parts, ", "))
}
