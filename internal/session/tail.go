package session

import "sync"

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
	entries []tailEntry // entries[head:] are kept, in seq order
	head    int
	bytes   int    // payload bytes of the kept entries
	block   []byte // the block new payloads are copied into
	last    uint64 // the seq of the last payload copied into block
	// retired are the blocks filled before block, oldest first, until they are
	// written again (recycle.go); draining, the connections detached while they
	// may still read frames of its blocks.
	retired  []retiredBlock
	draining []holdMark
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
	updateFramePrefix = `{"jsonrpc":"2.0","method":"session/update","params":`
	updateFrameSuffix = "}\n"
)

// FrameUpdate appends to dst the NDJSON frame of the session/update notification
// whose params are payload.
func FrameUpdate(dst, payload []byte) []byte {
	return append(append(append(dst, updateFramePrefix...), payload...), updateFrameSuffix...)
}

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
	if t.head > 0 && t.head >= len(t.entries)/2 { // compact: the front is mostly gone
		n := copy(t.entries, t.entries[t.head:])
		clear(t.entries[n:])
		t.entries, t.head = t.entries[:n], 0
	}
	if t.entries == nil {
		t.entries = getEntries()
	}
	t.entries = append(t.entries, tailEntry{seq: seq, b: f})
	t.bytes += len(p)
	return p
}

// reset drops everything, the memory included.
func (t *tail) reset() {
	if cap(t.entries) > 1024 {
		clear(t.entries[t.head:])
		putEntries(t.entries)
	}
	*t = tail{}
}

// Entry arrays of more than 1,024 entries that a session's tail no longer needs
// (its burst is over) go to a pool that the next streaming tail takes its array
// from: grown again from nothing by doubling for every streamed turn, the array was
// a tenth of a turn's publishing. An idle session keeps none. Their entries are
// cleared: the pool holds no update.
var entryArrays sync.Pool

func putEntries(e []tailEntry) { entryArrays.Put(&e) }

func getEntries() []tailEntry {
	if p, ok := entryArrays.Get().(*[]tailEntry); ok {
		return (*p)[:0]
	}
	return nil
}

// oldest is the seq of the first entry kept, 0 when none is.
func (t *tail) oldest() uint64 {
	if t.head == len(t.entries) {
		return 0
	}
	return t.entries[t.head].seq
}

// trim drops the entries from the front that are at most committed and either at
// most passed (every cursor has them) or beyond the tail's bounds. Emptied while
// busy (a turn runs: more is coming), it keeps its block and entries for the next
// ones: a cursor that keeps up empties it at every commit, and a new block each
// time was most of a streaming turn's garbage.
func (t *tail) trim(committed, passed uint64, busy bool) {
	for t.head < len(t.entries) {
		e := t.entries[t.head]
		if e.seq > committed {
			break
		}
		kept := len(t.entries) - t.head
		if e.seq > passed && t.bytes <= maxTailBytes && kept <= maxTailEntries {
			break
		}
		t.bytes -= len(e.b) - frameOverhead
		t.entries[t.head] = tailEntry{}
		t.head++
	}
	if t.head == len(t.entries) {
		t.entries, t.head, t.bytes = t.entries[:0], 0, 0
		if !busy {
			if cap(t.entries) > 1024 {
				putEntries(t.entries) // a burst is over: an idle session keeps little
				t.entries = nil
			}
			t.retire() // an idle tail keeps no block (recycle.go: spareLocked)
		}
	}
}

// after appends to dst the entries with after < seq <= upTo, at most max of them,
// and reports false (appending nothing) when the tail does not hold the update
// right after after: it is older than the tail, and the store has it.
func (t *tail) after(after, upTo uint64, dst []tailEntry, max int) ([]tailEntry, bool) {
	kept := t.entries[t.head:]
	if len(kept) == 0 || kept[0].seq > after+1 {
		return dst, false
	}
	// Seqs in a tail are consecutive: the next one is at its offset from the first.
	i := int(after + 1 - kept[0].seq)
	if i >= len(kept) || kept[i].seq > upTo {
		return dst, false
	}
	for ; i < len(kept) && kept[i].seq <= upTo && len(dst) < max; i++ {
		dst = append(dst, kept[i])
	}
	return dst, true
}
