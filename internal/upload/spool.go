package upload

import (
	"crypto/rand"
	"encoding/hex"
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

// spool writes an upload's accepted bytes to a temporary file in its workspace's
// uploads directory while later chunks arrive, and starts their writeback, so that
// the commit finds the file written and nearly synced: what is left is the last
// chunk's write and one fsync. On Linux that cuts a 10 MB commit from about 8 ms of
// write and fsync to well under 1 ms (docs/BENCHMARKS.md).
//
// It only saves time: the staged bytes stay in their buffer, and when anything
// fails (the directory, a write, the sync), the commit writes the file whole from
// them with Prepare, exactly as it does for an upload that was not spooled. The
// file is named by nothing until the commit places it, and it is removed whenever
// the upload goes without being placed (discarded, expired, reclaimed, refused).
//
// One goroutine, run, writes. It reads buf[:ready] while chunks are decoded into
// buf[ready:], and the buffer is freed only once it has returned (finish, abort).
type spool struct {
	log       *slog.Logger
	workspace string
	buf       []byte        // the upload's staging buffer, exactly its size
	ready     atomic.Int64  // bytes of buf accepted, which no chunk changes again
	wake      chan struct{} // capacity 1: ready moved
	quit      chan struct{} // closed by abort (and by finish of an incomplete upload)
	done      chan struct{} // closed when run has returned

	// Owned by run until done is closed, then by whoever closed over under mu.
	dir     uploadsDir
	f       *os.File // nil when the file could not be created
	tmp     string
	written int64
	err     error

	mu   sync.Mutex
	over bool // finished or aborted: the file was handed to a Prepared or removed
}

// startSpool starts writing buf, an upload's staging buffer, to a new temporary
// file in workspace's uploads directory as advance reports its bytes accepted.
func startSpool(log *slog.Logger, workspace string, buf []byte) *spool {
	s := &spool{
		log: log, workspace: workspace, buf: buf,
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

// run creates the file, then writes accepted bytes as they come, until every byte
// is written, a write fails, or abort.
func (s *spool) run() {
	defer close(s.done)
	if s.err = s.create(); s.err != nil {
		return
	}
	size := int64(len(s.buf))
	for s.written < size {
		ready := s.ready.Load()
		if ready-s.written < spoolPiece && ready < size {
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
		n := min(ready-s.written, ChunkBytes) // see writeAll
		if _, err := s.f.Write(s.buf[s.written : s.written+n]); err != nil {
			s.err = err
			return
		}
		startWriteback(s.f, s.written, n)
		s.written += n
	}
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
	if err == nil && s.written == int64(len(s.buf)) && workspace == s.workspace {
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
