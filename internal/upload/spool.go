package upload

import (
	"crypto/sha256"
	"errors"
	"hash"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
)

// spoolMin is the smallest upload that is spooled: one that takes more than one
// chunk, so that there are later chunks for its writes to overlap.
const spoolMin = ChunkBytes + 1

// spoolPiece is how many accepted bytes the writer waits for before it writes,
// unless the upload is complete: a client sending tiny chunks costs few writes.
const spoolPiece = 256 << 10

// spool hashes an upload's accepted bytes, and writes them to a temporary file in
// its workspace's uploads directory and syncs them whenever it has caught up, while
// later chunks arrive: the chunk's answer waits for its decoding only, and the
// commit finds the hash done and the file written and nearly synced. What is left
// for the commit is the last chunk's hash and write, and one fsync: on Linux about
// 1 ms instead of the 8 ms of writing and syncing 10 MB, and 5 ms less of hashing on
// the chunks' path (docs/BENCHMARKS.md).
//
// The file only saves time: the staged bytes stay in their buffer, and when
// anything fails (the directory, a write, the sync), the commit writes the file
// whole from the buffer with Prepare, exactly as it does for an upload that was not
// spooled. The file is named by nothing until the commit places it, and it is
// removed whenever the upload goes without being placed (discarded, expired,
// reclaimed, refused).
//
// Two goroutines follow the accepted bytes, one hashing (hashing, then its hash is
// Take's) and one writing (writing, then the file is the commit's): the hash is
// the longer task, and the two run side by side. They read buf[:ready] while chunks
// are decoded into buf[ready:], and the buffer is freed only once both have
// returned (finish, abort).
type spool struct {
	log       *slog.Logger
	workspace string
	buf       []byte       // the upload's staging buffer, exactly its size
	ready     atomic.Int64 // bytes of buf accepted, which no chunk changes again
	hashing   follower
	writing   follower
	quit      chan struct{} // closed by abort (and by finish of an incomplete upload)

	hash hash.Hash // hashing's until its done is closed

	// writing's until its done is closed, then whoever set over's, under mu.
	dir uploadsDir
	f   *os.File // nil when the file could not be created
	tmp string
	err error // the file failed: nothing more is written

	mu   sync.Mutex
	over bool // finished or aborted: the file was handed to a Prepared or removed
}

// follower is one of a spool's goroutines.
type follower struct {
	wake chan struct{} // capacity 1: ready moved
	done chan struct{} // closed when the goroutine has returned
}

