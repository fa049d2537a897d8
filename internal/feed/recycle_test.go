package feed

import (
	"encoding/json/jsontext"
	"fmt"
	"runtime"
	"testing"
)

func numGC() uint32 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.NumGC
}

// holder is a Subscriber whose connection holds the frames it is handed until the
// test releases them (frameHolder); plain makes one that does not tell.
type holder struct{ queued, released uint64 }

func (h *holder) Deliver(u []jsontext.Value, f [][]byte) (int, error) { return len(u), nil }
func (h *holder) Want(Puller) error                                   { return nil }
func (h *holder) Lagged(string, uint64)                               {}
func (h *holder) PacedBytes() (uint64, uint64)                        { return h.queued, h.released }

type plain struct{ holder }

func (p *plain) PacedBytes() {} // not a frameHolder's

// streamed publishes n updates of 100 bytes into s's tail, each committed and
// passed by every cursor at once, and returns the first byte of each block the
// tail filled, in order.
func streamed(f *Feed, n int) []*byte {
	var blocks []*byte
	payload := make([]byte, 100)
	for range n {
		seq := f.seq + 1
		f.seq = seq
		copy(payload, fmt.Sprintf(`{"seq":%d}`, seq))
		before := f.tail.block
		f.tail.add(seq, payload, f.reusableBlockLocked)
		if len(before) == 0 || &f.tail.block[:1][0] != &before[:1][0] {
			blocks = append(blocks, &f.tail.block[:1][0])
		}
		f.committed = seq
		for _, a := range f.subs {
			a.sent = seq
		}
		f.trimTailLocked()
	}
	return blocks
}

// TestABlockIsWrittenAgainOnlyOnceItsConnectionsReleasedIt: a full block of the
// tail is written again once no entry of it is left, and only after the connection
// that may hold its frames wrote them (PacedBytes); an idle tail's blocks go to the
// spares, and a subscriber that does not tell stops all of it.
func TestABlockIsWrittenAgainOnlyOnceItsConnectionsReleasedIt(t *testing.T) {
	h := &holder{queued: 1}
	f := &Feed{busy: true}
	a := &attachment{f: f, sub: h}
	f.subs = []*attachment{a}
	perBlock := tailBlock / (len(updateFramePrefix) + 100 + len(updateFrameSuffix))
	first := streamed(f, 4*perBlock)
	if len(first) != 4 {
		t.Fatalf("%d blocks for 4 blocks' worth of updates", len(first))
	}
	held := map[*byte]bool{}
	for _, b := range first {
		held[b] = true
	}
	for _, b := range streamed(f, 2*perBlock) {
		if held[b] {
			t.Fatal("a block was written again while its connection held its frames")
		}
	}
	h.released = h.queued
	again := streamed(f, 2*perBlock)
	if len(again) != 2 || again[0] != first[0] || again[1] != first[1] {
		t.Fatalf("once released, the next blocks are not the first ones written again: %v, %v", again, first[:2])
	}

	// Idle, the tail keeps no block: they are spares, for any tail, once released.
	for spares.Get() != nil { // what earlier tests left there
	}
	spared := map[*byte]bool{&f.tail.block[:1][0]: true}
	for _, r := range f.tail.retired {
		spared[&r.buf[:1][0]] = true
	}
	f.busy = false
	f.trimTailLocked()
	if f.tail.block != nil || len(f.tail.retired) != 0 {
		t.Fatal("an idle tail keeps its blocks")
	}
	h.released = h.queued + 1 // what it held then is written
	h.queued += 2
	f.busy = true
	gcs := numGC()
	reused := 0
	for _, b := range streamed(f, 2*perBlock) {
		if spared[b] {
			reused++
		}
	}
	if reused == 0 && numGC() < gcs+2 { // two collections empty the pool
		t.Fatal("no spare block was written again")
	}

	// A connection detached while it holds frames of the block being filled is
	// waited for all the same.
	h.released = h.queued
	h2 := &holder{queued: 5}
	c := &attachment{f: f, sub: h2}
	f.subs = append(f.subs, c)
	streamed(f, perBlock/2)
	filling := &f.tail.block[:1][0]
	f.removeLocked(c)
	for _, x := range streamed(f, 4*perBlock) {
		if x == filling {
			t.Fatal("a block was written again while a detached connection held its frames")
		}
	}
	h2.released = h2.queued
	reused = 0
	for _, x := range streamed(f, 8*perBlock) {
		if x == filling {
			reused++
		}
	}
	if reused == 0 {
		t.Fatal("the block a detached connection released was not written again")
	}

	// A subscriber that does not tell what it holds: nothing it may hold is
	// written again, before or after it leaves.
	p := &plain{}
	b := &attachment{f: f, sub: p}
	f.subs = append(f.subs, b)
	h.released = h.queued
	before := map[*byte]bool{}
	for _, x := range streamed(f, 3*perBlock) {
		before[x] = true
	}
	for _, x := range streamed(f, 3*perBlock) {
		if before[x] {
			t.Fatal("a block was written again while a subscriber that does not tell was attached")
		}
	}
	f.removeLocked(b)
	if f.tail.block != nil || len(f.tail.retired) != 0 {
		t.Fatal("the blocks it may hold were kept for writing again")
	}
}
