package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync"
	"time"
)

// Timing and bounds of the checkpointer: the WAL is copied back into the database
// file checkpointDelay after a write (the writes of that time share one checkpoint),
// truncated to nothing once writes paused for idleTruncate, and truncated whatever
// it costs the writes once it passed walBound (docs/protocol.md,
// "A daemon that runs for months"). journalLimit is SQLite's
// journal_size_limit: the size a WAL file that is started over is cut back to.
const (
	checkpointDelay = 50 * time.Millisecond
	idleTruncate    = time.Second
	walBound        = 8 << 20
	journalLimit    = 4 << 20
)

// walFilling is the WAL size past which the checkpointer does not wait
// checkpointDelay: back-to-back streamed turns took the WAL past walBound well
// within that delay, and the write that found it so waited for a TRUNCATE of it
// all, 0.12-0.2 ms a commit on average (BenchmarkUpdateStream). Started over, a
// WAL is cut back to journalLimit, so a file larger than that holds at least that
// much of the writes since.
const walFilling = journalLimit

// checkpointer copies the WAL back into the database file in the background, so
// that no write waits for a checkpoint of everything the writes before it wrote.
// SQLite's own checkpoint ran inside the commit that took the WAL past 1,000 pages:
// every few streamed turns, one turn's end waited 5–10 ms for it.
//
// Each checkpoint has two steps. The first, PASSIVE on a connection of its own,
// copies the WAL while writes go on; it never blocks a writer or a reader. It
// cannot leave the WAL wholly copied while writes keep coming, and SQLite starts a
// WAL over from its beginning only when it is: so, left to that, the WAL grows with
// everything ever written (issue 22: 176 MB after 2,000 turns). So the first step
// is repeated while writes keep coming, each time copying what was written during
// the one before, until one finds little to copy (catchUpFrames). The second step,
// PASSIVE again but on the store's one writer connection, runs between two writes
// and copies only what was written during the last pass of the first step; then
// the WAL is wholly copied, the next write starts it over, and journal_size_limit
// cuts the file back. Run after a single pass, the second step took 3.8 ms on
// average in back-to-back streamed turns, most of it holding the writer: it
// copied some 630 pages written while the first step copied 1,100
// (BenchmarkUpdateStream). Should a reader's snapshot keep the WAL from being
// copied whole until it passes walBound, a TRUNCATE checkpoint on the writer
// waits for the readers (they are short) and empties it. Once writes pause for
// idleTruncate, a TRUNCATE checkpoint empties it too.
type checkpointer struct {
	db   *sql.DB       // its own connection
	w    *sql.DB       // the store's writer, for the short steps between writes
	wal  string        // the WAL file's path
	kick chan struct{} // one slot: a write committed
	full chan struct{} // one slot: a write committed that took the WAL past walFilling
	// delay is checkpointDelay; tests set it before the first kick.
	delay time.Duration
	stop  chan struct{}
	done  chan struct{}
	// steps is held while a checkpoint runs, so that the writer's TRUNCATE of bound
	// never meets the background one in progress (SQLite answers a second
	// concurrent checkpoint SQLITE_BUSY at once, and it would truncate nothing).
	steps sync.Mutex
	once  sync.Once       // of close
	ran   chan<- struct{} // tests: told after each checkpoint; nil in the daemon
}

// openCheckpointDB opens the checkpointer's connection to the database at path.
func openCheckpointDB(path string) (*sql.DB, error) {
	common, err := connParams()
	if err != nil {
		return nil, err
	}
	c, err := sql.Open("sqlite", path+"?"+common+walLimitParam)
	if err != nil {
		return nil, fmt.Errorf("store: opening %s for checkpoints: %w", path, err)
	}
	c.SetMaxOpenConns(1)
	return c, nil
}

// walLimitParam sets journal_size_limit on a connection (journalLimit).
const walLimitParam = "&_pragma=journal_size_limit(4194304)"

func newCheckpointer(db, w *sql.DB, path string) *checkpointer {
	c := &checkpointer{db: db, w: w, wal: path + "-wal",
		kick: make(chan struct{}, 1), full: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), delay: checkpointDelay}
	go c.run()
	return c
}

