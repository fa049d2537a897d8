package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// The WAL is copied back into the database file by the store's checkpointer, in
// the background, and not by the writes themselves: a burst of turns that writes
// more than SQLite's autocheckpoint (1,000 pages) checkpoints in none of its
// commits, and shortly after it the database file holds what was written. (Only a
// WAL past walBound, 8 MiB, is emptied by the write that finds it so: bound.)
func TestTheWALIsCheckpointedInTheBackground(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openAt(t, path)
	create(t, s, "s1")
	var sizes []int64
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	text := strings.Repeat("some words of a long reply ", 2000) // 54 KB: 14 pages a copy
	// Stop the checkpointer, so that only the writes could checkpoint.
	s.ckpt.close()
	const turns = 20 // some 6 MB of WAL: more than SQLite's autocheckpoint, less than walBound
	for i := range turns {
		id := "t" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if _, err := s.BeginTurnFor(ctx, "s1", id, "", llm.Message{Role: llm.RoleUser, Text: text}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendCheckpoint(ctx, "s1", id, llm.Message{Role: llm.RoleAssistant, Text: text}); err != nil {
			t.Fatal(err)
		}
		if err := s.EndTurn(ctx, "s1", id); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, size())
	}
	if after := size(); after > before+int64(len(text)) {
		t.Fatalf("the database file grew from %d to %d bytes while no checkpointer ran: the writes checkpointed (%v)", before, after, sizes)
	}
	// A checkpointer again, as Open starts it: the file receives the pages.
	c, err := openCheckpointDB(path)
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	ck := newCheckpointer(c, s.w, path)
	ck.ran = ran // before the kick that hands it to the checkpointer's goroutine
	s.ckpt = ck
	s.ckpt.wrote()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("no checkpoint within 10 s of a write")
	}
	if got := size(); got < before+turns*int64(len(text)) {
		t.Fatalf("after the checkpoint the database file is %d bytes, want at least %d", got, before+turns*int64(len(text)))
	}
}

// A write that takes the WAL past walFilling starts a checkpoint at once, without
// waiting checkpointDelay: writes that fill it faster than that (back-to-back
// streamed turns) would otherwise take it past walBound, and the write that found
// it so would wait for a TRUNCATE of it all. Here the delay is an hour, so only
// the filling write can start the checkpoint that copies the pages into the file.
func TestAWriteThatFillsTheWALStartsACheckpointAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openAt(t, path)
	create(t, s, "s1")
	s.ckpt.close()
	c, err := openCheckpointDB(path)
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	ck := newCheckpointer(c, s.w, path)
	ck.delay, ck.ran = time.Hour, ran // before the first kick
	s.ckpt = ck
	before := fileSize(t, path)
	text := strings.Repeat("some words of a long reply ", 2000) // 54 KB: 14 pages a copy
	turns := 0
	for fileSize(t, path+"-wal") <= walFilling {
		if turns == 200 {
			t.Fatalf("200 turns left the WAL at %d bytes, never past %d", fileSize(t, path+"-wal"), walFilling)
		}
		id := fmt.Sprintf("t%d", turns)
		if _, err := s.BeginTurnFor(ctx, "s1", id, "", llm.Message{Role: llm.RoleUser, Text: text}); err != nil {
			t.Fatal(err)
		}
		if err := s.EndTurn(ctx, "s1", id); err != nil {
			t.Fatal(err)
		}
		turns++
	}
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		t.Fatalf("no checkpoint within 30 s of the write that took the WAL to %d bytes (the delay is an hour)", fileSize(t, path+"-wal"))
	}
	if got := fileSize(t, path); got < before+int64(turns)*int64(len(text)) {
		t.Fatalf("after the checkpoint the database file is %d bytes, want at least %d", got, before+int64(turns)*int64(len(text)))
	}
}

// Once writes pause, the checkpoint's first step alone (catchUp, on the
// checkpointer's own connection) copies the whole WAL, and says so: the second
// step, which holds the writer, is not needed, and the next write starts the WAL
// over from its beginning.
func TestACheckpointThatCatchesUpLetsTheNextWriteStartTheWALOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openAt(t, path)
	create(t, s, "s1")
	s.ckpt.close() // this test runs the steps itself
	c, err := openCheckpointDB(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ck := &checkpointer{db: c, w: s.w, wal: path + "-wal"}
	frames := func() int64 {
		var busy, log, done int64
		if err := c.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done); err != nil {
			t.Fatal(err)
		}
		return log
	}
	text := strings.Repeat("some words of a long reply ", 2000)
	var seq uint64
	for i := range 10 {
		storeTurn(t, s, "s1", i, text, &seq)
	}
	if !ck.catchUp(ctx) {
		t.Fatal("with no write coming, the first step did not report the WAL wholly copied")
	}
	before := frames()
	storeTurn(t, s, "s1", 10, "", &seq)
	if after := frames(); after >= before {
		t.Fatalf("the write after the checkpoint left %d frames in the WAL, which had %d: it was not started over", after, before)
	}
}
