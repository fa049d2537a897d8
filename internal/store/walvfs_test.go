//go:build unix

package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A commit reaches the WAL file in as few writes as its size allows (walvfs.go),
// not two per page, and another connection reads it at once.
func TestACommitIsWrittenToTheWALInOneWriteAPiece(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	if _, err := s.BeginTurn(ctx, "s1", "t0", user("warm")); err != nil {
		t.Fatal(err)
	}
	// At most: the prompt's pages in pieces of 128 KiB, the end of the turn before
	// (a page or two: one write), and, each time the background checkpointer copied
	// the WAL meanwhile so that the next commit starts it over (before each of the
	// two commits, on a loaded machine), its header, written and synced on its own.
	// A write a page would be 54 and 250-odd.
	for _, c := range []struct {
		turn   string
		words  int
		writes int64
	}{
		{"t1", 20_000, 1 + 1 + 2},  // 100 KB: 27 pages, 111 KB of frames, one piece
		{"t2", 100_000, 5 + 1 + 2}, // 500 KB: 125 pages, 520 KB of frames, five pieces at most
	} {
		prompt := strings.Repeat("word ", c.words)
		before := walWrites.Load()
		if err := s.EndTurn(ctx, "s1", prevTurn(c.turn)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.BeginTurn(ctx, "s1", c.turn, user(prompt)); err != nil {
			t.Fatal(err)
		}
		writes := walWrites.Load() - before
		if writes < 1 || writes > c.writes {
			t.Errorf("a %d-byte prompt's turn: %d writes to the WAL, want 1 to %d", len(prompt), writes, c.writes)
		}
		got := mustContext(t, s, "s1") // read on another connection
		if last := got[len(got)-1]; last.Text != prompt {
			t.Errorf("the prompt read back is %d bytes, want %d", len(last.Text), len(prompt))
		}
	}
}

func prevTurn(turn string) string { return map[string]string{"t1": "t0", "t2": "t1"}[turn] }

// A checkpoint copies the WAL into the database file in runs of pages, a write a
// run, not a page a write; what it copied is there for a connection opened after.
func TestACheckpointWritesTheDatabaseInRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openAt(t, path)
	create(t, s, "s1")
	prompt := strings.Repeat("word ", 100_000) // 500 KB: 120-odd pages, mostly one run
	// From before the write: the background checkpointer may copy it first.
	before := dbWrites.Load()
	if _, err := s.BeginTurn(ctx, "s1", "t1", user(prompt)); err != nil {
		t.Fatal(err)
	}
	var busy, log, copied int
	if err := s.w.QueryRow("PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &log, &copied); err != nil || busy != 0 {
		t.Fatalf("PRAGMA wal_checkpoint(TRUNCATE): busy %d, %v", busy, err)
	}
	writes := dbWrites.Load() - before
	if writes < 1 || writes > 20 {
		t.Errorf("checkpoints of a 500 KB write made %d writes to the database, want 1 to 20", writes)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() != 0 {
		t.Fatalf("the WAL after TRUNCATE: %v, %v", fi, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := mustContext(t, openAt(t, path), "s1") // read from the database file alone
	if len(got) != 1 || got[0].Text != prompt {
		t.Errorf("read back %d messages", len(got))
	}
}

// Whatever a commit's size, nothing of it is left gathered when it returns: not
// when its commit frame's page is what fills the piece (a 32nd frame), nor
// otherwise. A sweep of commits of 20 to 70 pages, each read back on another
// connection.
func TestNothingOfACommitIsLeftGatheredWhenItReturns(t *testing.T) {
	s := open(t)
	for size := 60_000; size < 300_000; size += 2_000 { // a page or half of one apart
		id := fmt.Sprintf("s%d", size)
		create(t, s, id)
		prompt := strings.Repeat("w", size)
		if _, err := s.BeginTurn(ctx, id, "t", user(prompt)); err != nil {
			t.Fatal(err)
		}
		filesMu.Lock()
		for _, f := range files {
			if f.wal && f.n > 0 {
				t.Errorf("a %d-byte prompt's commit returned with %d bytes of the WAL not written", size, f.n)
			}
		}
		filesMu.Unlock()
		if got := mustContext(t, s, id); len(got) != 1 || got[0].Text != prompt {
			t.Fatalf("a %d-byte prompt read back as %d messages", size, len(got))
		}
	}
}