// wrote tells the checkpointer a write committed; it never waits.
func (c *checkpointer) wrote() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// filling tells the checkpointer a write took the WAL past walFilling: it
// checkpoints at once. It never waits.
func (c *checkpointer) filling() {
	select {
	case c.full <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	timer := time.NewTimer(checkpointDelay)
	timer.Stop()
	idle := time.NewTimer(idleTruncate)
	idle.Stop()
	defer idle.Stop()
	for {
		urgent := false
		select {
		case <-c.kick:
		case <-c.full:
			urgent = true
		case <-idle.C:
			// Writes paused: empty the WAL (a write arriving meanwhile waits for it).
			c.steps.Lock()
			c.w.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)")
			c.steps.Unlock()
			c.told()
			continue
		case <-c.stop:
			return
		}
		idle.Stop()
		if !urgent {
			timer.Reset(c.delay)
			select {
			case <-timer.C:
			case <-c.full:
				timer.Stop()
			case <-c.stop:
				timer.Stop()
				return
			}
		}
		c.checkpoint()
		idle.Reset(idleTruncate)
		c.told()
	}
}

// The first step of a checkpoint is repeated at most catchUpPasses times, until a
// pass finds at most catchUpFrames frames to copy: the writes during a pass that
// short leave the second step little to copy while it holds the writer. (Passes
// until one found nothing at all spared the writer in most checkpoints, but cost
// more than the short second step: BenchmarkUpdateStream was 2 % faster than with
// one pass, against 6 % this way, in 8 alternating rounds.)
const (
	catchUpPasses = 8
	catchUpFrames = 64
)

// catchUp runs the first step of a checkpoint: PASSIVE passes on the
// checkpointer's connection, each copying what was written during the one before.
// It reports true when the WAL is wholly copied (SQLite started it over since a
// pass, or the last pass found nothing new), so the second step has nothing to do.
func (c *checkpointer) catchUp(ctx context.Context) bool {
	copied := int64(-1) // frames of the WAL the last pass had copied
	for range catchUpPasses {
		var busy, frames, done int64
		if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &done); err != nil {
			return false
		}
		found := frames - max(copied, 0) // written since the last pass began
		switch {
		case copied >= 0 && frames < copied: // started over: every frame before was copied
			return true
		case found == 0 && done == frames:
			return true
		case found <= catchUpFrames:
			return false
		}
		copied = done
	}
	return false
}

// checkpoint runs the steps described at checkpointer. An error (a full disk, a
// busy file) leaves the pages in the WAL, which stays correct: the next write's
// checkpoint tries again.
func (c *checkpointer) checkpoint() {
	ctx := context.Background()
	c.steps.Lock()
	defer c.steps.Unlock()
	if !c.catchUp(ctx) {
		c.w.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
	}
	if fi, err := os.Stat(c.wal); err == nil && fi.Size() > walBound {
		c.w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	}
}

// bound keeps the WAL within walBound whatever the background steps managed: the
// write that finds it past the bound empties it (TRUNCATE on the writer) before it
// returns, so the WAL never holds more than walBound plus the last write. The
// background steps keep it far below that (the write that finds it past
// walFilling starts them at once); this stalls a write only when they fell
// behind (a loaded machine, a long reader), where a bound that depends on a
// goroutine being scheduled in time would not hold (docs/protocol.md,
// "A daemon that runs for months"). A stat costs a microsecond, a small part of a
// commit.
func (c *checkpointer) bound() {
	fi, err := os.Stat(c.wal)
	switch {
	case err != nil:
	case fi.Size() > walBound:
		c.steps.Lock()
		c.w.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)")
		c.steps.Unlock()
	case fi.Size() > walFilling:
		c.filling()
	}
}

// told tells a test that a checkpoint ran.
func (c *checkpointer) told() {
	if c.ran != nil {
		select {
		case c.ran <- struct{}{}:
		case <-c.stop:
		}
	}
}

// close stops the checkpointer and closes its connection; closing the writer
// after it checkpoints what is left. A second close does nothing.
func (c *checkpointer) close() error {
	c.once.Do(func() { close(c.stop) })
	<-c.done
	return c.db.Close()
}
