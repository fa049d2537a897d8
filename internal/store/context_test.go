package store

import (
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

func msgsString(ms []llm.Message) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%s %q", m.Role, m.Text)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, " call(%s %s %s)", c.ID, c.Name, c.Arguments)
		}
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, " for=%s/%s", m.ToolCallID, m.Name)
		}
		if m.IsError {
			b.WriteString(" error")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func mustContext(t testing.TB, s *Store, id string) []llm.Message {
	t.Helper()
	got, err := s.Context(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestContextWithoutASnapshotReplaysEveryCheckpoint(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	t1 := []llm.Message{user("a"), assistant("", call("c1", "shell", `{"command":"ls"}`)), result("c1", "shell", "x"), assistant("b")}
	t2 := []llm.Message{user("c"), assistant("d")}
	turn(t, s, "s1", "t1", t1...)
	turn(t, s, "s1", "t2", t2...)
	if got, want := mustContext(t, s, "s1"), append(t1, t2...); !reflect.DeepEqual(got, want) {
		t.Errorf("Context:\n%s\nwant:\n%s", msgsString(got), msgsString(want))
	}
	_, err := s.Context(ctx, "nope")
	mustNotExist(t, err)
	if got := mustContext(t, s, func() string { create(t, s, "empty"); return "empty" }()); len(got) != 0 {
		t.Errorf("a new session's context: %v", got)
	}
}

func TestContextIsTheSnapshotPlusLaterCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		name     string
		snapshot []llm.Message
	}{
		{"a retained snapshot", []llm.Message{user("summary of b"), assistant("b")}},
		{"an explicitly empty snapshot", []llm.Message{}},
		{"a nil snapshot stored as empty", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			create(t, s, "s1")
			turn(t, s, "s1", "t1", user("a"), assistant("b"))
			ids := turn(t, s, "s1", "t2", user("c"), assistant("d"))
			if err := s.Trim(ctx, "s1", tc.snapshot, ids[0]); err != nil { // covers a, b, c
				t.Fatal(err)
			}
			turn(t, s, "s1", "t3", user("e"))
			want := append(append([]llm.Message{}, tc.snapshot...), assistant("d"), user("e"))
			if got := mustContext(t, s, "s1"); !reflect.DeepEqual(got, want) {
				t.Errorf("Context:\n%s\nwant:\n%s", msgsString(got), msgsString(want))
			}
			// The covered checkpoints are gone; the transcript is whole.
			var n int
			s.r.QueryRowContext(ctx, "SELECT count(*) FROM checkpoints WHERE session_id = 's1' AND id <= ?", ids[0]).Scan(&n)
			if n != 0 {
				t.Errorf("%d covered checkpoints remain", n)
			}
			if rows := allRows(t, s, "s1"); len(rows) != 5 || rows[0].Text != "a" || rows[4].Text != "e" {
				t.Errorf("transcript after trim:\n%s", rowsString(rows))
			}
		})
	}
}

func TestTrimKeepsTheIndexesOfTheTranscript(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	var last int64
	for i := range 4 {
		ids := turn(t, s, "s1", fmt.Sprint("t", i), user(fmt.Sprint("q", i)), assistant(fmt.Sprint("a", i)))
		last = ids[len(ids)-1]
	}
	before := allRows(t, s, "s1")
	if err := s.Trim(ctx, "s1", []llm.Message{user("q3"), assistant("a3")}, last); err != nil {
		t.Fatal(err)
	}
	turn(t, s, "s1", "t4", user("q4"), assistant("a4"))
	after := allRows(t, s, "s1")
	if !reflect.DeepEqual(after[:len(before)], before) || len(after) != 10 || after[9].Index != 9 || after[9].Text != "a4" {
		t.Errorf("transcript after trim:\n%s", rowsString(after))
	}
	rows, total, err := s.Messages(ctx, "s1", 2, 4)
	if err != nil || total != 10 || rowsString(rows) != "2 user \"q1\" turn=t1\n3 assistant \"a1\" turn=t1\n" {
		t.Errorf("page before 4: %s, %d, %v", rowsString(rows), total, err)
	}
}

