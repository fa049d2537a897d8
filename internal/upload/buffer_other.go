//go:build !unix

package upload

// spares is empty where staging buffers are Go heap (see buffer_unix.go).
type spares struct{}

// alloc returns n zero bytes for staging, on the Go heap.
func (*spares) alloc(n int) ([]byte, bool) { return make([]byte, n), false }

func (*spares) free([]byte, bool) {}

func prefault([]byte) {}
