package store

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/fullfs"
)

func TestInterruptTurnTranscribesWhatWasStoredThenAMarker(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	turn(t, s, "s1", "t1", user("one"), assistant("done"))
	checkpoints(t, s, "s1", "t2", user("two"), assistant("", call("c1", "shell", `{"command":"ls"}`)))
	if err := s.InterruptTurn(ctx, "s1", "t2", "storage failed"); err != nil {
		t.Fatal(err)
	}
	want := `0 user "one" turn=t1
1 assistant "done" turn=t1
2 user "two" turn=t2
3 tool_call "{\"command\":\"ls\"}" id=c1 name=shell turn=t2
4 marker "storage failed" interrupted turn=t2
`
	if got := rowsString(allRows(t, s, "s1")); got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
	// Finished: a retry, EndTurn and Recover add nothing.
	if err := s.InterruptTurn(ctx, "s1", "t2", "again"); err != nil {
		t.Fatal(err)
	}
	if err := s.EndTurn(ctx, "s1", "t2"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Recover(ctx, "s1"); err != nil || n != 0 {
		t.Fatalf("Recover = %d, %v; want nothing left to recover", n, err)
	}
	if got := rowsString(allRows(t, s, "s1")); got != want {
		t.Errorf("transcript changed after the turn was finished:\n%s", got)
	}
	// The model context keeps the stored checkpoints, never the marker; the call
	// left without a result is answered.
	msgs, err := s.Context(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if strings.Contains(m.Text, "storage failed") {
			t.Errorf("the marker reached the model context: %+v", m)
		}
	}
	if len(msgs) < 4 || msgs[2].Text != "two" || len(msgs[3].ToolCalls) != 1 {
		t.Errorf("model context %+v, want both turns' checkpoints", msgs)
	}
	mustNotExist(t, s.InterruptTurn(ctx, "s1", "nope", "x"))
}

// On a really full file system SQLite answers SQLITE_FULL; the write fails whole,
// nothing committed before is lost, and once space returns the same Store (the same
// connection and WAL) writes again, without reopening.
func TestFullDiskFailsWritesAndTheStoreRecoversWhenSpaceReturns(t *testing.T) {
	fs := fullfs.Mount(t, 2<<20)
	s := openAt(t, filepath.Join(fs.Dir, "sessions.db"))
	create(t, s, "s1")
	turn(t, s, "s1", "t1", user("before"), assistant("kept"))

	fs.Fill()
	big := strings.Repeat("x", 64<<10) // several pages: it cannot fit in a page's slack
	_, err := s.BeginTurn(ctx, "s1", "t2", user(big))
	if err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("BeginTurn on a full disk: %v, want SQLITE_FULL", err)
	}
	if err := s.CreateSession(ctx, Session{ID: "s2", Owner: "alice", Agent: "default", Workspace: "/w"}); err == nil {
		t.Fatal("CreateSession on a full disk succeeded")
	}
	if err := s.Kill(ctx, "s1", fromMS(5)); err == nil {
		t.Fatal("Kill on a full disk succeeded")
	}
	if got := rowsString(allRows(t, s, "s1")); got != "0 user \"before\" turn=t1\n1 assistant \"kept\" turn=t1\n" {
		t.Fatalf("transcript on a full disk:\n%s", got)
	}
	if _, err := s.Session(ctx, "s2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the failed CreateSession left a row: %v", err)
	}

	fs.Free()
	turn(t, s, "s1", "t2", user(big), assistant("after"))
	create(t, s, "s2")
	if err := s.Kill(ctx, "s2", fromMS(5)); err != nil {
		t.Fatalf("Kill after space returned: %v", err)
	}
	rows := allRows(t, s, "s1")
	if len(rows) != 4 || rows[0].Text != "before" || rows[2].Text != big || rows[3].Text != "after" {
		t.Fatalf("transcript after recovery: %s", rowsString(rows))
	}
	// And it survives a reopen: nothing was half written.
	s.Close()
	s2 := openAt(t, filepath.Join(fs.Dir, "sessions.db"))
	if n := len(allRows(t, s2, "s1")); n != 4 {
		t.Fatalf("after reopening: %d rows, want 4", n)
	}
}
