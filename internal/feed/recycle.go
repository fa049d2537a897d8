package feed

import "sync"

// A streaming session's tail fills a 64 KiB block every few hundred updates. Made
// new each time, those blocks were two thirds of everything a streamed turn
// allocated, and with them came most of its garbage collections. A full block is
// retired instead, and written again once nothing can read it:
//
//   - the tail no longer holds any of its entries, so no cursor hands one again;
//   - the replay log has stored them all (committed), which refers to their payloads
//     until then (deliverLocked);
//   - every connection that may have been handed one of its frames has written or
//     discarded it: the connection reads a frame it borrowed (Deliver) until its
//     PacedBytes released count reaches the queued count of the moment the block
//     left the tail (frameHolder). A connection detached meanwhile is remembered
//     until then (draining).
//
// A subscriber that is not a frameHolder may keep what it is handed for as long as
// it likes: while one is attached, or once one detached, no block it could have
// been handed is written again.

// frameHolder is a Subscriber whose connection writes the frames Deliver hands it
// from the tail's memory (jsonrpc.Conn.NotifyPacedFrames), and tells how far it has
// written them: the bytes of paced notifications it queued, and of those the bytes
// it wrote or discarded, both growing, in the order they were queued.
type frameHolder interface {
	PacedBytes() (queued, released uint64)
}

// holdMark is a connection that may read frames of a block until its released
// count reaches queued.
type holdMark struct {
	h      frameHolder
	queued uint64
}

func (m holdMark) done() bool {
	_, released := m.h.PacedBytes()
	return released >= m.queued
}

// retiredBlock is a full block of the tail, with the seq of its last payload; once
// left is set, waits are the connections that may still read from it.
type retiredBlock struct {
	buf   []byte
	last  uint64
	left  bool
	waits []holdMark
}

// maxRetired bounds the retired blocks a tail keeps for writing again; beyond it
// the oldest is left to the garbage collector (a connection that does not read
// holds its frames).
const maxRetired = 64

// retire moves the full block to the retired ones.
func (t *tail) retire() {
	if t.block == nil {
		return
	}
	if len(t.retired) == maxRetired {
		t.dropOldest()
	}
	t.retired = append(t.retired, retiredBlock{buf: t.block, last: t.last})
	t.block = nil
}

// dropOldest removes the oldest retired block from the tail's list.
func (t *tail) dropOldest() {
	t.retired[0] = retiredBlock{}
	t.retired = t.retired[1:]
	if len(t.retired) == 0 {
		t.retired = t.retired[:0:0] // the array is not kept growing at its end
	}
}

// forget drops the current and the retired blocks and the connections that may
// read them: none of them is written again.
func (t *tail) forget() {
	clear(t.retired)
	clear(t.draining)
	t.block, t.retired, t.draining = nil, nil, nil
}

// spareLocked gives the blocks of an idle tail, which no longer holds any entry of
// them (it drops committed ones only), to the spares of every session, with what
// its connections must release first; mu is held.
func (f *Feed) spareLocked() {
	t := &f.tail
	if waits, ok := f.holdMarksLocked(); ok {
		for _, r := range t.retired {
			if !r.left {
				r.left, r.waits = true, waits
			}
			spares.Put(&r)
		}
	}
	t.forget()
}

// spares are blocks of idle tails (spareLocked), for any tail to write again once
// nothing reads them. A pool: what is not taken goes with the garbage collections.
var spares sync.Pool

// spareTries bounds the spares a tail looks at for one block.
const spareTries = 4

// spare returns a spare block that nothing reads any more, emptied, or nil.
func spare() []byte {
	var busy [spareTries]*retiredBlock
	n := 0
	defer func() {
		for _, r := range busy[:n] {
			spares.Put(r)
		}
	}()
	for n < spareTries {
		r, _ := spares.Get().(*retiredBlock)
		if r == nil {
			return nil
		}
		if !r.released() {
			busy[n] = r
			n++
			continue
		}
		return r.buf[:0]
	}
	return nil
}

// released reports whether every connection that may read r has released it.
func (r *retiredBlock) released() bool {
	for _, w := range r.waits {
		if !w.done() {
			return false
		}
	}
	return true
}

// reusableBlockLocked returns the oldest retired block of the tail that nothing
// reads any more, or else a spare one (emptied), or nil; mu is held.
func (f *Feed) reusableBlockLocked() []byte {
	t := &f.tail
	for len(t.retired) > 0 {
		r := &t.retired[0]
		if !r.left {
			if r.last > f.committed || (t.n > 0 && t.oldest() <= r.last) {
				return spare() // still in the tail, or not yet stored
			}
			waits, ok := f.holdMarksLocked()
			if !ok {
				t.dropOldest()
				continue
			}
			r.left, r.waits = true, waits
		}
		if !r.released() {
			return spare()
		}
		buf := r.buf[:0]
		t.dropOldest()
		return buf
	}
	return spare()
}

// holdMarksLocked returns what each connection that may hold frames of the tail has
// queued by now, or false when one of them does not tell (not a frameHolder); mu
// is held. Draining connections that have written what they held are dropped.
func (f *Feed) holdMarksLocked() ([]holdMark, bool) {
	t := &f.tail
	marks := make([]holdMark, 0, len(f.subs)+len(t.draining))
	for _, a := range f.subs {
		h, ok := a.sub.(frameHolder)
		if !ok {
			return nil, false
		}
		queued, _ := h.PacedBytes()
		marks = append(marks, holdMark{h: h, queued: queued})
	}
	kept := t.draining[:0]
	for _, d := range t.draining {
		if !d.done() {
			kept = append(kept, d)
			marks = append(marks, d)
		}
	}
	clear(t.draining[len(kept):])
	t.draining = kept
	return marks, true
}

// detachedLocked is told that a, which may have been handed frames of the tail, is
// detached: its connection is remembered until it no longer reads them; mu is held.
func (f *Feed) detachedLocked(a *attachment) {
	h, ok := a.sub.(frameHolder)
	if !ok {
		f.tail.forget()
		return
	}
	m := holdMark{h: h}
	m.queued, _ = h.PacedBytes()
	if !m.done() {
		f.tail.draining = append(f.tail.draining, m)
	}
}
