//go:build !linux

package upload

import "os"

// startWriteback has no portable equivalent of sync_file_range: the commit's fsync
// writes the spooled file's bytes to the disk.
func startWriteback(*os.File, int64, int64) {}

// dropCached: elsewhere the page cache is left to the system.
func dropCached(*os.File) {}
