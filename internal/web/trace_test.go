//go:build unix

package web_test

import (
	"context"
	"encoding/json/v2"
	"os"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"
)

// traceEvent is one DevTools trace event, as much of it as the benchmarks read.
type traceEvent struct {
	Name string         `json:"name"`
	Ph   string         `json:"ph"`
	Pid  int64          `json:"pid"`
	Tid  int64          `json:"tid"`
	Ts   float64        `json:"ts"`   // µs
	Dur  float64        `json:"dur"`  // µs, wall
	TDur float64        `json:"tdur"` // µs, the thread's CPU time
	Args map[string]any `json:"args"`
}

// tasks are the main thread's tasks of a page, from a trace.
type tasks struct {
	n                int
	maxWall, maxCPU  float64 // ms
	over50, over100  int     // tasks whose wall time passed 50 and 100 ms
	cpuOfLongestWall float64 // ms: what the longest one (wall) ran on the CPU
}

// traceTasks records the page's trace from now until the returned func is called,
// which sums up the tasks of its renderer's main thread: their wall and CPU time,
// the CPU time telling a task's own work from the time a busy machine kept it off
// a CPU. Tracing slows the browser (a streamed turn took three times as long), so
// the benchmarks trace only when ZEROCLAW_WEB_TRACE is set; with
// ZEROCLAW_WEB_TRACE_FILE=file they record every timeline category too and write
// the raw events to file, to see inside the tasks.
func traceTasks(tb testing.TB, ctx context.Context) func() tasks {
	file := os.Getenv("ZEROCLAW_WEB_TRACE_FILE")
	cats := []string{"toplevel", "__metadata"}
	if file != "" {
		cats = append(cats, "devtools.timeline", "disabled-by-default-devtools.timeline", "v8", "v8.execute", "blink", "disabled-by-default-v8.gc")
	}
	var mu sync.Mutex
	var raw []jsonRaw
	done := make(chan struct{})
	lctx, stopListening := context.WithCancel(ctx)
	chromedp.Listen(lctx, func(ev any) {
		switch e := ev.(type) {
		case *tracing.EventDataCollected:
			mu.Lock()
			for _, v := range e.Value {
				raw = append(raw, append(jsonRaw(nil), v...))
			}
			mu.Unlock()
		case *tracing.EventTracingComplete:
			close(done)
		}
	})
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, tracing.Start, tracing.StartParams{TransferMode: tracing.StartTransferModeReportEvents,
			TraceConfig: &tracing.TraceConfig{IncludedCategories: cats}})
		return err
	}))
	if err != nil {
		tb.Fatalf("starting a trace: %v", err)
	}
	return func() tasks {
		defer stopListening()
		err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, tracing.End, cdp.Empty{})
			return err
		}))
		if err != nil {
			tb.Fatalf("ending a trace: %v", err)
		}
		select {
		case <-done:
		case <-ctx.Done():
			tb.Fatal(ctx.Err())
		}
		mu.Lock()
		defer mu.Unlock()
		if file != "" {
			f, err := os.Create(file)
			if err != nil {
				tb.Fatal(err)
			}
			f.WriteString("[")
			for i, e := range raw {
				if i > 0 {
					f.WriteString(",\n")
				}
				f.Write(e)
			}
			f.WriteString("]")
			f.Close()
		}
		evs := make([]traceEvent, 0, len(raw))
		main := map[[2]int64]bool{}
		for _, r := range raw {
			var e traceEvent
			if json.Unmarshal(r, &e) != nil {
				continue
			}
			if e.Ph == "M" && e.Name == "thread_name" && e.Args["name"] == "CrRendererMain" {
				main[[2]int64{e.Pid, e.Tid}] = true
			}
			evs = append(evs, e)
		}
		var t tasks
		for _, e := range evs {
			if e.Ph != "X" || e.Name != "ThreadControllerImpl::RunTask" || !main[[2]int64{e.Pid, e.Tid}] {
				continue
			}
			t.n++
			wall, cpu := e.Dur/1e3, e.TDur/1e3
			if wall > t.maxWall {
				t.maxWall, t.cpuOfLongestWall = wall, cpu
			}
			t.maxCPU = max(t.maxCPU, cpu)
			if wall > 50 {
				t.over50++
			}
			if wall > 100 {
				t.over100++
			}
		}
		if t.n == 0 {
			tb.Fatal("the trace holds no task of the page's main thread")
		}
		return t
	}
}

type jsonRaw []byte
