package store

import (
	"context"
	"fmt"
	"testing"
)

// A hold spares from the trim to the newest Keep every update after its seq; once
// no hold names the session, the next append trims it.
func TestAHoldSparesTheUpdatesReadersNeed(t *testing.T) {
	st, err := Open(t.TempDir()+"/s.db", Options{Keep: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.CreateSession(ctx, Session{ID: "s", Owner: "o", Agent: "a", Workspace: "/w"}); err != nil {
		t.Fatal(err)
	}
	oldest := func() uint64 {
		t.Helper()
		o, err := st.Updates(ctx, "s", 0, func(Update) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	seq := uint64(0)
	appendN := func(n int, holds []Hold) {
		t.Helper()
		batch := make([]Update, n)
		for i := range batch {
			seq++
			batch[i] = Update{SessionID: "s", Seq: seq, Payload: fmt.Appendf(nil, `{"seq":%d,"type":"x"}`, seq)}
		}
		if err := st.AppendUpdatesHeld(ctx, batch, holds); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		appendN(50, []Hold{{SessionID: "other", After: 0}, {SessionID: "s", After: 40}})
	}
	if o := oldest(); o > 41 {
		t.Fatalf("held after 40, the oldest kept is %d of %d", o, seq)
	}
	appendN(50, []Hold{{SessionID: "s", After: 700}})
	if o := oldest(); o > 701 || o < 600 {
		t.Fatalf("held after 700, the oldest kept is %d of %d", o, seq)
	}
	appendN(50, nil)
	if o := oldest(); seq-o+1 < 100 || seq-o+1 > 100+100/16+50 {
		t.Fatalf("with no hold, %d of %d are kept", seq-o+1, seq)
	}
}
