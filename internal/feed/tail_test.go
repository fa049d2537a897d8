package feed

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"
)

// TestTheTailKeepsWhatCursorsNeedAndDropsWhatTheyPassed: entries leave the front
// once committed and passed by every cursor, or once the tail is over its bound,
// and never before they are committed; after answers from memory only what follows
// a seq without a gap.
func TestTheTailKeepsWhatCursorsNeedAndDropsWhatTheyPassed(t *testing.T) {
	var tl tail
	for seq := uint64(101); seq <= 200; seq++ {
		tl.add(seq, fmt.Appendf(nil, `{"seq":%d}`, seq), nil)
	}
	got, ok := tl.after(149, 160, nil, 5)
	if !ok || len(got) != 5 || got[0].seq != 150 || string(framedPayload(got[4].b)) != `{"seq":154}` {
		t.Fatalf("after(149): %v %+v", ok, got)
	}
	if got, ok := tl.after(99, 200, nil, 5); ok || len(got) != 0 {
		t.Fatalf("after(99), older than the tail: %v %+v", ok, got)
	}
	if got, ok := tl.after(100, 120, nil, 100); !ok || len(got) != 20 || got[19].seq != 120 {
		t.Fatalf("after(100) up to 120: %v, %d entries", ok, len(got))
	}
	tl.trim(150, 180, false) // committed up to 150, every cursor past 180
	if tl.oldest() != 151 {
		t.Fatalf("after trimming up to the committed 150, the oldest kept is %d", tl.oldest())
	}
	tl.trim(200, 170, false)
	if tl.oldest() != 171 {
		t.Fatalf("after trimming to the cursors' 170, the oldest kept is %d", tl.oldest())
	}
	big := make([]byte, tailOwnAlloc+1)
	for seq := uint64(201); tl.bytes <= maxTailBytes; seq++ {
		tl.add(seq, big, nil)
	}
	last := tl.newest()
	tl.trim(last-1, 170, false) // a cursor far behind: the bound wins, the uncommitted stay
	if tl.bytes > maxTailBytes+len(big) || tl.oldest() <= 171 {
		t.Fatalf("over its bound the tail keeps %d bytes from %d", tl.bytes, tl.oldest())
	}
	if got, ok := tl.after(last-1, last, nil, 1); !ok || got[0].seq != last {
		t.Fatalf("the uncommitted last entry is gone: %v %+v", ok, got)
	}
	tl.trim(last, last, false)
	if tl.oldest() != 0 || tl.bytes != 0 {
		t.Fatalf("everything committed and passed, the tail keeps %d bytes from %d", tl.bytes, tl.oldest())
	}
}

// TestATailEmptiedDuringATurnKeepsItsBlock: a cursor that keeps up empties the
// tail at every commit; during a turn the tail then goes on in the block it has,
// and once idle it keeps nothing.
func TestATailEmptiedDuringATurnKeepsItsBlock(t *testing.T) {
	var tl tail
	tl.add(1, []byte(`{"seq":1}`), nil)
	block := &tl.block[:1][0]
	tl.trim(1, 1, true)
	if tl.oldest() != 0 || tl.block == nil {
		t.Fatalf("emptied during a turn: oldest %d, block kept %v", tl.oldest(), tl.block != nil)
	}
	tl.add(2, []byte(`{"seq":2}`), nil)
	if &tl.block[:1][0] != block {
		t.Fatal("the next update went to a new block")
	}
	if got, ok := tl.after(1, 2, nil, 1); !ok || string(framedPayload(got[0].b)) != `{"seq":2}` {
		t.Fatalf("after(1): %v %+v", ok, got)
	}
	tl.trim(2, 2, false)
	if tl.block != nil || tl.segs != nil {
		t.Fatal("an idle tail keeps its block")
	}
}

// TestATailGrowsAndShrinksBySegments: a burst's entries take memory a segment at a
// time (a slice grown by append allocated four times what it held), a cursor reads
// across the segments' edges, and the front gives back the segments it left.
func TestATailGrowsAndShrinksBySegments(t *testing.T) {
	const n = 8000
	payload := []byte(`{"sessionId":"sess_0123456789abcdef","type":"agent_message_chunk","text":"word "}`)
	var tl tail
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for seq := uint64(1); seq <= n; seq++ {
		tl.add(seq, payload, nil)
	}
	runtime.ReadMemStats(&after)
	frames := n * (len(payload) + frameOverhead)
	blocks := (frames/(tailBlock-len(payload)-frameOverhead) + 1) * tailBlock
	segments := (n/tailSegmentLen + 1) * int(unsafe.Sizeof(tailSegment{}))
	if got, most := int(after.TotalAlloc-before.TotalAlloc), blocks+segments+64<<10; got > most {
		t.Fatalf("%d entries allocated %d bytes, more than their blocks and segments (%d)", n, got, most)
	}
	for _, from := range []uint64{0, tailSegmentLen - 2, 2*tailSegmentLen - 1, n - 3} {
		got, ok := tl.after(from, n, nil, 5)
		if !ok || len(got) != min(5, int(n-from)) {
			t.Fatalf("after(%d): %v, %d entries", from, ok, len(got))
		}
		for i, e := range got {
			if e.seq != from+1+uint64(i) || string(framedPayload(e.b)) != string(payload) {
				t.Fatalf("after(%d): entry %d is seq %d %q", from, i, e.seq, framedPayload(e.b))
			}
		}
	}
	tl.trim(n, 3*tailSegmentLen+10, true)
	if tl.oldest() != 3*tailSegmentLen+11 || len(tl.segs) != (n-1)/tailSegmentLen+1-3 {
		t.Fatalf("passed up to %d: oldest %d, %d segments", 3*tailSegmentLen+10, tl.oldest(), len(tl.segs))
	}
	tl.trim(n, n, true)
	if tl.oldest() != 0 || len(tl.segs) != 1 || tl.bytes != 0 {
		t.Fatalf("emptied during a turn: oldest %d, %d segments, %d bytes", tl.oldest(), len(tl.segs), tl.bytes)
	}
	tl.add(n+1, payload, nil)
	if got, ok := tl.after(n, n+1, nil, 5); !ok || len(got) != 1 || got[0].seq != n+1 {
		t.Fatalf("after the tail emptied, after(%d): %v %+v", n, ok, got)
	}
	tl.trim(n+1, n+1, false)
	if tl.segs != nil || tl.head != 0 || tl.n != 0 {
		t.Fatalf("an idle tail keeps %d segments", len(tl.segs))
	}
}
