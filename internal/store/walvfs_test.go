//go:build unix

package store

import (
	"bytes"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fullfs"
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
			if f.n > 0 {
				t.Errorf("a %d-byte prompt's commit returned with %d bytes of the WAL not written", size, f.n)
			}
		}
		filesMu.Unlock()
		if got := mustContext(t, s, id); len(got) != 1 || got[0].Text != prompt {
			t.Fatalf("a %d-byte prompt read back as %d messages", size, len(got))
		}
	}
}

// A checkpoint that cannot write what it copies into the database file (a full
// disk, the file having to grow) records nothing as copied: SQLite sees the failed
// write, and a reader that comes after reads the pages from the WAL, whole. Here the
// checkpoint is partial (a reader's snapshot holds back the last frames), the case
// where SQLite records what it copied without syncing the database file first:
// writes held back until a sync (or a file control whose error SQLite ignores)
// would be recorded as copied without being in the file.
func TestACheckpointThatCannotWriteTheDatabaseRecordsNothingAsCopied(t *testing.T) {
	fs := fullfs.Mount(t, 4<<20)
	path := filepath.Join(fs.Dir, "raw.db")
	params, err := connParams()
	if err != nil {
		t.Fatal(err)
	}
	dsn := path + "?" + params + "&_journal_mode=WAL&_synchronous=NORMAL&_pragma=wal_autocheckpoint(0)"
	conn := func() *sql.DB {
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		return db
	}
	w, r, c := conn(), conn(), conn()
	exec := func(db *sql.DB, q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(w, "CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB NOT NULL)")
	exec(w, "PRAGMA wal_checkpoint(TRUNCATE)") // the database file holds the schema alone
	big := make([]byte, 100<<10)               // 25 pages past the database file's end, one run
	for i := range big {
		big[i] = byte(i*7 + i/4096)
	}
	exec(w, "INSERT INTO t (id, b) VALUES (1, ?)", big)
	// A reader's snapshot after the big row, then one more write: the checkpoint may
	// copy the big row's frames, not the last write's.
	tx, err := r.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the reader's snapshot: %d rows, %v", n, err)
	}
	exec(w, "INSERT INTO t (id, b) VALUES (2, x'00')")
	fs.Fill()
	var busy, log, copied int
	err = c.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &copied)
	t.Logf("checkpoint on a full disk: busy %d, log %d, copied %d, %v", busy, log, copied, err)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	fs.Free()
	var got []byte
	if err := conn().QueryRow("SELECT b FROM t WHERE id = 1").Scan(&got); err != nil {
		t.Fatalf("reading the big row after the failed checkpoint: %v", err)
	}
	if !bytes.Equal(got, big) {
		t.Fatalf("the big row read back after the failed checkpoint differs (%d bytes, want %d)", len(got), len(big))
	}
	var integrity string
	if err := conn().QueryRow("PRAGMA integrity_check").Scan(&integrity); err != nil {
		t.Fatal(err)
	}
	if integrity != "ok" {
		t.Fatalf("integrity_check after the failed checkpoint: %q, want ok", integrity)
	}
}