func TestAFailedTrimChangesNothing(t *testing.T) {
	on := false
	s := open(t, Options{FailWrites: failing(OpTrim, &on)})
	create(t, s, "s1")
	turn(t, s, "s1", "t1", user("a"), assistant("b"))
	ids := turn(t, s, "s1", "t2", user("c"), assistant("d"))
	if err := s.Trim(ctx, "s1", []llm.Message{user("old")}, ids[0]-1); err != nil {
		t.Fatal(err)
	}
	ctxBefore, countsBefore := mustContext(t, s, "s1"), counts(t, s, "s1")

	on = true
	if err := s.Trim(ctx, "s1", []llm.Message{}, ids[1]); !errors.Is(err, errInjected) {
		t.Fatalf("Trim: %v, want the injected failure", err)
	}
	if got := mustContext(t, s, "s1"); !reflect.DeepEqual(got, ctxBefore) {
		t.Errorf("Context changed:\n%s\nwant:\n%s", msgsString(got), msgsString(ctxBefore))
	}
	if got := counts(t, s, "s1"); fmt.Sprint(got) != fmt.Sprint(countsBefore) {
		t.Errorf("rows changed: %v, want %v", got, countsBefore)
	}
	var boundary int64
	s.r.QueryRowContext(ctx, "SELECT boundary FROM snapshots WHERE session_id = 's1'").Scan(&boundary)
	if boundary != ids[0]-1 {
		t.Errorf("boundary %d, want %d", boundary, ids[0]-1)
	}
}

func TestTrimRefusesABadBoundary(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	ids := turn(t, s, "s1", "t1", user("a"), assistant("b"))
	if err := s.Trim(ctx, "s1", nil, ids[1]); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]int64{"backwards": ids[0], "beyond the last id": ids[1] + 1, "negative": -1} {
		if err := s.Trim(ctx, "s1", nil, b); err == nil {
			t.Errorf("%s: Trim(%d) succeeded", name, b)
		}
	}
	mustNotExist(t, s.Trim(ctx, "nope", nil, 0))
}