func newFollower() follower {
	return follower{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// startSpool starts hashing buf, an upload's staging buffer, into h and writing it
// to a new temporary file in workspace's uploads directory, as advance reports its
// bytes accepted.
func startSpool(log *slog.Logger, workspace string, buf []byte, h hash.Hash) *spool {
	s := &spool{
		log: log, workspace: workspace, buf: buf, hash: h,
		hashing: newFollower(), writing: newFollower(), quit: make(chan struct{}),
	}
	go s.runHashing()
	go s.runWriting()
	return s
}

// advance reports buf[:received] accepted. Only the goroutine holding the upload's
// lock calls it, with received growing.
func (s *spool) advance(received int64) {
	s.ready.Store(received)
	for _, w := range []chan struct{}{s.hashing.wake, s.writing.wake} {
		select {
		case w <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// follow hands each run of accepted bytes to do, in pieces of at most ChunkBytes
// (see writeAll) and, until the upload is complete, at least spoolPiece, until
// every byte was handed over, do fails, or abort. It reports whether every byte was.
func (s *spool) follow(wake <-chan struct{}, do func(off int64, p []byte) bool) bool {
	size := int64(len(s.buf))
	for off := int64(0); off < size; {
		ready := s.ready.Load()
		if ready-off < spoolPiece && ready < size {
			select {
			case <-wake:
				continue
			case <-s.quit:
				return false
			}
		}
		select {
		case <-s.quit:
			return false
		default:
		}
		p := s.buf[off : off+min(ready-off, ChunkBytes)]
		if !do(off, p) {
			return false
		}
		off += int64(len(p))
	}
	return true
}

func (s *spool) runHashing() {
	defer close(s.hashing.done)
	s.follow(s.hashing.wake, func(_ int64, p []byte) bool {
		s.hash.Write(p)
		return true
	})
}

// runWriting makes the buffer's pages past the first chunk resident (while that
// chunk is answered and the next one arrives: buffer_unix.go), creates the file and
// writes the accepted bytes to it, syncing them whenever it has caught up.
func (s *spool) runWriting() {
	defer close(s.writing.done)
	prefault(s.buf[min(len(s.buf), ChunkBytes):])
	if s.err = s.create(); s.err != nil {
		return
	}
	complete := s.follow(s.writing.wake, func(off int64, p []byte) bool {
		if _, s.err = s.f.Write(p); s.err != nil {
			return false
		}
		// Caught up: the bytes are synced while the next chunk comes, so that the
		// commit's fsync finds little left to write. Started writeback alone left
		// it 7–10 ms for a spooled 10 MiB file on the VM of docs/BENCHMARKS.md (the
		// disk's cache is flushed only by a sync, all at once); a sync after every
		// piece fell behind the chunks, so behind, the writer only starts the
		// writeback. An error here is the writer's: once a sync reported a write
		// error, a later fsync of the file may not report it.
		if s.ready.Load() > off+int64(len(p)) {
			startWriteback(s.f, off, int64(len(p)))
			return true
		}
		s.err = syncFile(s.f)
		return s.err == nil
	})
	if !complete && s.err == nil {
		s.err = errIncomplete
	}
}

// syncFile syncs a spooled file (a test's hook).
var syncFile = (*os.File).Sync

// errIncomplete is the writer stopped before the end: the file is not the upload.
var errIncomplete = errors.New("the upload was stopped before all of it was written")

// sum waits for every byte to be hashed and returns the hash. Only Take calls it,
// for a complete upload it has not aborted.
func (s *spool) sum() [sha256.Size]byte {
	<-s.hashing.done
	var sum [sha256.Size]byte
	s.hash.Sum(sum[:0])
	return sum
}

// create opens the uploads directory (making it 0700) and a new temporary file in
// it, as Prepare does; on failure nothing is left open.
func (s *spool) create() error {
	dir, err := openUploads(s.workspace, true)
	if err != nil {
		return err
	}
	f, tmp, err := createTemp(dir)
	if err != nil {
		dir.root.Close()
		return err
	}
	s.dir, s.f, s.tmp = dir, f, tmp
	return nil
}

// finish waits for every byte to be written and syncs the file, for a commit into
// workspace. It returns nil, with the file removed, when anything failed or the
// upload is not complete: the caller writes the bytes itself then.
func (s *spool) finish(workspace string) *Prepared {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.over {
		return nil
	}
	s.over = true
	if s.ready.Load() < int64(len(s.buf)) {
		close(s.quit) // nothing more will arrive
	}
	s.wait()
	err := s.err
	if err == nil && workspace == s.workspace {
		if err = s.f.Sync(); err == nil {
			dropCached(s.f)
		}
		if cerr := s.f.Close(); err == nil {
			err = cerr
		}
		s.f = nil
		if err == nil {
			return &Prepared{workspace: s.workspace, dir: s.dir, tmp: s.tmp}
		}
	}
	if err != nil {
		s.log.Warn("writing an upload as its chunks arrived failed; the commit writes it whole", "err", err)
	}
	s.remove()
	return nil
}

// abort stops the writer and removes the file, unless finish handed it over.
func (s *spool) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.over {
		return
	}
	s.over = true
	close(s.quit)
	s.wait()
	s.remove()
}

// wait waits for both goroutines to return.
func (s *spool) wait() {
	<-s.hashing.done
	<-s.writing.done
}

// remove closes and removes the file (closed first: Windows removes no open file).
func (s *spool) remove() {
	if s.dir.root == nil {
		return
	}
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	s.dir.root.Remove(s.tmp)
	s.dir.root.Close()
	s.dir.root = nil
}
