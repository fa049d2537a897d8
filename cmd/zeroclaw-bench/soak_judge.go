//go:build linux

package main

import (
	"fmt"
	"slices"
)

// growthCheck compares a resource after the warm-up (the middle third of the
// samples) with the end (the last third): the highest sample of each, and the
// limit the end must stay under, the warm-up's figure plus 10% plus a slack. A
// steady leak shows: growing by k a sample, the end's peak is the middle's plus a
// third of the run's k's. The first third is the warm-up itself: caches filling,
// the first sessions.
type growthCheck struct {
	Resource string  `json:"resource"`
	Early    float64 `json:"after_warmup_max"`
	Late     float64 `json:"end_max"`
	Limit    float64 `json:"limit"`
	Grew     bool    `json:"grew"`
}

// growthSlack is what a resource may vary by from one daemon life to the next
// whatever the load: the heap's next step, a few more connections' buffers.
var growthSlack = map[string]float64{
	"rss_kib":    48 << 10,
	"fds":        64,
	"goroutines": 200,
	"wal_bytes":  8 << 20,
	"data_bytes": 16 << 20,
}

// walCeiling is the WAL the store promises never to exceed under continuous load
// (docs/protocol.md: 8 MiB plus one turn's writes), with a turn's writes generous.
const walCeiling = 16 << 20

func (r *soakReport) judge() {
	if r.RowsLost > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d acknowledged rows lost", r.RowsLost))
	}
	if r.Counts["turns acknowledged"] == 0 {
		r.Failures = append(r.Failures, "no turn was acknowledged: the soak did no work")
	}
	if n := r.Counts["no recovery after the disk was freed"]; n > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d times the daemon did not work again within 30 s of the disk being freed", n))
	}
	if len(r.Samples) < 6 {
		r.Failures = append(r.Failures, fmt.Sprintf("only %d resource samples: too few to judge growth", len(r.Samples)))
	} else {
		third := len(r.Samples) / 3
		mid, end := r.Samples[third:2*third], r.Samples[2*third:]
		for _, res := range []string{"rss_kib", "fds", "goroutines", "wal_bytes", "data_bytes"} {
			g := growthCheck{Resource: res, Early: maxOf(mid, res), Late: maxOf(end, res)}
			g.Limit = g.Early*1.1 + growthSlack[res]
			g.Grew = g.Late > g.Limit
			if g.Grew {
				r.Failures = append(r.Failures, fmt.Sprintf("%s grew from %.0f after the warm-up to %.0f at the end (limit %.0f)", res, g.Early, g.Late, g.Limit))
			}
			r.Growth = append(r.Growth, g)
		}
	}
	for _, smp := range r.Samples {
		if smp.WALBytes > walCeiling {
			r.Failures = append(r.Failures, fmt.Sprintf("the WAL reached %d bytes at %.0f s (ceiling %d)", smp.WALBytes, smp.At, walCeiling))
			break
		}
	}
	r.Pass = len(r.Failures) == 0
}

func maxOf(samples []soakSample, resource string) float64 {
	vals := make([]float64, 0, len(samples))
	for _, s := range samples {
		vals = append(vals, float64(map[string]int64{
			"rss_kib": s.RSSKiB, "fds": s.FDs, "goroutines": s.Goroutines, "wal_bytes": s.WALBytes, "data_bytes": s.DataBytes,
		}[resource]))
	}
	return slices.Max(vals)
}
