package upload

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
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

// spool hashes an upload's accepted bytes and writes them to a temporary file in
// its workspace's uploads directory while later chunks arrive, and starts their
// writeback, so that the chunk's answer waits for its decoding only, and the commit
// finds the file written and nearly synced: what is left is the last chunk's hash
// and write, and one fsync. On Linux that cuts a 10 MB commit from about 8 ms of
// write and fsync to about 1 ms (docs/BENCHMARKS.md).
//
// The file only saves time: the staged bytes stay in their buffer, and when
// anything fails (the directory, a write, the sync), the spool goes on hashing and
// the commit writes the file whole from the buffer with Prepare, exactly as it does
// for an upload that was not spooled. The file is named by nothing until the
// commit places it, and it is removed whenever the upload goes without being placed
// (discarded, expired, reclaimed, refused).
//
// One goroutine, run, hashes and writes. It reads buf[:ready] while chunks are
// decoded into buf[ready:], and the buffer is freed only once it has returned
// (finish, abort).
type spool struct {
	log       *slog.Logger
	workspace string
	buf       []byte        // the upload's staging buffer, exactly its size
	hash      hash.Hash     // run's until done is closed
	ready     atomic.Int64  // bytes of buf accepted, which no chunk changes again
	wake      chan struct{} // capacity 1: ready moved
	quit      chan struct{} // closed by abort (and by finish of an incomplete upload)
	done      chan struct{} // closed when run has returned

	// Owned by run until done is closed, then by whoever set over, under mu.
	dir    uploadsDir
	f      *os.File // nil when the file could not be created
	tmp    string
	hashed int64 // and written, unless err
	err    error // the file failed: the rest is only hashed

	mu   sync.Mutex
	over bool // finished or aborted: the file was handed to a Prepared or removed
}

// startSpool starts hashing buf, an upload's staging buffer, into h and writing it
// to a new temporary file in workspace's uploads directory, as advance reports its
// bytes accepted.
func startSpool(log *slog.Logger, workspace string, buf []byte, h hash.Hash) *spool {
	s := &spool{
		log: log, workspace: workspace, buf: buf, hash: h,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
	}
	go s.run()
	return s
}

// advance reports buf[:received] accepted. Only the goroutine holding the upload's
// lock calls it, with received growing.
func (s *spool) advance(received int64) {
	s.ready.Store(received)
	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// run creates the file, then hashes and writes accepted bytes as they come, until
// every byte is hashed or abort. Once the file failed, it only hashes.
func (s *spool) run() {
	defer close(s.done)
	// The buffer's pages past the first chunk are made resident here, while that
	// chunk is answered and the next one arrives (buffer_unix.go).
	prefault(s.buf[min(len(s.buf), ChunkBytes):])
	s.err = s.create()
	size := int64(len(s.buf))
	for s.hashed < size {
		ready := s.ready.Load()
		if ready-s.hashed < spoolPiece && ready < size {
			select {
			case <-s.wake:
				continue
			case <-s.quit:
				return
			}
		}
		select {
		case <-s.quit:
			return
		default:
		}
		p := s.buf[s.hashed : s.hashed+min(ready-s.hashed, ChunkBytes)] // see writeAll
		s.hash.Write(p)
		if s.err == nil {
			if _, s.err = s.f.Write(p); s.err == nil {
				startWriteback(s.f, s.hashed, int64(len(p)))
			}
		}
		s.hashed += int64(len(p))
	}
}

// sum waits for every byte to be hashed and returns the hash. Only Take calls it,
// for a complete upload it has not aborted.
func (s *spool) sum() [sha256.Size]byte {
	<-s.done
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
	var rnd [16]byte
	rand.Read(rnd[:])
	tmp := tempPrefix + hex.EncodeToString(rnd[:]) + tempSuffix
	f, err := dir.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
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
	<-s.done
	err := s.err
	if err == nil && s.hashed == int64(len(s.buf)) && workspace == s.workspace {
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
	<-s.done
	s.remove()
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
