package feed

import (
	"io"
	"log/slog"
	"testing"
	"time"
)

// lagRecorder is a Subscriber that records the Lagged notices it is told.
type lagRecorder struct {
	holder
	lagged []uint64
}

func (r *lagRecorder) Lagged(_ string, afterSeq uint64) { r.lagged = append(r.lagged, afterSeq) }

// A cursor detached as lagged is counted once through Options.OnLagged, as its
// connection is told; a lag that an attach overtook (another gen) counts nothing.
func TestALagIsCountedOnceWhereTheCursorIsDetached(t *testing.T) {
	lags := 0
	h := &Hub{log: slog.New(slog.NewTextHandler(io.Discard, nil)), recoverFor: time.Minute,
		onLagged: func() { lags++ }}
	f := &Feed{hub: h, id: "s"}
	r := &lagRecorder{}
	a := &attachment{f: f, sub: r, sent: 7, gen: 1}
	f.subs = []*attachment{a}
	f.lag(a, 0) // an attach moved it since: it goes on from there
	if lags != 0 || len(r.lagged) != 0 || len(f.subs) != 1 {
		t.Fatalf("a stale lag counted %d and told %v", lags, r.lagged)
	}
	f.lag(a, 1)
	if lags != 1 || len(r.lagged) != 1 || r.lagged[0] != 7 || len(f.subs) != 0 {
		t.Fatalf("a lag counted %d, told %v, left %d cursors", lags, r.lagged, len(f.subs))
	}
	f.lag(a, 1) // already gone
	if lags != 1 {
		t.Fatalf("a cursor already detached was counted again: %d", lags)
	}
}
