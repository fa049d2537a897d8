package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fullfs"
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

// A replay-log batch that fails to store leaves no silent gap (docs/protocol.md,
// "Storage failures"): a replay from before the loss is answered as truncated, first
// from what the store remembers, then, once a write works again, from the log itself.
func TestAFailedUpdateBatchTruncatesTheReplayInsteadOfSkippingIt(t *testing.T) {
	var on bool
	s := open(t, Options{FailWrites: failing(OpAppendUpdates, &on)})
	create(t, s, "s1")
	create(t, s, "s2")
	if err := s.AppendUpdates(ctx, updates("s1", 1, 10)); err != nil {
		t.Fatal(err)
	}
	on = true
	if err := s.AppendUpdates(ctx, append(updates("s1", 11, 20), updates("s2", 1, 3)...)); err == nil {
		t.Fatal("the injected failure did not fail the batch")
	}
	on = false
	for _, tt := range []struct {
		phase     string
		afterSeq  uint64
		wantSeqs  int
		truncated bool
	}{{"while failing", 5, 0, true}, {"while failing", 19, 0, true}, {"while failing", 20, 0, false}} {
		seqs, oldest := replay(t, s, "s1", tt.afterSeq)
		if truncated := oldest == 0 || tt.afterSeq+1 < oldest; truncated != tt.truncated || len(seqs) != tt.wantSeqs {
			t.Errorf("%s: replay after %d gave %v (oldest %d), want truncated %v", tt.phase, tt.afterSeq, seqs, oldest, tt.truncated)
		}
	}
	if err := s.AppendUpdates(ctx, updates("s1", 21, 25)); err != nil {
		t.Fatal(err)
	}
	if seqs, oldest := replay(t, s, "s1", 5); oldest != 21 || len(seqs) != 5 || seqs[0] != 21 {
		t.Fatalf("after the next write: replay after 5 = %v, oldest %d; want oldest 21 (truncated)", seqs, oldest)
	}
	if seqs, oldest := replay(t, s, "s1", 20); oldest != 21 || fmt.Sprint(seqs) != "[21 22 23 24 25]" {
		t.Fatalf("replay after 20 = %v, oldest %d", seqs, oldest)
	}
	if n := counts(t, s, "s1")["update_runs"]; n != 1 {
		t.Errorf("%d runs kept, want the one after the gap", n)
	}
	var kept int
	s.r.QueryRowContext(ctx, "SELECT updates_kept FROM sessions WHERE id = 's1'").Scan(&kept)
	if kept != 5 {
		t.Errorf("updates_kept = %d, want 5", kept)
	}
	// The other session of the failed batch is marked too.
	if _, oldest := replay(t, s, "s2", 0); oldest != 4 {
		t.Errorf("s2: oldest %d, want 4 (its seqs 1-3 were lost)", oldest)
	}
}
