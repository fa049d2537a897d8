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
// except that a WAL file gathers its writes and writes them to the file at once, in
// one pwrite. SQLite writes a WAL frame as two writes, its 24-byte header and its
// page, one system call each, and a system call costs the same whatever its size
// (about 5 µs here, a 24-byte one as much as a 4 KiB one): a streamed turn's 128
// frames were 256 calls.
//
// A WAL file writes what it gathered when SQLite has written the page of a commit
// frame (the frame whose header holds the database size): so before the commit
// returns, and so before SQLite publishes the frames to other connections in the
// wal-index, which it does only after its writes returned. A process crash then
// loses what it would have lost anyway, an uncommitted transaction. A write that
// does not follow the last gathered one, and any other call on the file (a read, a
// sync, a truncation, its size, a file control, its close), writes what was
// gathered first, so SQLite reads and syncs what it wrote. A failed write of what
// was gathered fails the call that made it, as the write itself would have: at a
// commit, the commit page's write, which fails the commit.
//
// The database file is unix's own. Gathering a checkpoint's copies into it until
// its sync lost data on a full disk: a partial checkpoint (a reader holding back
// the last frames) records what it copied without syncing the database file, and
// the only call on the file between its last copy and that record is a file
// control whose error SQLite ignores, so pages that could not be written were
// recorded as copied, and read back as missing
// (TestACheckpointThatCannotWriteTheDatabaseRecordsNothingAsCopied).
const walVFSName = "zeroclaw-wal"

// walBufSize bounds what one WAL file gathers: a commit of more is written in
// pieces of this much. It is the most unix's xWrite writes in one call (its
// seekAndWriteFd keeps 17 bits of a write's length).
const walBufSize = 1<<17 - 1

var (
	walVFSOnce sync.Once
	walVFSErr  error
	vfsNameC   = [...]byte{'z', 'e', 'r', 'o', 'c', 'l', 'a', 'w', '-', 'w', 'a', 'l', 0}
	walVFS     sqlite3.Tsqlite3_vfs // registered: unix's, with xOpen below
	unixVFS    uintptr              // SQLite's default VFS
	unixOpen   uintptr              // its xOpen

	// unix may give WAL files more than one table of methods (by locking style):
	// each is wrapped once, in sets, which never move (SQLite keeps pointers to them).
	methodsMu sync.Mutex
	sets      [4]methodSet
	nSets     int

	filesMu sync.Mutex
	files   = map[uintptr]*walFile{} // by sqlite3_file pointer

	walWrites atomic.Int64 // writes to WAL files (tests count them)
)

// methodSet is a table of unix's file methods and the same with the gathering
// ones in place.
type methodSet struct {
	unix    uintptr // where unix's table is
	base    sqlite3.Tsqlite3_io_methods
	wrapped sqlite3.Tsqlite3_io_methods
}

// walFile is what one open WAL file gathered.
type walFile struct {
	base   *sqlite3.Tsqlite3_io_methods // unix's methods of the file
	buf    uintptr                      // walBufSize bytes of SQLite's memory, once something is gathered
	n      int                          // bytes gathered
	start  int64                        // the file offset of the first
	commit bool                         // the last write was a commit frame's header: its page ends the commit
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
		unixOpen, walVFS.FxOpen = walVFS.FxOpen, cfunc(walOpen)
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
	open := *(*func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32)(unsafe.Pointer(&unixOpen))
	rc := open(tls, unixVFS, zName, pFile, flags, pOutFlags)
	if rc != sqlite3.SQLITE_OK || flags&sqlite3.SQLITE_OPEN_WAL == 0 {
		return rc
	}
	f := (*sqlite3.Tsqlite3_file)(cptr(pFile))
	set := wrap(f.FpMethods)
	if set == nil {
		return rc // no room for another table: left as unix made it
	}
	filesMu.Lock()
	files[pFile] = &walFile{base: &set.base}
	filesMu.Unlock()
	f.FpMethods = uintptr(unsafe.Pointer(&set.wrapped))
	return rc
}

