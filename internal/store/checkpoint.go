package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// checkpointDelay is how long after a write the WAL is copied back into the
// database file: the writes of that time share one checkpoint.
const checkpointDelay = 50 * time.Millisecond

// checkpointer copies the WAL back into the database file in the background, on a
// connection of its own, so that no write waits for it. SQLite's own checkpoint
// ran inside the commit that took the WAL past 1,000 pages: every few streamed
// turns, one turn's end waited 5–10 ms for it. A PASSIVE checkpoint never blocks a
// writer or a reader; what a reader still needs is copied by a later one.
type checkpointer struct {
	db   *sql.DB
	kick chan struct{} // one slot: a write committed
	stop chan struct{}
	done chan struct{}
	once sync.Once       // of close
	ran  chan<- struct{} // tests: told after each checkpoint; nil in the daemon
}

// openCheckpointDB opens the checkpointer's connection to the database at path.
func openCheckpointDB(path string) (*sql.DB, error) {
	c, err := sql.Open("sqlite", path+"?"+commonParams)
	if err != nil {
		return nil, fmt.Errorf("store: opening %s for checkpoints: %w", path, err)
	}
	c.SetMaxOpenConns(1)
	return c, nil
}

func newCheckpointer(db *sql.DB) *checkpointer {
	c := &checkpointer{db: db, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
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

func (c *checkpointer) run() {
	defer close(c.done)
	timer := time.NewTimer(checkpointDelay)
	timer.Stop()
	for {
		select {
		case <-c.kick:
		case <-c.stop:
			return
		}
		timer.Reset(checkpointDelay)
		select {
		case <-timer.C:
		case <-c.stop:
			timer.Stop()
			return
		}
		// An error (a full disk, a busy file) leaves the pages in the WAL, which
		// stays correct: the next write's checkpoint tries again.
		c.db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
		if c.ran != nil {
			select {
			case c.ran <- struct{}{}:
			case <-c.stop:
			}
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
