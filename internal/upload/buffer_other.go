//go:build !unix

package upload

// allocBuffer returns n zero bytes for staging, on the Go heap (see buffer_unix.go).
func allocBuffer(n int) ([]byte, bool) { return make([]byte, n), false }

func freeBuffer([]byte, bool) {}

func prefault([]byte) {}
