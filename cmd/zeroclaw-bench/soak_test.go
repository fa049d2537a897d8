//go:build linux

package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestShortSoakLosesNothingAndStaysFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("a 25 s soak")
	}
	o := soakOptions{Zeroclaw: zeroclawBin, Duration: 25 * time.Second, KillEvery: 8 * time.Second,
		FillEvery: 6 * time.Second, SampleEvery: 500 * time.Millisecond, TmpfsMiB: 96}
	var log strings.Builder
	r, err := runSoak(context.Background(), o, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	r.summarize(&log)
	if !r.Pass {
		t.Fatalf("the soak failed: %v\n%s", r.Failures, log.String())
	}
	if r.Kills < 3 || r.Verifications < 3 || r.RowsAcknowledged == 0 || r.RowsLost != 0 {
		t.Errorf("kills %d, verifications %d, rows %d acknowledged %d lost\n%s",
			r.Kills, r.Verifications, r.RowsAcknowledged, r.RowsLost, log.String())
	}
	for _, c := range []string{"turns acknowledged", "attaches", "uploads committed", "config writes acknowledged",
		"mcp crashes asked", "rows verified"} {
		if r.Counts[c] == 0 {
			t.Errorf("no %s in the soak\n%s", c, log.String())
		}
	}
	if r.Tmpfs && r.DiskFills == 0 {
		t.Errorf("a tmpfs but no disk fill\n%s", log.String())
	}
	if !r.Tmpfs {
		t.Logf("no tmpfs: %v", r.Notes)
	}
}

func TestSoakJudgeFailsOnLossAndOnGrowth(t *testing.T) {
	flat := func() []soakSample {
		var s []soakSample
		for i := range 30 {
			s = append(s, soakSample{At: float64(i), RSSKiB: 40 << 10, FDs: 30, Goroutines: 25, WALBytes: 1 << 20, DataBytes: 8 << 20})
		}
		return s
	}
	ok := &soakReport{Samples: flat(), RowsAcknowledged: 100, Counts: map[string]int{"turns acknowledged": 50}}
	ok.judge()
	if !ok.Pass {
		t.Fatalf("a flat, lossless run failed: %v", ok.Failures)
	}

	lost := &soakReport{Samples: flat(), RowsAcknowledged: 100, RowsLost: 1, Counts: map[string]int{"turns acknowledged": 50}}
	lost.judge()
	if lost.Pass || !strings.Contains(strings.Join(lost.Failures, ";"), "1 acknowledged rows lost") {
		t.Errorf("a lost row passed: %v", lost.Failures)
	}

	leak := &soakReport{Samples: flat(), RowsAcknowledged: 100, Counts: map[string]int{"turns acknowledged": 50}}
	for i := range leak.Samples {
		leak.Samples[i].FDs = int64(30 + 10*i) // a descriptor leak: 10 more every sample
	}
	leak.judge()
	if leak.Pass || !strings.Contains(strings.Join(leak.Failures, ";"), "fds grew") {
		t.Errorf("growing fds passed: %v", leak.Failures)
	}

	wal := &soakReport{Samples: flat(), RowsAcknowledged: 100, Counts: map[string]int{"turns acknowledged": 50}}
	wal.Samples[3].WALBytes = 40 << 20
	wal.judge()
	if wal.Pass {
		t.Error("a WAL past its ceiling passed")
	}

	idle := &soakReport{Samples: flat(), Counts: map[string]int{}}
	idle.judge()
	if idle.Pass {
		t.Error("a soak that acknowledged no turn passed")
	}
	idle.summarize(io.Discard)
}