// wrap returns the set of unix's methods m, made the first time; nil for no
// methods, or when sets is full.
func wrap(m uintptr) *methodSet {
	if m == 0 {
		return nil
	}
	methodsMu.Lock()
	defer methodsMu.Unlock()
	for i := range nSets {
		if sets[i].unix == m {
			return &sets[i]
		}
	}
	if nSets == len(sets) {
		return nil
	}
	set := &sets[nSets]
	nSets++
	set.unix, set.base = m, *(*sqlite3.Tsqlite3_io_methods)(cptr(m))
	w := set.base
	w.FxClose, w.FxRead, w.FxWrite = cfunc(walClose), cfunc(walRead), cfunc(walWrite)
	w.FxTruncate, w.FxSync, w.FxFileSize = cfunc(walTruncate), cfunc(walSync), cfunc(walFileSize)
	w.FxFileControl = cfunc(walFileControl)
	// SQLite neither locks, maps nor fetches a WAL file: those stay unix's.
	set.wrapped = w
	return set
}

// fileOf is the state of a file walOpen wrapped: its methods are called only
// between its open and its close.
func fileOf(pFile uintptr) *walFile {
	filesMu.Lock()
	defer filesMu.Unlock()
	return files[pFile]
}

// write writes n bytes at buf to the file at off, as unix does.
func (f *walFile) write(tls *libc.TLS, pFile, buf uintptr, n int32, off int64) int32 {
	walWrites.Add(1)
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&f.base.FxWrite)))(tls, pFile, buf, n, off)
}

// flush writes what f gathered.
func (f *walFile) flush(tls *libc.TLS, pFile uintptr) int32 {
	if f.n == 0 {
		return sqlite3.SQLITE_OK
	}
	n := f.n
	f.n = 0
	return f.write(tls, pFile, f.buf, int32(n), f.start)
}

func walWrite(tls *libc.TLS, pFile, zBuf uintptr, iAmt int32, iOfst sqlite3.Tsqlite3_int64) int32 {
	f := fileOf(pFile)
	n := int(iAmt)
	// The page of a commit frame: the commit is written once it is, whatever is
	// written before it to make room.
	commitPage := f.commit
	f.commit = false
	if f.n > 0 && (iOfst != f.start+int64(f.n) || f.n+n > walBufSize) {
		if rc := f.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
			return rc
		}
	}
	if n > walBufSize {
		return f.write(tls, pFile, zBuf, iAmt, iOfst)
	}
	if f.buf == 0 {
		if f.buf = sqlite3.Xsqlite3_malloc64(tls, walBufSize); f.buf == 0 {
			return f.write(tls, pFile, zBuf, iAmt, iOfst) // no memory to gather in: write it now
		}
	}
	if f.n == 0 {
		f.start = iOfst
	}
	src := unsafe.Slice((*byte)(cptr(zBuf)), n)
	copy(unsafe.Slice((*byte)(cptr(f.buf)), walBufSize)[f.n:], src)
	f.n += n
	if commitPage {
		return f.flush(tls, pFile)
	}
	// A frame header is 24 bytes; bytes 4–7 are the database size after a commit,
	// 0 in the other frames of a transaction.
	f.commit = n == 24 && (src[4]|src[5]|src[6]|src[7]) != 0
	return sqlite3.SQLITE_OK
}

func walRead(tls *libc.TLS, pFile, zBuf uintptr, iAmt int32, iOfst sqlite3.Tsqlite3_int64) int32 {
	f := fileOf(pFile)
	if rc := f.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&f.base.FxRead)))(tls, pFile, zBuf, iAmt, iOfst)
}

func walTruncate(tls *libc.TLS, pFile uintptr, size sqlite3.Tsqlite3_int64) int32 {
	f := fileOf(pFile)
	if rc := f.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&f.base.FxTruncate)))(tls, pFile, size)
}

func walSync(tls *libc.TLS, pFile uintptr, flags int32) int32 {
	f := fileOf(pFile)
	if rc := f.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&f.base.FxSync)))(tls, pFile, flags)
}

func walFileSize(tls *libc.TLS, pFile, pSize uintptr) int32 {
	f := fileOf(pFile)
	if rc := f.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&f.base.FxFileSize)))(tls, pFile, pSize)
}

func walFileControl(tls *libc.TLS, pFile uintptr, op int32, pArg uintptr) int32 {
	f := fileOf(pFile)
	if rc := f.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32, uintptr) int32)(unsafe.Pointer(&f.base.FxFileControl)))(tls, pFile, op, pArg)
}

func walClose(tls *libc.TLS, pFile uintptr) int32 {
	filesMu.Lock()
	f := files[pFile]
	delete(files, pFile)
	filesMu.Unlock()
	rc := f.flush(tls, pFile)
	if f.buf != 0 {
		sqlite3.Xsqlite3_free(tls, f.buf)
	}
	if rc2 := (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&f.base.FxClose)))(tls, pFile); rc == sqlite3.SQLITE_OK {
		rc = rc2
	}
	return rc
}
