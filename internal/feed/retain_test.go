package feed

import (
	"testing"
	"time"
)

// A cursor's backlog is what was published after its sent, known to within
// markEvery updates, never less.
func TestTheBacklogIsWhatWasPublishedAfterACursor(t *testing.T) {
	var r retention
	for seq := uint64(1); seq <= 10*markEvery; seq++ {
		r.published(seq, 100)
	}
	for _, sent := range []uint64{0, 1, markEvery - 1, markEvery, 5*markEvery + 7, 10 * markEvery} {
		exact := (10*markEvery - sent) * 100
		got := r.backlog(sent)
		if got < exact || got > exact+markEvery*100 {
			t.Errorf("backlog after %d: %d, want %d to %d", sent, got, exact, exact+markEvery*100)
		}
	}
	r.prune(5 * markEvery)
	if got, exact := r.backlog(5*markEvery+7), uint64(5*markEvery-7)*100; got < exact || got > exact+markEvery*100 {
		t.Errorf("after pruning, the backlog after %d is %d, want about %d", 5*markEvery+7, got, exact)
	}
	if r.marks[0].seq > 5*markEvery+1 {
		t.Errorf("pruning dropped the mark a reader at %d needs: the first is %d", 5*markEvery, r.marks[0].seq)
	}
}

// The feed holds what its attached cursors have not been sent, and a lagged
// connection's afterSeq for RecoverFor, which a second lag at the same seq does not
// extend; an attach's pin holds until it is removed.
func TestTheFeedHoldsWhatItsReadersNeed(t *testing.T) {
	f := &Feed{hub: &Hub{recoverFor: time.Minute}}
	now := time.Now()
	if _, held := f.retainAfterLocked(now); held {
		t.Fatal("a feed with no reader holds")
	}
	f.subs = []*attachment{{f: f, sent: 500}, {f: f, sent: 300}, {f: f, sent: 100, gone: true}}
	if after, held := f.retainAfterLocked(now); !held || after != 300 {
		t.Fatalf("two cursors at 500 and 300: held %v after %d", held, after)
	}
	f.holdLocked(200) // lagged at 200
	f.subs = nil
	if after, held := f.retainAfterLocked(now.Add(59 * time.Second)); !held || after != 200 {
		t.Fatalf("59 s after a lag at 200: held %v after %d", held, after)
	}
	f.holdLocked(200) // lagged again there, having read nothing
	if _, held := f.retainAfterLocked(now.Add(61 * time.Second)); held {
		t.Fatal("a second lag at the same afterSeq extended the hold past RecoverFor")
	}
	f.pin(50)
	if after, held := f.retainAfterLocked(now.Add(time.Hour)); !held || after != 50 {
		t.Fatalf("a pin: held %v after %d", held, after)
	}
	f.unpin(50)
	if _, held := f.retainAfterLocked(now.Add(time.Hour)); held {
		t.Fatal("an unpinned attach still holds")
	}
}
