//go:build !unix

package store

import "sync/atomic"

// registerWALVFS: elsewhere than on unix, the store uses SQLite's default VFS
// (walvfs.go gathers a WAL file's writes on unix).
func registerWALVFS() (string, error) { return "", nil }

var walWrites atomic.Int64 // unused: no gathering VFS here
