// Package fullfs gives tests a file system that can be filled to the last byte and
// emptied again: a small tmpfs mounted for the test (Linux, as root), so that the
// storage failures (disk full) of docs/protocol.md, "Storage failures", are real
// ENOSPC and SQLITE_FULL errors, not simulated ones. Where it cannot mount (not root,
// not Linux, no permission in a container), Mount skips the test with a message
// saying why; the same cases also run without root through store.Options.FailWrites.
// It is used only by tests.
package fullfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// FS is a mounted, private tmpfs.
type FS struct {
	t   testing.TB
	Dir string // the mount point, mode 0700
}

// Mount mounts a tmpfs of size bytes for the test, or skips it. The file system is
// unmounted when the test ends.
func Mount(t testing.TB, size int64) *FS {
	t.Helper()
	dir, err := os.MkdirTemp("", "zcfull")
	if err != nil {
		t.Fatal(err)
	}
	if err := mount(dir, size); err != nil {
		os.Remove(dir)
		t.Skipf("skipping: this test needs a real full file system, and mounting a %d-byte tmpfs failed "+
			"(it needs root on Linux; the same cases run without root through store.Options.FailWrites): %v", size, err)
	}
	t.Cleanup(func() {
		if err := unmount(dir); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
			return
		}
		os.Remove(dir)
	})
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return &FS{t: t, Dir: dir}
}

// fillerName is the file Fill writes and Free removes.
const fillerName = ".zc-filler"

// Fill writes a file until the file system has no space left, so that the next
// write that needs a new block fails with ENOSPC.
func (f *FS) Fill() {
	f.t.Helper()
	w, err := os.OpenFile(filepath.Join(f.Dir, fillerName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		f.t.Fatal(err)
	}
	defer w.Close()
	// Large writes first, then single pages, then bytes: tmpfs allocates pages, so
	// the last partial page is used up too.
	for _, size := range []int{64 << 10, 4 << 10, 1} {
		buf := make([]byte, size)
		for {
			if _, err := w.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					f.t.Fatalf("filling %s: %v", f.Dir, err)
				}
				break
			}
		}
	}
}

// Free removes what Fill wrote: the space returns.
func (f *FS) Free() {
	f.t.Helper()
	if err := os.Remove(filepath.Join(f.Dir, fillerName)); err != nil {
		f.t.Fatal(err)
	}
}

// Full reports whether writing one more page fails with ENOSPC, without leaving
// anything behind.
func (f *FS) Full() bool {
	f.t.Helper()
	p := filepath.Join(f.Dir, ".zc-probe")
	defer os.Remove(p)
	w, err := os.Create(p)
	if err != nil {
		return errors.Is(err, syscall.ENOSPC)
	}
	defer w.Close()
	_, err = w.Write(make([]byte, 4<<10))
	return errors.Is(err, syscall.ENOSPC)
}