func TestTrimDuringATurnKeepsItsCheckpointsForTheTranscript(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	ids := checkpoints(t, s, "s1", "t1", user("a"), assistant("", call("c1", "shell", `{}`)))
	if err := s.Trim(ctx, "s1", []llm.Message{user("a (trimmed)")}, ids[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendCheckpoint(ctx, "s1", "t1", result("c1", "shell", "ok")); err != nil {
		t.Fatal(err)
	}
	if err := s.EndTurn(ctx, "s1", "t1"); err != nil {
		t.Fatal(err)
	}
	want := "0 user \"a\" turn=t1\n1 tool_call \"{}\" id=c1 name=shell turn=t1\n2 tool_result \"ok\" id=c1 name=shell turn=t1\n"
	if got := rowsString(allRows(t, s, "s1")); got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
	// Once transcribed, the covered checkpoints go.
	var n int
	s.r.QueryRowContext(ctx, "SELECT count(*) FROM checkpoints WHERE session_id = 's1'").Scan(&n)
	if n != 1 {
		t.Errorf("%d checkpoints left, want 1 (the one after the boundary)", n)
	}
	// The result of c1 is after the boundary but its call is not in the snapshot:
	// an orphan, left out.
	if got, want := msgsString(mustContext(t, s, "s1")), "user \"a (trimmed)\"\n"; got != want {
		t.Errorf("Context:\n%s\nwant:\n%s", got, want)
	}
}

// TrimBefore keeps exactly the checkpoints it is given, when they are the
// session's newest: the context reads back as them, with their ids, on top of an
// empty snapshot, whatever the snapshot held before. Given anything else (a gap, a
// stored checkpoint left out, none) it refuses and changes nothing.
func TestTrimBeforeKeepsTheNewestCheckpoints(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	turn(t, s, "s1", "t1", user("q1"), assistant("a1"))
	if err := s.Trim(ctx, "s1", []llm.Message{user("old")}, 0); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := 2; i <= 4; i++ {
		ids = append(ids, turn(t, s, "s1", fmt.Sprint("t", i), user(fmt.Sprint("q", i)), assistant(fmt.Sprint("a", i)))...)
	}
	msgs, got, err := s.ContextIDs(ctx, "s1")
	if err != nil || len(msgs) != 9 || got[0] != 0 || !reflect.DeepEqual(got[3:], ids) {
		t.Fatalf("before: %s ids %v, %v (checkpoints %v)", msgsString(msgs), got, err, ids)
	}
	before, countsBefore := mustContext(t, s, "s1"), counts(t, s, "s1")
	for _, bad := range [][]int64{ids[2:5], append(ids[2:3:3], ids[4:]...), {ids[5] + 1}, nil} {
		if err := s.TrimBefore(ctx, "s1", bad); !errors.Is(err, ErrNotContiguous) {
			t.Errorf("TrimBefore(%v): %v, want ErrNotContiguous", bad, err)
		}
	}
	if got := mustContext(t, s, "s1"); !reflect.DeepEqual(got, before) || !reflect.DeepEqual(counts(t, s, "s1"), countsBefore) {
		t.Fatalf("a refused TrimBefore changed the context:\n%s", msgsString(got))
	}
	if err := s.TrimBefore(ctx, "s1", ids[2:]); err != nil {
		t.Fatal(err)
	}
	msgs, got, err = s.ContextIDs(ctx, "s1")
	if err != nil || msgsString(msgs) != msgsString([]llm.Message{user("q3"), assistant("a3"), user("q4"), assistant("a4")}) ||
		!reflect.DeepEqual(got, ids[2:]) {
		t.Fatalf("after: %s ids %v, %v", msgsString(msgs), got, err)
	}
	// Later turns go on from there, and a later TrimBefore moves on again.
	more := turn(t, s, "s1", "t5", user("q5"), assistant("a5"))
	if err := s.TrimBefore(ctx, "s1", append(ids[4:], more...)); err != nil {
		t.Fatal(err)
	}
	if got := mustContext(t, s, "s1"); msgsString(got) != msgsString([]llm.Message{user("q4"), assistant("a4"), user("q5"), assistant("a5")}) {
		t.Errorf("after a second TrimBefore: %s", msgsString(got))
	}
}

func TestProviderSafe(t *testing.T) {
	c1, c2 := call("c1", "shell", `{}`), call("c2", "read_file", `{}`)
	interrupted := func(c llm.ToolCall) llm.Message {
		return llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Text: UnansweredText, IsError: true}
	}
	for _, tc := range []struct {
		name     string
		in, want []llm.Message
	}{
		{"well formed", []llm.Message{user("a"), assistant("", c1), result("c1", "shell", "x"), assistant("b")},
			[]llm.Message{user("a"), assistant("", c1), result("c1", "shell", "x"), assistant("b")}},
		{"calls unanswered at the end", []llm.Message{user("a"), assistant("", c1, c2)},
			[]llm.Message{user("a"), assistant("", c1, c2), interrupted(c1), interrupted(c2)}},
		{"one of two answered", []llm.Message{user("a"), assistant("", c1, c2), result("c2", "read_file", "y")},
			[]llm.Message{user("a"), assistant("", c1, c2), result("c2", "read_file", "y"), interrupted(c1)}},
		{"unanswered before the next prompt", []llm.Message{user("a"), assistant("", c1), user("b"), assistant("c")},
			[]llm.Message{user("a"), assistant("", c1), interrupted(c1), user("b"), assistant("c")}},
		{"orphan result dropped", []llm.Message{result("c9", "shell", "x"), user("a"), assistant("", c1), result("c1", "shell", "ok"), result("c1", "shell", "again")},
			[]llm.Message{user("a"), assistant("", c1), result("c1", "shell", "ok")}},
		{"empty", nil, []llm.Message{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := providerSafe(tc.in, make([]int64, len(tc.in))); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got:\n%s\nwant:\n%s", msgsString(got), msgsString(tc.want))
			}
		})
	}
}

func TestMessagesSurviveTheCodec(t *testing.T) {
	for _, m := range []llm.Message{
		user("plain"),
		user(""),
		assistant("with calls", call("c1", "shell", `{"command": "ls -la", "n": [1, 2]}`), llm.ToolCall{ID: "c2", Name: "x"}),
		assistant("", llm.ToolCall{ID: "c3", Name: "broken", Arguments: jsontext.Value(`{"unterminated`)}),
		{Role: llm.RoleTool, ToolCallID: "c1", Name: "shell", Text: "out\x00put \"quoted\" ✓", IsError: true},
	} {
		b, err := encodeMessage(m)
		if err != nil {
			t.Fatalf("encode %+v: %v", m, err)
		}
		got, err := decodeMessage([]byte(b))
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip of %s:\ngot  %+v\nwant %+v", b, got, m)
		}
	}
	b, _ := encodeMessages(nil)
	if string(b) != "[]" {
		t.Errorf("an empty snapshot encodes as %s, want []", b)
	}
}

