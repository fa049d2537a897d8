package session

import (
	"fmt"
	"testing"
)

// TestTheTailKeepsWhatCursorsNeedAndDropsWhatTheyPassed: entries leave the front
// once committed and passed by every cursor, or once the tail is over its bound,
// and never before they are committed; after answers from memory only what follows
// a seq without a gap.
func TestTheTailKeepsWhatCursorsNeedAndDropsWhatTheyPassed(t *testing.T) {
	var tl tail
	for seq := uint64(101); seq <= 200; seq++ {
		tl.add(seq, fmt.Appendf(nil, `{"seq":%d}`, seq))
	}
	got, ok := tl.after(149, 160, nil, 5)
	if !ok || len(got) != 5 || got[0].seq != 150 || string(got[4].payload) != `{"seq":154}` {
		t.Fatalf("after(149): %v %+v", ok, got)
	}
	if got, ok := tl.after(99, 200, nil, 5); ok || len(got) != 0 {
		t.Fatalf("after(99), older than the tail: %v %+v", ok, got)
	}
	if got, ok := tl.after(100, 120, nil, 100); !ok || len(got) != 20 || got[19].seq != 120 {
		t.Fatalf("after(100) up to 120: %v, %d entries", ok, len(got))
	}
	tl.trim(150, 180) // committed up to 150, every cursor past 180
	if tl.oldest() != 151 {
		t.Fatalf("after trimming up to the committed 150, the oldest kept is %d", tl.oldest())
	}
	tl.trim(200, 170)
	if tl.oldest() != 171 {
		t.Fatalf("after trimming to the cursors' 170, the oldest kept is %d", tl.oldest())
	}
	big := make([]byte, tailOwnAlloc+1)
	for seq := uint64(201); tl.bytes <= maxTailBytes; seq++ {
		tl.add(seq, big)
	}
	last := tl.entries[len(tl.entries)-1].seq
	tl.trim(last-1, 170) // a cursor far behind: the bound wins, the uncommitted stay
	if tl.bytes > maxTailBytes+len(big) || tl.oldest() <= 171 {
		t.Fatalf("over its bound the tail keeps %d bytes from %d", tl.bytes, tl.oldest())
	}
	if got, ok := tl.after(last-1, last, nil, 1); !ok || got[0].seq != last {
		t.Fatalf("the uncommitted last entry is gone: %v %+v", ok, got)
	}
	tl.trim(last, last)
	if tl.oldest() != 0 || tl.bytes != 0 {
		t.Fatalf("everything committed and passed, the tail keeps %d bytes from %d", tl.bytes, tl.oldest())
	}
}
