//go:build unix

package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// The store's connections open the database through walVFS: SQLite's own unix VFS,
// except that the writes of a WAL file are gathered and written to the file at
// once, in one pwrite. SQLite writes a WAL frame as two writes, its 24-byte header
// and its page, one system call each, and a system call costs the same whatever
// its size (about 5 µs here, a 24-byte one as much as a 4 KiB one): a streamed
// turn's 128 frames were 256 calls, 40 µs of a session/new's were its 16.
//
// What is gathered is written when SQLite has written the page of a commit frame
// (the frame whose header holds the database size): so before the commit returns,
// and so before SQLite publishes the frames to other connections in the wal-index,
// which it does only after its writes returned. A process crash then loses what
// it would have lost anyway, an uncommitted transaction. A write that does not
// follow the last gathered one, or any other call on the file (a read, a sync, a
// truncation, its size, a file control, its close), writes what was gathered
// first, so SQLite reads and syncs what it wrote. A failed write of what was
// gathered fails the call that made it, as the write itself would have.
const walVFSName = "zeroclaw-wal"

// walBufSize bounds what one WAL file gathers: a commit of more is written in
// pieces of this much. It is the most unix's xWrite writes in one call (its
// seekAndWriteFd keeps 17 bits of a write's length).
const walBufSize = 1<<17 - 1

var (
	walVFSOnce sync.Once
	walVFSErr  error
	vfsNameC   = [...]byte{'z', 'e', 'r', 'o', 'c', 'l', 'a', 'w', '-', 'w', 'a', 'l', 0}
	walVFS     sqlite3.Tsqlite3_vfs        // registered: unix's, with xOpen below
	unixVFS    uintptr                     // SQLite's default VFS
	walMethods sqlite3.Tsqlite3_io_methods // unix's file methods, the ones below replaced

	methodsMu   sync.Mutex
	unixMethods uintptr // the methods unix gave the first WAL file; 0 before it
	// The unix methods the replaced ones call.
	baseClose, baseRead, baseWrite, baseTruncate, baseSync, baseFileSize, baseFileControl uintptr

	filesMu sync.Mutex
	files   = map[uintptr]*walFile{} // by sqlite3_file pointer

	walWrites atomic.Int64 // writes to WAL files (tests count them)
)

// walFile is what one open WAL file gathered.
type walFile struct {
	buf    uintptr // walBufSize bytes of SQLite's memory, once something is gathered
	n      int     // bytes gathered
	start  int64   // the file offset of the first
	commit bool    // the last write was a commit frame's header: its page ends the commit
}

// registerWALVFS registers walVFS once and returns the DSN parameter that selects it.
func registerWALVFS() (string, error) {
	walVFSOnce.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		unixVFS = sqlite3.Xsqlite3_vfs_find(tls, 0)
		if unixVFS == 0 {
			walVFSErr = fmt.Errorf("store: SQLite has no default VFS")
			return
		}
		walVFS = *(*sqlite3.Tsqlite3_vfs)(cptr(unixVFS))
		walVFS.FpNext = 0
		walVFS.FzName = uintptr(unsafe.Pointer(&vfsNameC[0]))
		unixVFSOpen, walVFS.FxOpen = walVFS.FxOpen, cfunc(walOpen)
		if rc := sqlite3.Xsqlite3_vfs_register(tls, uintptr(unsafe.Pointer(&walVFS)), 0); rc != sqlite3.SQLITE_OK {
			walVFSErr = fmt.Errorf("store: registering the WAL VFS: SQLite error %d", rc)
		}
	})
	return "&vfs=" + walVFSName, walVFSErr
}

// cptr is the pointer a uintptr of SQLite's memory holds.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// cfunc is f as a C function pointer of the transpiled SQLite (its __ccgo_fp).
func cfunc(f any) uintptr {
	type iface [2]uintptr
	return (*iface)(unsafe.Pointer(&f))[1]
}

// walOpen opens a file as unix does, and has a WAL file gather its writes.
func walOpen(tls *libc.TLS, pVfs, zName, pFile uintptr, flags int32, pOutFlags uintptr) int32 {
	open := *(*func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32)(unsafe.Pointer(&unixVFSOpen))
	rc := open(tls, unixVFS, zName, pFile, flags, pOutFlags)
	if rc != sqlite3.SQLITE_OK || flags&sqlite3.SQLITE_OPEN_WAL == 0 {
		return rc
	}
	f := (*sqlite3.Tsqlite3_file)(cptr(pFile))
	if f.FpMethods == 0 || !adoptMethods(f.FpMethods) {
		return rc // methods other than the first WAL file's: left as unix made them
	}
	filesMu.Lock()
	files[pFile] = &walFile{}
	filesMu.Unlock()
	f.FpMethods = uintptr(unsafe.Pointer(&walMethods))
	return rc
}

// unixVFSOpen is unix's xOpen, kept by registerWALVFS.
var unixVFSOpen uintptr

