// Package stack grows a goroutine's stack ahead of a deep call.
package stack

// Reserve grows the calling goroutine's stack to hold about 48 KiB more in one
// step. Call it first thing on a goroutine that will reach SQLite.
//
// A goroutine starts with a small stack and doubles it whenever a call needs more;
// each doubling copies the stack and walks every frame on it to adjust its
// pointers. SQLite's functions (C translated to Go) have large frames, so a
// request that stored something doubled its stack three or four times, each deep
// in the call with many frames to walk: a tenth of the CPU of session/new
// (BenchmarkSessionNewClose's profile). Growing once, while the goroutine holds
// two or three frames, costs one cheap copy. The stack is given back when the
// goroutine ends, or shrunk by the collector once the goroutine uses a quarter of it.
//
//go:noinline
func Reserve() {
	var frame [reserveBytes]byte
	_ = touch(frame[:])
}

// reserveBytes is what Reserve's frame takes: a store transaction's calls fit in
// the 64 KiB stack it leaves.
const reserveBytes = 48 << 10

// touch reads b; a call the compiler does not inline, so that it keeps Reserve's
// frame.
//
//go:noinline
func touch(b []byte) byte { return b[len(b)-1] }
