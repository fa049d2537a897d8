package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

func TestControlsAndUsageTotalsAreStored(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	if err := s.SetControls(ctx, "s1", Controls{Mode: "full", Model: "m2", Title: "my work"}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		turnID := fmt.Sprintf("t%d", i)
		if _, err := s.BeginTurn(ctx, "s1", turnID, user("q")); err != nil {
			t.Fatal(err)
		}
		if err := s.EndTurnWith(ctx, "s1", turnID, TurnResult{StopReason: "end_turn", InputTokens: 3, OutputTokens: 5}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Controls != (Controls{Mode: "full", Model: "m2", Title: "my work"}) || got.Totals != (Totals{6, 10}) {
		t.Errorf("controls %+v totals %+v", got.Controls, got.Totals)
	}
	rows, _, err := s.ListSessions(ctx, "", 10, "")
	if err != nil || len(rows) != 1 || rows[0].Totals != (Totals{6, 10}) || rows[0].Controls.Title != "my work" {
		t.Errorf("ListSessions = %+v, %v", rows, err)
	}
	if err := s.SetControls(ctx, "s1", Controls{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Session(ctx, "s1"); got.Controls != (Controls{}) {
		t.Errorf("cleared controls = %+v", got.Controls)
	}
	mustNotExist(t, s.SetControls(ctx, "nope", Controls{Mode: "full"}))
}

func TestCompactReplacesTheContextKeepsTheTranscriptAndRecordsTheOperation(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	turn(t, s, "s1", "t1", user("a long question"), assistant("a long answer"))
	err := s.Compact(ctx, "s1", Compaction{TurnID: "c1", OperationID: "op1", Before: 100, After: 10,
		Snapshot: []llm.Message{user("summary")}, Usage: Totals{7, 2}})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Context(ctx, "s1")
	if err != nil || len(msgs) != 1 || msgs[0].Text != "summary" {
		t.Errorf("Context after compaction = %+v, %v", msgs, err)
	}
	rows, total, err := s.Messages(ctx, "s1", 100, -1)
	if err != nil || total != 2 || len(rows) != 2 {
		t.Errorf("transcript after compaction: %d rows (total %d), %v", len(rows), total, err)
	}
	op, err := s.Operation(ctx, "s1", "op1")
	if err != nil || op.Compaction == nil || *op.Compaction != [2]int{100, 10} || op.TurnID != "c1" ||
		op.Result == nil || op.Result.StopReason != "compacted" {
		t.Errorf("Operation(op1) = %+v, %v", op, err)
	}
	if row, _ := s.Session(ctx, "s1"); row.Totals != (Totals{7, 2}) || row.MessageCount != 2 {
		t.Errorf("after compaction: totals %+v, %d transcript rows", row.Totals, row.MessageCount)
	}
	// Not smaller: the context stays, the outcome is still recorded.
	if err := s.Compact(ctx, "s1", Compaction{TurnID: "c2", OperationID: "op2", Before: 7, After: 9}); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := s.Context(ctx, "s1"); len(msgs) != 1 || msgs[0].Text != "summary" {
		t.Errorf("Context after an uncompacted compaction = %+v", msgs)
	}
	if op, _ := s.Operation(ctx, "s1", "op2"); op.Compaction == nil || *op.Compaction != [2]int{7, 9} {
		t.Errorf("Operation(op2) = %+v", op)
	}
	// A prompt's operation id carries no compaction.
	if _, err := s.BeginTurnFor(ctx, "s1", "t2", "op3", user("x")); err != nil {
		t.Fatal(err)
	}
	if op, _ := s.Operation(ctx, "s1", "op3"); op.Compaction != nil {
		t.Errorf("a prompt's operation = %+v", op)
	}
	mustNotExist(t, s.Compact(ctx, "nope", Compaction{TurnID: "c"}))
}

func TestForkCopiesTranscriptControlsAndContext(t *testing.T) {
	s := open(t)
	create(t, s, "src")
	turn(t, s, "src", "t1", user("q1"), assistant("a1"))
	if err := s.SetControls(ctx, "src", Controls{Mode: "readonly"}); err != nil {
		t.Fatal(err)
	}
	ctxMsgs, err := s.Context(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	dst := Session{ID: "dst", Owner: "alice", Agent: "default", Workspace: "/w"}
	if err := s.Fork(ctx, "src", dst, Controls{Mode: "readonly", Title: "branch"}, ctxMsgs); err != nil {
		t.Fatal(err)
	}
	got, err := s.Session(ctx, "dst")
	if err != nil || got.MessageCount != 2 || got.Controls != (Controls{Mode: "readonly", Title: "branch"}) || got.Totals != (Totals{}) {
		t.Fatalf("forked row = %+v, %v", got, err)
	}
	forked, err := s.Context(ctx, "dst")
	if err != nil || !slices.EqualFunc(forked, ctxMsgs, func(a, b llm.Message) bool { return a.Role == b.Role && a.Text == b.Text }) {
		t.Errorf("forked context = %+v, %v; want %+v", forked, err, ctxMsgs)
	}
	// The fork goes on by itself: a turn there changes nothing in src.
	turn(t, s, "dst", "t2", user("q2"), assistant("a2"))
	if c, _ := s.Context(ctx, "dst"); len(c) != 4 {
		t.Errorf("fork context after a turn: %d messages, want 4", len(c))
	}
	if c, _ := s.Context(ctx, "src"); len(c) != 2 {
		t.Errorf("source context after the fork's turn: %d messages, want 2", len(c))
	}
	if err := s.Fork(ctx, "src", dst, Controls{}, nil); !errors.Is(err, ErrExists) {
		t.Errorf("fork onto a taken id: %v, want ErrExists", err)
	}
	mustNotExist(t, s.Fork(ctx, "nope", Session{ID: "x", Owner: "a", Agent: "a", Workspace: "/w"}, Controls{}, nil))
}

// snapshotOf returns the stored snapshot's message count and boundary.
func snapshotOf(t *testing.T, s *Store, sessionID string) (int, int64) {
	t.Helper()
	var raw []byte
	var boundary int64
	if err := s.w.QueryRowContext(ctx, "SELECT messages, boundary FROM snapshots WHERE session_id = ?", sessionID).
		Scan(&raw, &boundary); err != nil {
		t.Fatal(err)
	}
	msgs, err := decodeMessages(raw)
	if err != nil {
		t.Fatal(err)
	}
	return len(msgs), boundary
}

func texts(msgs []llm.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

// An automatic compaction in a running turn keeps the turn's prompt and what
// followed it as the checkpoints they are: the snapshot stores only the summary,
// and the context, before and after the turn ends and after a reopen, is the
// summary then those messages.
func TestCompactKeepsTheNewestCheckpointsOutOfTheSnapshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openAt(t, path)
	create(t, s, "s1")
	turn(t, s, "s1", "t1", user("old question"), assistant("old answer"))
	ids := checkpoints(t, s, "s1", "t2", user("a long prompt"), assistant("", call("c1", "shell", "{}")), result("c1", "shell", "out"))
	summary := []llm.Message{user("Summarise"), assistant("the summary")}
	kept := []llm.Message{user("a long prompt"), assistant("", call("c1", "shell", "{}")), result("c1", "shell", "out")}
	err := s.Compact(ctx, "s1", Compaction{TurnID: "c1", Before: 100, After: 10,
		Snapshot: append(slices.Clone(summary), kept...), Kept: ids})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Summarise", "the summary", "a long prompt", "", "out"}
	if n, boundary := snapshotOf(t, s, "s1"); n != 2 || boundary != ids[0]-1 {
		t.Errorf("snapshot of %d messages to %d; want the summary's 2, to %d", n, boundary, ids[0]-1)
	}
	if msgs, err := s.Context(ctx, "s1"); err != nil || !slices.Equal(texts(msgs), want) {
		t.Errorf("Context in the turn = %q, %v; want %q", texts(msgs), err, want)
	}
	if _, err := s.AppendCheckpoint(ctx, "s1", "t2", assistant("done")); err != nil {
		t.Fatal(err)
	}
	if err := s.EndTurn(ctx, "s1", "t2"); err != nil {
		t.Fatal(err)
	}
	want = append(want, "done")
	if msgs, err := s.Context(ctx, "s1"); err != nil || !slices.Equal(texts(msgs), want) {
		t.Errorf("Context after the turn = %q, %v; want %q", texts(msgs), err, want)
	}
	s.Close()
	s = openAt(t, path)
	if msgs, err := s.Context(ctx, "s1"); err != nil || !slices.Equal(texts(msgs), want) {
		t.Errorf("Context after a reopen = %q, %v; want %q", texts(msgs), err, want)
	}
}

// Kept ids that are not the session's newest checkpoints, or whose boundary would
// move back over the current one, are stored the old way: the whole snapshot,
// covering every checkpoint.
func TestCompactStoresTheWholeSnapshotWhenTheKeptAreNotTheNewest(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	ids := checkpoints(t, s, "s1", "t1", user("prompt"), assistant("", call("c1", "shell", "{}")), result("c1", "shell", "out"))
	snap := []llm.Message{user("S"), assistant("sum"), user("prompt")}
	// The prompt alone is not what the session's newest checkpoints are.
	if err := s.Compact(ctx, "s1", Compaction{TurnID: "c1", Before: 9, After: 3, Snapshot: snap, Kept: ids[:1]}); err != nil {
		t.Fatal(err)
	}
	if n, boundary := snapshotOf(t, s, "s1"); n != 3 || boundary != ids[2] {
		t.Errorf("snapshot of %d messages to %d; want all 3, to %d", n, boundary, ids[2])
	}
	if msgs, _ := s.Context(ctx, "s1"); !slices.Equal(texts(msgs), []string{"S", "sum", "prompt"}) {
		t.Errorf("Context = %q", texts(msgs))
	}
	// Now the newest, but before the boundary the first compaction set.
	snap = []llm.Message{user("S2"), assistant("sum2"), assistant("", call("c1", "shell", "{}")), result("c1", "shell", "out")}
	if err := s.Compact(ctx, "s1", Compaction{TurnID: "c2", Before: 9, After: 3, Snapshot: snap, Kept: ids[1:]}); err != nil {
		t.Fatal(err)
	}
	if n, boundary := snapshotOf(t, s, "s1"); n != 4 || boundary != ids[2] {
		t.Errorf("snapshot of %d messages to %d; want all 4, to %d", n, boundary, ids[2])
	}
	if msgs, _ := s.Context(ctx, "s1"); !slices.Equal(texts(msgs), []string{"S2", "sum2", "", "out"}) {
		t.Errorf("Context = %q", texts(msgs))
	}
	err := s.Compact(ctx, "s1", Compaction{TurnID: "c3", Before: 9, After: 3, Snapshot: snap[:1], Kept: ids})
	if err == nil {
		t.Error("a compaction keeping more messages than its snapshot has was stored")
	}
}