// adoptMethods makes walMethods unix's methods m with the gathering ones in place,
// the first time; it reports whether m are the ones walMethods wraps.
func adoptMethods(m uintptr) bool {
	methodsMu.Lock()
	defer methodsMu.Unlock()
	if unixMethods == 0 {
		walMethods = *(*sqlite3.Tsqlite3_io_methods)(cptr(m))
		baseClose, walMethods.FxClose = walMethods.FxClose, cfunc(walClose)
		baseRead, walMethods.FxRead = walMethods.FxRead, cfunc(walRead)
		baseWrite, walMethods.FxWrite = walMethods.FxWrite, cfunc(walWrite)
		baseTruncate, walMethods.FxTruncate = walMethods.FxTruncate, cfunc(walTruncate)
		baseSync, walMethods.FxSync = walMethods.FxSync, cfunc(walSync)
		baseFileSize, walMethods.FxFileSize = walMethods.FxFileSize, cfunc(walFileSize)
		baseFileControl, walMethods.FxFileControl = walMethods.FxFileControl, cfunc(walFileControl)
		unixMethods = m
	}
	return m == unixMethods
}

func fileOf(pFile uintptr) *walFile {
	filesMu.Lock()
	defer filesMu.Unlock()
	return files[pFile]
}

// write writes n bytes at buf to the file at off, as unix does.
func write(tls *libc.TLS, pFile, buf uintptr, n int32, off int64) int32 {
	walWrites.Add(1)
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&baseWrite)))(tls, pFile, buf, n, off)
}

// flush writes what f gathered.
func (f *walFile) flush(tls *libc.TLS, pFile uintptr) int32 {
	if f == nil || f.n == 0 {
		return sqlite3.SQLITE_OK
	}
	n := f.n
	f.n, f.commit = 0, false
	return write(tls, pFile, f.buf, int32(n), f.start)
}

func walWrite(tls *libc.TLS, pFile, zBuf uintptr, iAmt int32, iOfst sqlite3.Tsqlite3_int64) int32 {
	f := fileOf(pFile)
	if f == nil {
		return write(tls, pFile, zBuf, iAmt, iOfst)
	}
	n := int(iAmt)
	if f.n > 0 && (iOfst != f.start+int64(f.n) || f.n+n > walBufSize) {
		if rc := f.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
			return rc
		}
	}
	if n > walBufSize {
		return write(tls, pFile, zBuf, iAmt, iOfst)
	}
	if f.buf == 0 {
		if f.buf = sqlite3.Xsqlite3_malloc64(tls, walBufSize); f.buf == 0 {
			return write(tls, pFile, zBuf, iAmt, iOfst) // no memory to gather in: write it now
		}
	}
	if f.n == 0 {
		f.start = iOfst
	}
	src := unsafe.Slice((*byte)(cptr(zBuf)), n)
	copy(unsafe.Slice((*byte)(cptr(f.buf)), walBufSize)[f.n:], src)
	f.n += n
	if f.commit { // the page of a commit frame: the commit is written now
		return f.flush(tls, pFile)
	}
	// A frame header is 24 bytes; bytes 4–7 are the database size after a commit,
	// 0 in the other frames of a transaction.
	f.commit = n == 24 && (src[4]|src[5]|src[6]|src[7]) != 0
	return sqlite3.SQLITE_OK
}

func walRead(tls *libc.TLS, pFile, zBuf uintptr, iAmt int32, iOfst sqlite3.Tsqlite3_int64) int32 {
	if rc := fileOf(pFile).flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&baseRead)))(tls, pFile, zBuf, iAmt, iOfst)
}

func walTruncate(tls *libc.TLS, pFile uintptr, size sqlite3.Tsqlite3_int64) int32 {
	if rc := fileOf(pFile).flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&baseTruncate)))(tls, pFile, size)
}

func walSync(tls *libc.TLS, pFile uintptr, flags int32) int32 {
	if rc := fileOf(pFile).flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&baseSync)))(tls, pFile, flags)
}

func walFileSize(tls *libc.TLS, pFile, pSize uintptr) int32 {
	if rc := fileOf(pFile).flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&baseFileSize)))(tls, pFile, pSize)
}

func walFileControl(tls *libc.TLS, pFile uintptr, op int32, pArg uintptr) int32 {
	if rc := fileOf(pFile).flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32, uintptr) int32)(unsafe.Pointer(&baseFileControl)))(tls, pFile, op, pArg)
}

func walClose(tls *libc.TLS, pFile uintptr) int32 {
	filesMu.Lock()
	f := files[pFile]
	delete(files, pFile)
	filesMu.Unlock()
	rc := f.flush(tls, pFile)
	if f != nil && f.buf != 0 {
		sqlite3.Xsqlite3_free(tls, f.buf)
	}
	if rc2 := (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&baseClose)))(tls, pFile); rc == sqlite3.SQLITE_OK {
		rc = rc2
	}
	return rc
}
