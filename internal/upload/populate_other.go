//go:build unix && !linux

package upload

import "golang.org/x/sys/unix"

// mapBuffer maps n bytes of staging buffer; its pages are faulted in as chunks are
// decoded into them (only Linux maps pages ahead: populate_linux.go).
func mapBuffer(n, _ int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
}

func prefault([]byte) {}
