//go:build unix

package upload

import "golang.org/x/sys/unix"

// mappedMin is the size from which a staging buffer is mapped memory rather than
// Go heap: see allocBuffer.
const mappedMin = 256 << 10

// allocBuffer returns n zero bytes for staging and whether they are mapped. The
// pages a first chunk decodes into are resident; the rest are made so by prefault.
//
// A large staging buffer lives outside the Go heap, in memory mapped for it and
// unmapped the moment the upload is landed or dropped. The garbage collector paces
// itself by the live heap: with the staged bytes on the heap, 250 MiB staged would
// let as much garbage (chunk frames) pile up again before a collection, doubling the
// daemon's resident memory. Off the heap, the heap stays small, garbage is collected
// early, and resident memory is the staged bytes plus little.
func allocBuffer(n int) ([]byte, bool) {
	if n < mappedMin {
		return make([]byte, n), false
	}
	b, err := mapBuffer(n, min(n, ChunkBytes+2))
	if err != nil {
		return make([]byte, n), false
	}
	return b, true
}

// freeBuffer unmaps a mapped buffer; nothing may use b afterwards.
func freeBuffer(b []byte, mapped bool) {
	if mapped {
		unix.Munmap(b)
	}
}
