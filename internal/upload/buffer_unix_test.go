//go:build unix

package upload

import (
	"bytes"
	"testing"
	"testing/synctest"
	"time"
)

// held is what the spares keep, in bytes.
func (sp *spares) held() int {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.bytes
}

// A staging buffer given back is cleared and serves the next upload that fits it;
// one that does not fit has the spares unmapped first; and what is kept goes once
// no buffer came back for spareIdle.
func TestAGivenBackBufferIsClearedReusedAndReleasedWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sp spares
		b, mapped := sp.alloc(4 << 20)
		if !mapped {
			t.Fatal("a 4 MiB staging buffer is not mapped")
		}
		copy(b, "the bytes of an earlier upload")
		sp.free(b, mapped)
		synctest.Wait() // cleared and kept
		if got := sp.held(); got != 4<<20 {
			t.Fatalf("the spares hold %d bytes after a 4 MiB buffer came back", got)
		}

		c, mapped := sp.alloc(3 << 20)
		if !mapped || len(c) != 3<<20 || &c[0] != &b[0] {
			t.Fatalf("a 3 MiB upload did not get the 4 MiB spare (mapped %v, %d bytes)", mapped, len(c))
		}
		if i := bytes.IndexFunc(c[:cap(c)], func(r rune) bool { return r != 0 }); i >= 0 {
			t.Fatalf("the reused buffer holds an earlier upload's bytes at %d", i)
		}
		if got := sp.held(); got != 0 {
			t.Fatalf("the spares hold %d bytes with their buffer in use", got)
		}
		sp.free(c, mapped)
		synctest.Wait()

		d, mapped := sp.alloc(512 << 10) // 4 MiB is more than 4 × 512 KiB: no fit
		if &d[0] == &b[0] {
			t.Fatal("a 512 KiB upload got the 4 MiB spare")
		}
		if got := sp.held(); got != 0 {
			t.Fatalf("the spares hold %d bytes after an upload none of them fit", got)
		}
		sp.free(d, mapped)
		synctest.Wait() // back at t0: the spares go at t0+spareIdle unless another comes back

		time.Sleep(spareIdle / 2)
		e, mapped := sp.alloc(512 << 10)
		sp.free(e, mapped)
		synctest.Wait() // back at t0+spareIdle/2
		time.Sleep(spareIdle/2 + time.Millisecond)
		synctest.Wait()
		if got := sp.held(); got != 512<<10 {
			t.Fatalf("the spares hold %d bytes %s after one came back", got, spareIdle/2)
		}
		time.Sleep(spareIdle / 2)
		synctest.Wait()
		if got := sp.held(); got != 0 {
			t.Fatalf("the spares still hold %d bytes after %s idle", got, spareIdle)
		}
	})
}

// A buffer larger than the spares may hold is unmapped at once, and small ones are
// Go heap, never kept.
func TestOnlyMappedBuffersThatFitAreKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sp spares
		big, mapped := sp.alloc(spareBytes + 1)
		if !mapped {
			t.Fatal("a large staging buffer is not mapped")
		}
		sp.free(big, mapped)
		small, mapped := sp.alloc(mappedMin - 1)
		if mapped {
			t.Fatal("a small staging buffer is mapped")
		}
		sp.free(small, mapped)
		synctest.Wait()
		if got := sp.held(); got != 0 {
			t.Fatalf("the spares hold %d bytes", got)
		}
	})
}
