package upload

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts writing f's n bytes at off to the disk without waiting for
// them (sync_file_range), so that the next sync (the spool's, once it caught up, or
// the commit's) finds them on their way. It only saves time; a sync is what makes
// the file durable, so an error here changes nothing.
func startWriteback(f *os.File, off, n int64) {
	c, err := f.SyscallConn()
	if err != nil {
		return
	}
	c.Control(func(fd uintptr) {
		unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}

// dropCached drops the pages of f, written and synced, from the page cache. An
// upload is durable once synced, and the agent reads it later if at all: kept, each
// upload would grow the cache by its size, and filling fresh pages costs more than
// reusing freed ones (on the 2-core VM of docs/BENCHMARKS.md, a 10 MB write took
// 2.4 ms into reused pages and up to 23 ms into fresh ones, once some 150 MB of
// uploads had been cached).
func dropCached(f *os.File) {
	c, err := f.SyscallConn()
	if err != nil {
		return
	}
	c.Control(func(fd uintptr) {
		unix.Fadvise(int(fd), 0, 0, unix.FADV_DONTNEED)
	})
}
