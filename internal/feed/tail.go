package feed

import (
	"sync"

	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// tail is what a session keeps in memory of its recent updates, for the cursors of
// its attached connections to read (delivery.go): one copy of each encoded update,
// however many connections read it. Payloads are copied into blocks that are never
// written again once an entry points into them, so a cursor may hold an entry's
// payload after it released the session's lock; a block is freed once no entry (and
// no cursor) holds it.
//
// Entries leave the front once committed and passed by every cursor, or once the
// tail holds more than maxTailBytes (the store has them by then). Its seqs are
// consecutive updates of the session: when an update is published that the tail
// does not keep (no connection attached), the tail is emptied, so that whatever it
// holds has no gap.
type tail struct {
	// segs hold the kept entries, in seq order, tailSegment to a segment: the i-th
	// kept one is at position head+i of their concatenation. A burst's thousands
	// of entries grow the tail a segment at a time, and the front gives segments
	// back as it leaves them: a slice grown by append left every smaller array
	// behind it (1.1 MB for a turn's 8,000 entries of 256 KB, with 100 watchers:
	// the tail holds the whole turn while they read it).
	segs  []*tailSegment
	head  int    // position of the first kept entry in segs[0]
	n     int    // entries kept
	bytes int    // payload bytes of the kept entries
	block []byte // the block new payloads are copied into
	last  uint64 // the seq of the last payload copied into block
	// retired are the blocks filled before block, oldest first, until they are
	// written again (recycle.go); draining, the connections detached while they
	// may still read frames of its blocks.
	retired  []retiredBlock
	draining []holdMark
}

// tailSegmentLen entries are 16 KiB.
const tailSegmentLen = 512

type tailSegment [tailSegmentLen]tailEntry

// Segments a tail no longer needs go to a pool that the next entries take theirs
// from. They are cleared: the pool holds no update.
var tailSegments = sync.Pool{New: func() any { return new(tailSegment) }}

// at returns the i-th kept entry.
func (t *tail) at(i int) *tailEntry {
	p := t.head + i
	return &t.segs[p/tailSegmentLen][p%tailSegmentLen]
}

// dropFront drops the first kept entry, and gives its segment back once it left it.
func (t *tail) dropFront() {
	*t.at(0) = tailEntry{}
	t.head++
	t.n--
	if t.head == tailSegmentLen {
		tailSegments.Put(t.segs[0])
		n := copy(t.segs, t.segs[1:])
		t.segs[n] = nil
		t.segs, t.head = t.segs[:n], 0
	}
}

// A tailEntry is 32 bytes, a streamed turn appends thousands a second: its params
// are found in its frame, not kept beside it (a 56-byte entry's append was a tenth
// of publishing).
type tailEntry struct {
	seq uint64
	// b is, in the tail, the update's whole NDJSON frame (FrameUpdate), whose
	// capacity runs to the end of its block, so that frames one after the other
	// may be written as one; in a page read from the store (attachment.page), its
	// params alone.
	b []byte
}

// frameOverhead is what a frame holds beyond its params.
const frameOverhead = len(updateFramePrefix) + len(updateFrameSuffix)

// framedPayload returns the params of the update whose frame is f, with no room
// beyond them.
func framedPayload(f []byte) []byte {
	end := len(f) - len(updateFrameSuffix)
	return f[len(updateFramePrefix):end:end]
}

// The NDJSON frame of a session/update notification around its params, as
// jsonrpc frames a notification (TestTheSessionFramesUpdatesAsJSONRPCDoes).
const (
	updateFramePrefix = protocol.UpdateFramePrefix
	updateFrameSuffix = protocol.UpdateFrameSuffix
)

// FrameUpdate appends to dst the NDJSON frame of the session/update notification
// whose params are payload (protocol.FrameUpdate).
func FrameUpdate(dst, payload []byte) []byte { return protocol.FrameUpdate(dst, payload) }

// Sizes of the tail: the bytes it may hold beyond what cursors still need (well
// above one echo turn of 8,000 updates), the block payloads are copied into, and
// the largest payload copied into a block (a larger one gets an allocation of its
// own).
const (
	maxTailBytes   = 2 << 20
	maxTailEntries = 16384
	tailBlock      = 64 << 10
	tailOwnAlloc   = 8 << 10
)

// add keeps a copy of payload, framed (FrameUpdate), as the update seq, and
// returns the copy of payload in it, which is not written again while anything
// may read it. When the block is full, it is retired, and the next one is what
// reuse returns (a retired block nothing reads any more), or a new one when that
// is nil; reuse may be nil.
func (t *tail) add(seq uint64, payload []byte, reuse func() []byte) []byte {
	var f []byte
	if n := len(updateFramePrefix) + len(payload) + len(updateFrameSuffix); n > tailOwnAlloc {
		f = FrameUpdate(make([]byte, 0, n), payload)
	} else {
		if cap(t.block)-len(t.block) < n {
			t.retire()
			if reuse != nil {
				t.block = reuse()
			}
			if t.block == nil {
				t.block = make([]byte, 0, tailBlock)
			}
		}
		start := len(t.block)
		t.block = FrameUpdate(t.block, payload)
		f = t.block[start:len(t.block)]
		t.last = seq
	}
	p := framedPayload(f)
	if pos := t.head + t.n; pos/tailSegmentLen == len(t.segs) {
		t.segs = append(t.segs, tailSegments.Get().(*tailSegment))
	}
	*t.at(t.n) = tailEntry{seq: seq, b: f}
	t.n++
	t.bytes += len(p)
	return p
}

// reset drops everything, the memory included.
func (t *tail) reset() {
	t.releaseSegments()
	*t = tail{}
}

// releaseSegments clears the kept entries and gives every segment back.
func (t *tail) releaseSegments() {
	for t.n > 0 {
		t.dropFront()
	}
	for i, sg := range t.segs {
		tailSegments.Put(sg)
		t.segs[i] = nil
	}
	t.segs, t.head = nil, 0
}

// oldest is the seq of the first entry kept, 0 when none is.
func (t *tail) oldest() uint64 {
	if t.n == 0 {
		return 0
	}
	return t.at(0).seq
}

// newest is the seq of the last entry kept, 0 when none is.
func (t *tail) newest() uint64 {
	if t.n == 0 {
		return 0
	}
	return t.at(t.n - 1).seq
}

// trim drops the entries from the front that are at most committed and either at
// most passed (every cursor has them) or beyond the tail's bounds. Emptied while
// busy (a turn runs: more is coming), it keeps its block and entries for the next
// ones: a cursor that keeps up empties it at every commit, and a new block each
// time was most of a streaming turn's garbage.
func (t *tail) trim(committed, passed uint64, busy bool) {
	for t.n > 0 {
		e := t.at(0)
		if e.seq > committed {
			break
		}
		if e.seq > passed && t.bytes <= maxTailBytes && t.n <= maxTailEntries {
			break
		}
		t.bytes -= len(e.b) - frameOverhead
		t.dropFront()
	}
	if t.n == 0 {
		t.bytes = 0
		if !busy {
			t.releaseSegments() // a burst is over: an idle session keeps little
			t.retire()          // an idle tail keeps no block (recycle.go: spareLocked)
		}
	}
}

// after appends to dst the entries with after < seq <= upTo, at most max of them,
// and reports false (appending nothing) when the tail does not hold the update
// right after after: it is older than the tail, and the store has it.
func (t *tail) after(after, upTo uint64, dst []tailEntry, max int) ([]tailEntry, bool) {
	if t.n == 0 || t.at(0).seq > after+1 {
		return dst, false
	}
	// Seqs in a tail are consecutive: the next one is at its offset from the first.
	i := int(after + 1 - t.at(0).seq)
	if i >= t.n || t.at(i).seq > upTo {
		return dst, false
	}
	for ; i < t.n && len(dst) < max; i++ {
		e := t.at(i)
		if e.seq > upTo {
			break
		}
		dst = append(dst, *e)
	}
	return dst, true
}
