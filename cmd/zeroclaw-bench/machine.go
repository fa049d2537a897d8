//go:build linux

package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// raiseNoFile raises this process's open-file limit to its hard limit. Children
// inherit it: the Go runtime restores the original soft limit for them only while
// the program has not set the limit itself.
func raiseNoFile(need uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Max < need {
		return fmt.Errorf("the hard limit of open files is %d, below the %d this run needs (lower --idle-conns)", lim.Max, need)
	}
	lim.Cur = lim.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

func currentNoFile() uint64 {
	var lim syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	return lim.Cur
}

// loadAverage returns the first three fields of /proc/loadavg: other work on the
// machine is the main source of noise in these figures.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// Wake probe (wakeLatency): samples, and how long everything idles before each and
// its starter keeps its processor busy.
const (
	wakeSamples = 100
	wakeIdle    = 2 * time.Millisecond
	wakeBusy    = 3 * time.Millisecond
)

// wakeLatency measures how long a new goroutine waits to start while the goroutine
// that started it keeps its processor busy, after everything idled: how long the
// machine takes to put an idle CPU back to work. Each of the daemon's turns starts
// so (the turn, the replay log's writer and the connection's writer are a pipeline
// of goroutines that needs a second CPU), and so does a client reading its stream.
// On a quiet machine of its own it is tens of µs; on a VM whose host deschedules
// idle vCPUs it reached milliseconds (docs/BENCHMARKS.md), and the stream figures
// swing with it. A goroutine that has not started when its starter stops being
// busy starts then: wakeBusy is the most it can measure.
func wakeLatency() percentiles {
	lat := make(latencies, 0, wakeSamples)
	started := make(chan time.Time, 1)
	for range wakeSamples {
		time.Sleep(wakeIdle)
		t0 := time.Now()
		go func() { started <- time.Now() }()
		for end := t0.Add(wakeBusy); time.Now().Before(end); {
		}
		lat = append(lat, (<-started).Sub(t0))
	}
	slices.Sort(lat)
	return summarize(lat)
}
