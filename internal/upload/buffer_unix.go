//go:build unix

package upload

import (
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// mappedMin is the size from which a staging buffer is mapped memory rather than
// Go heap: see spares.alloc.
const mappedMin = 256 << 10

// alloc returns n bytes for staging and whether they are mapped: zero, or, when a
// spare buffer is reused, cleared. The pages a first chunk decodes into are
// resident; the rest are made so by prefault.
//
// A large staging buffer lives outside the Go heap, in memory mapped for it and
// given back when the upload is landed or dropped. The garbage collector paces
// itself by the live heap: with the staged bytes on the heap, 250 MiB staged would
// let as much garbage (chunk frames) pile up again before a collection, doubling the
// daemon's resident memory. Off the heap, the heap stays small, garbage is collected
// early, and resident memory is the staged bytes plus little.
func (sp *spares) alloc(n int) ([]byte, bool) {
	if n < mappedMin {
		return make([]byte, n), false
	}
	if b := sp.take(n); b != nil {
		return b[:n], true
	}
	b, err := mapBuffer(n, min(n, ChunkBytes+2))
	if err != nil {
		return make([]byte, n), false
	}
	return b, true
}

// free gives back a buffer alloc returned: a mapped one is kept as a spare when
// there is room, else unmapped. Nothing may use b afterwards.
func (sp *spares) free(b []byte, mapped bool) {
	if !mapped {
		return
	}
	b = b[:cap(b)] // the whole mapping
	sp.mu.Lock()
	room := sp.bytes+sp.clearing+len(b) <= spareBytes
	if room {
		sp.clearing += len(b)
	}
	sp.mu.Unlock()
	if !room { // not cleared for nothing
		unix.Munmap(b)
		return
	}
	go func() { // off the commit's path: 10 MiB take about a millisecond to clear
		clear(b)
		sp.put(b)
	}()
}

// spares are the mapped buffers of a stage's landed and dropped uploads, kept
// cleared for its next uploads: at most spareBytes of them, until spareIdle passed
// without one coming back. Memory fresh from the kernel is slow to fill on this
// project's virtual machines even once its pages are resident: base64 decodes into
// it at about 1 GB/s, into memory written before at 18 GB/s, so each upload of a
// daemon that takes one after another decoded into new pages, and a 10 MiB upload
// spent a quarter of its time there (docs/BENCHMARKS.md).
type spares struct {
	mu       sync.Mutex
	bufs     [][]byte // whole mappings, cleared
	bytes    int
	clearing int         // bytes being cleared to be kept: free held room for them
	last     time.Time   // when a buffer last came back
	idle     *time.Timer // releases them all once spareIdle passed since last
	armed    bool        // idle is pending
}

const (
	spareBytes = 64 << 20
	spareIdle  = 10 * time.Second
)

// take returns the smallest spare buffer of n to 4n bytes, or nil. When none fits it
// unmaps them all, before a new mapping is made: so spare buffers never add to what
// the uploads staged at once map.
func (sp *spares) take(n int) []byte {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	best := -1
	for i, b := range sp.bufs {
		if len(b) >= n && len(b) <= 4*n && (best < 0 || len(b) < len(sp.bufs[best])) {
			best = i
		}
	}
	if best < 0 {
		sp.releaseLocked()
		return nil
	}
	b := sp.bufs[best]
	sp.bufs = slices.Delete(sp.bufs, best, best+1)
	sp.bytes -= len(b)
	return b
}

// put keeps the cleared mapping b, which free held room for, as a spare.
func (sp *spares) put(b []byte) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.clearing -= len(b)
	sp.bufs = append(sp.bufs, b)
	sp.bytes += len(b)
	sp.last = time.Now()
	switch {
	case sp.idle == nil:
		sp.idle = time.AfterFunc(spareIdle, sp.expire)
	case !sp.armed:
		sp.idle.Reset(spareIdle)
	}
	sp.armed = true
}

// expire runs when the idle timer fires: it unmaps every spare buffer once none
// came back for spareIdle, else waits again.
func (sp *spares) expire() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if since := time.Since(sp.last); since < spareIdle {
		sp.idle.Reset(spareIdle - since)
		return
	}
	sp.armed = false
	sp.releaseLocked()
}

func (sp *spares) releaseLocked() {
	for _, b := range sp.bufs {
		unix.Munmap(b)
	}
	sp.bufs, sp.bytes = nil, 0
}
