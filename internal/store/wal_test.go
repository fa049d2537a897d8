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

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// storeTurn writes what a streamed echo turn writes: its prompt, its updates, its
// reply (unless reply is empty: the updates carry it) and its end.
func storeTurn(t *testing.T, s *Store, sid string, i int, reply string, seq *uint64) {
	t.Helper()
	id := fmt.Sprintf("turn_%d", i)
	if _, err := s.BeginTurnFor(ctx, sid, id, "", llm.Message{Role: llm.RoleUser, Text: "say it again"}); err != nil {
		t.Fatal(err)
	}
	var us []Update
	for w := range 20 {
		*seq++
		us = append(us, Update{SessionID: sid, Seq: *seq, Payload: fmt.Appendf(nil, `{"sessionId":%q,"seq":%d,"type":"agent_message_chunk","text":"word%d "}`, sid, *seq, w)})
	}
	if err := s.AppendUpdates(ctx, us); err != nil {
		t.Fatal(err)
	}
	if reply != "" {
		if _, err := s.AppendCheckpoint(ctx, sid, id, llm.Message{Role: llm.RoleAssistant, Text: reply}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.EndTurn(ctx, sid, id); err != nil {
		t.Fatal(err)
	}
}

// TestTheWALStaysBoundedUnderContinuousTurnsAndEmptiesOnceWritesPause: 3,000 turns
// written back to back never take the WAL file past 8 MiB plus one turn's writes,
// and once the writes pause it is truncated (docs/protocol.md,
// "A daemon that runs for months"). Before, only PASSIVE
// checkpoints ran, which never leave the WAL wholly copied while writes keep
// coming, and SQLite starts a WAL over only when it is: it grew with every turn.
func TestTheWALStaysBoundedUnderContinuousTurnsAndEmptiesOnceWritesPause(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openAt(t, path)
	create(t, s, "s1")
	var seq uint64
	var peak int64
	const turns = 3000
	const slack = 1 << 20 // more than one turn writes
	for i := range turns {
		storeTurn(t, s, "s1", i, "", &seq)
		if n := fileSize(t, path+"-wal"); n > peak {
			peak = n
			if n > walBound+slack {
				t.Fatalf("after %d turns the WAL is %d bytes, over %d", i+1, n, walBound+slack)
			}
		}
	}
	t.Logf("%d turns: the WAL peaked at %d bytes; the database file is %d", turns, peak, fileSize(t, path))
	deadline := time.Now().Add(30 * time.Second)
	for fileSize(t, path+"-wal") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the WAL is still %d bytes 30 s after the writes stopped", fileSize(t, path+"-wal"))
		}
		time.Sleep(20 * time.Millisecond) // polling the file: the checkpointer says nothing
	}
}

// TestDeletingASessionGivesItsSpaceBack: session/delete frees the session's pages,
// and the incremental vacuum that follows gives them back to the file system
// (docs/protocol.md, "A daemon that runs for months").
func TestDeletingASessionGivesItsSpaceBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openAt(t, path)
	create(t, s, "big")
	create(t, s, "small")
	var seq, small uint64
	reply := strings.Repeat("a long reply that takes room ", 400)
	for i := range 200 {
		storeTurn(t, s, "big", i, reply, &seq)
	}
	storeTurn(t, s, "small", 0, "short", &small)
	waitSize := func(what string, ok func(int64) bool) int64 {
		deadline := time.Now().Add(30 * time.Second)
		for {
			n := fileSize(t, path)
			if ok(n) {
				return n
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the database file stays %d bytes", what, n)
			}
			time.Sleep(20 * time.Millisecond) // polling the file: the checkpointer says nothing
		}
	}
	full := waitSize("checkpointed", func(n int64) bool { return n > int64(200*len(reply)) })
	if err := s.Delete(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	after := waitSize("after the delete", func(n int64) bool { return n < full/4 })
	t.Logf("the database file: %d bytes with the session, %d after its delete", full, after)
	if _, err := s.Session(ctx, "small"); err != nil {
		t.Fatalf("the other session: %v", err)
	}
}