func TestRecoverAppendsProgressOnceThenAMarker(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	turn(t, s, "s1", "t1", user("a"), assistant("b"))
	checkpoints(t, s, "s1", "t2", user("run two"), assistant("on it", call("c1", "shell", `{}`), call("c2", "shell", `{}`)),
		result("c1", "shell", "one"))

	n, err := s.Recover(ctx, "s1")
	if err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v; want 1", n, err)
	}
	want := `0 user "a" turn=t1
1 assistant "b" turn=t1
2 user "run two" turn=t2
3 assistant "on it" turn=t2
4 tool_call "{}" id=c1 name=shell turn=t2
5 tool_call "{}" id=c2 name=shell turn=t2
6 tool_result "one" id=c1 name=shell turn=t2
7 marker "` + InterruptedText + `" interrupted turn=t2
`
	if got := rowsString(allRows(t, s, "s1")); got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
	if n, err := s.Recover(ctx, "s1"); err != nil || n != 0 {
		t.Errorf("second Recover = %d, %v; want 0", n, err)
	}
	if got := len(allRows(t, s, "s1")); got != 8 {
		t.Errorf("%d rows after the second Recover, want 8", got)
	}
	var state string
	s.r.QueryRowContext(ctx, "SELECT state FROM turns WHERE turn_id = 't2'").Scan(&state)
	if state != TurnInterrupted {
		t.Errorf("turn state %q, want interrupted", state)
	}
	gotCtx := msgsString(mustContext(t, s, "s1"))
	wantCtx := `user "a"
assistant "b"
user "run two"
assistant "on it" call(c1 shell {}) call(c2 shell {})
tool "one" for=c1/shell
tool "interrupted" for=c2/shell error
`
	if gotCtx != wantCtx {
		t.Errorf("Context:\n%s\nwant:\n%s", gotCtx, wantCtx)
	}
	// The session goes on after recovery.
	turn(t, s, "s1", "t3", user("next"), assistant("ok"))
	if rows := allRows(t, s, "s1"); len(rows) != 10 || rows[9].Index != 9 {
		t.Errorf("after the next turn:\n%s", rowsString(rows))
	}
	_, err = s.Recover(ctx, "nope")
	mustNotExist(t, err)
}

func TestRecoverLeavesAnUnsupportedSurfaceUntouched(t *testing.T) {
	s := open(t)
	if err := s.CreateSession(ctx, Session{ID: "acp1", Owner: "o", Agent: "a", Workspace: "/w", Surface: "acp"}); err != nil {
		t.Fatal(err)
	}
	checkpoints(t, s, "acp1", "t1", user("a"), assistant("", call("c1", "shell", `{}`)))
	before := counts(t, s, "acp1")
	n, err := s.Recover(ctx, "acp1")
	if !errors.Is(err, ErrUnsupportedSurface) || n != 0 {
		t.Fatalf("Recover = %d, %v; want ErrUnsupportedSurface", n, err)
	}
	if got := counts(t, s, "acp1"); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("rows changed: %v, want %v", got, before)
	}
	var state, msg string
	s.r.QueryRowContext(ctx, "SELECT state FROM turns WHERE session_id = 'acp1'").Scan(&state)
	s.r.QueryRowContext(ctx, "SELECT message FROM checkpoints WHERE session_id = 'acp1' ORDER BY id DESC").Scan(&msg)
	if state != TurnRunning || !strings.Contains(msg, `"c1"`) {
		t.Errorf("the original checkpoint is gone: state %q, last checkpoint %s", state, msg)
	}
}

func TestAFailedRecoverChangesNothing(t *testing.T) {
	on := false
	s := open(t, Options{FailWrites: failing(OpRecover, &on)})
	create(t, s, "s1")
	checkpoints(t, s, "s1", "t1", user("a"))
	on = true
	if n, err := s.Recover(ctx, "s1"); !errors.Is(err, errInjected) || n != 0 {
		t.Fatalf("Recover = %d, %v", n, err)
	}
	if rows := allRows(t, s, "s1"); len(rows) != 0 {
		t.Errorf("rows after a failed recover:\n%s", rowsString(rows))
	}
	on = false
	if n, err := s.Recover(ctx, "s1"); err != nil || n != 1 {
		t.Fatalf("retry: Recover = %d, %v", n, err)
	}
}
