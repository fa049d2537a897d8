package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

func rowsString(rows []Row) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%d %s %q", r.Index, r.Role, r.Text)
		if r.ToolCallID != "" {
			fmt.Fprintf(&b, " id=%s", r.ToolCallID)
		}
		if r.Name != "" {
			fmt.Fprintf(&b, " name=%s", r.Name)
		}
		if r.IsError {
			b.WriteString(" error")
		}
		if r.Interrupted {
			b.WriteString(" interrupted")
		}
		fmt.Fprintf(&b, " turn=%s\n", r.TurnID)
	}
	return b.String()
}

func allRows(t testing.TB, s *Store, id string) []Row {
	t.Helper()
	rows, _, err := s.Messages(ctx, id, 1<<30, -1)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestEndTurnAppendsTheTurnToTheVisibleTranscript(t *testing.T) {
	start := time.UnixMilli(1_000_000)
	s := open(t, Options{Now: tickingClock(start)})
	create(t, s, "s1")
	turn(t, s, "s1", "t1",
		user("list and read"),
		assistant("let me look", call("c1", "list_dir", `{"path":"."}`), call("c2", "read_file", `{"path":"a"}`)),
		result("c1", "list_dir", "a\nb"),
		llm.Message{Role: llm.RoleTool, ToolCallID: "c2", Name: "read_file", Text: "no such file", IsError: true},
		assistant("", call("c3", "shell", "")), // no text: no assistant row; no arguments: "{}"
		result("c3", "shell", "ok"),
		assistant("done"),
	)
	want := `0 user "list and read" turn=t1
1 assistant "let me look" turn=t1
2 tool_call "{\"path\":\".\"}" id=c1 name=list_dir turn=t1
3 tool_call "{\"path\":\"a\"}" id=c2 name=read_file turn=t1
4 tool_result "a\nb" id=c1 name=list_dir turn=t1
5 tool_result "no such file" id=c2 name=read_file error turn=t1
6 tool_call "{}" id=c3 name=shell turn=t1
7 tool_result "ok" id=c3 name=shell turn=t1
8 assistant "done" turn=t1
`
	if got := rowsString(allRows(t, s, "s1")); got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
	sess, err := s.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sess.MessageCount != 9 {
		t.Errorf("MessageCount = %d, want 9", sess.MessageCount)
	}
	if !sess.LastActivity.After(start.Add(time.Millisecond)) {
		t.Errorf("LastActivity %v was not touched", sess.LastActivity)
	}

	// A second turn continues the numbering.
	turn(t, s, "s1", "t2", user("more"), assistant("sure"))
	rows, total, err := s.Messages(ctx, "s1", 2, -1)
	if err != nil || total != 11 {
		t.Fatal(err, total)
	}
	if got, want := rowsString(rows), "9 user \"more\" turn=t2\n10 assistant \"sure\" turn=t2\n"; got != want {
		t.Errorf("last two rows:\n%s\nwant:\n%s", got, want)
	}
}

func TestEndTurnTwiceAddsNothing(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	turn(t, s, "s1", "t1", user("hi"), assistant("hello"))
	if err := s.EndTurn(ctx, "s1", "t1"); err != nil {
		t.Fatalf("second EndTurn: %v", err)
	}
	if n := len(allRows(t, s, "s1")); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}
	mustNotExist(t, s.EndTurn(ctx, "s1", "nope"))
}

func TestTurnErrors(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	turn(t, s, "s1", "t1", user("hi"), assistant("hello"))

	_, err := s.BeginTurn(ctx, "nope", "t1", user("x"))
	mustNotExist(t, err)
	if _, err := s.BeginTurn(ctx, "s1", "t1", user("x")); err == nil {
		t.Error("BeginTurn reused a turn id")
	}
	if _, err := s.AppendCheckpoint(ctx, "s1", "t1", assistant("late")); !errors.Is(err, ErrTurnNotRunning) {
		t.Errorf("checkpoint after EndTurn: %v, want ErrTurnNotRunning", err)
	}
	if _, err := s.AppendCheckpoint(ctx, "s1", "never", assistant("x")); !errors.Is(err, ErrTurnNotRunning) {
		t.Errorf("checkpoint of an unknown turn: %v, want ErrTurnNotRunning", err)
	}
}

func TestCheckpointIDsIncreaseAndAreNeverReused(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	create(t, s, "s2")
	ids := turn(t, s, "s1", "t1", user("a"), assistant("b"), user("c"))
	ids = append(ids, turn(t, s, "s2", "t1", user("d"))...)
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("ids %v do not increase", ids)
		}
	}
	// Trimming away the newest checkpoints must not let their ids come back.
	last := ids[len(ids)-1]
	if err := s.Trim(ctx, "s2", nil, last); err != nil {
		t.Fatal(err)
	}
	if err := s.Trim(ctx, "s1", nil, last); err != nil {
		t.Fatal(err)
	}
	next := turn(t, s, "s1", "t2", user("e"))
	if next[0] <= last {
		t.Errorf("new checkpoint id %d <= the trimmed %d", next[0], last)
	}
}

func TestToolOutputIsCappedInTheTranscriptButNotInTheContext(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	big := strings.Repeat("é", 40_000) // 80,000 bytes
	turn(t, s, "s1", "t1", user("cat"), assistant("", call("c1", "shell", `{}`)), result("c1", "shell", big), assistant("ok"))
	rows := allRows(t, s, "s1")
	out := rows[2].Text
	if len(out) > MaxToolOutput+100 || !strings.HasPrefix(out, big[:MaxToolOutput]) || !strings.Contains(out, "truncated") {
		t.Errorf("tool_result row: %d bytes, ends %q", len(out), out[len(out)-60:])
	}
	if !utf8.ValidString(out) {
		t.Error("the cut split a character")
	}
	got, err := s.Context(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if got[2].Text != big {
		t.Errorf("the model context lost output: %d bytes, want %d", len(got[2].Text), len(big))
	}
}

func TestCapOutput(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		keep int // bytes of in kept
	}{
		{"short", "hello", 5},
		{"exactly the cap", strings.Repeat("a", MaxToolOutput), MaxToolOutput},
		{"one over", strings.Repeat("a", MaxToolOutput+1), MaxToolOutput},
		{"cut inside a rune", strings.Repeat("a", MaxToolOutput-1) + "€€", MaxToolOutput - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := capOutput(tc.in)
			if !strings.HasPrefix(got, tc.in[:tc.keep]) {
				t.Fatalf("does not keep the first %d bytes", tc.keep)
			}
			note := got[tc.keep:]
			if tc.keep == len(tc.in) {
				if note != "" {
					t.Errorf("note %q on untruncated output", note)
				}
				return
			}
			if want := fmt.Sprintf("\n[output truncated: %d of %d bytes kept]", tc.keep, len(tc.in)); note != want {
				t.Errorf("note %q, want %q", note, want)
			}
		})
	}
}

func TestMessagesPages(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	for i := range 5 {
		turn(t, s, "s1", fmt.Sprint("t", i), user(fmt.Sprint("q", i)), assistant(fmt.Sprint("a", i)))
	}
	for _, tc := range []struct {
		limit, before int
		want          string // indexes
	}{
		{100, -1, "[0 1 2 3 4 5 6 7 8 9]"},
		{3, -1, "[7 8 9]"},
		{3, 10, "[7 8 9]"},
		{3, 99, "[7 8 9]"},
		{3, 7, "[4 5 6]"},
		{3, 2, "[0 1]"},
		{3, 0, "[]"},
		{0, -1, "[]"},
	} {
		rows, total, err := s.Messages(ctx, "s1", tc.limit, tc.before)
		if err != nil || total != 10 {
			t.Fatalf("Messages(%d, %d): total %d, %v", tc.limit, tc.before, total, err)
		}
		idx := []int{}
		for _, r := range rows {
			idx = append(idx, r.Index)
			if want := fmt.Sprint([]string{"q", "a"}[r.Index%2], r.Index/2); r.Text != want {
				t.Errorf("row %d text %q, want %q", r.Index, r.Text, want)
			}
		}
		if got := fmt.Sprint(idx); got != tc.want {
			t.Errorf("Messages(limit %d, before %d) = %s, want %s", tc.limit, tc.before, got, tc.want)
		}
	}
	_, _, err := s.Messages(ctx, "nope", 10, -1)
	mustNotExist(t, err)
}

func TestAFailedCheckpointOrEndTurnChangesNothing(t *testing.T) {
	var on bool
	s := open(t, Options{FailWrites: func(op string) error {
		if on && (op == OpCheckpoint || op == OpEndTurn || op == OpBeginTurn) {
			return errInjected
		}
		return nil
	}})
	create(t, s, "s1")
	checkpoints(t, s, "s1", "t1", user("hi"))
	before := counts(t, s, "s1")
	on = true
	if _, err := s.AppendCheckpoint(ctx, "s1", "t1", assistant("x")); !errors.Is(err, errInjected) {
		t.Errorf("AppendCheckpoint: %v", err)
	}
	if err := s.EndTurn(ctx, "s1", "t1"); !errors.Is(err, errInjected) {
		t.Errorf("EndTurn: %v", err)
	}
	if _, err := s.BeginTurn(ctx, "s1", "t2", user("x")); !errors.Is(err, errInjected) {
		t.Errorf("BeginTurn: %v", err)
	}
	if got := counts(t, s, "s1"); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("rows changed: %v, want %v", got, before)
	}
	on = false
	if err := s.EndTurn(ctx, "s1", "t1"); err != nil { // the retry goes through
		t.Fatal(err)
	}
	if n := len(allRows(t, s, "s1")); n != 1 {
		t.Errorf("%d rows after the retry, want 1", n)
	}
}

// EndTurnWithMessage stores a turn's answer and ends the turn in one write: the
// answer is the turn's last transcript row and context message, the turn is over,
// and a failed write leaves everything as it was, so that the retry goes through.
func TestEndTurnWithMessageStoresTheAnswerAndEndsTheTurnInOneWrite(t *testing.T) {
	var on bool
	s := open(t, Options{FailWrites: func(op string) error {
		if on && op == OpEndTurn {
			return errInjected
		}
		return nil
	}})
	create(t, s, "s1")
	ids := checkpoints(t, s, "s1", "t1", user("list"), assistant("", call("c1", "list_dir", `{}`)), result("c1", "list_dir", "a"))
	before := counts(t, s, "s1")
	on = true
	r := TurnResult{StopReason: "end_turn", Text: "one file", InputTokens: 3, OutputTokens: 2}
	if _, err := s.EndTurnWithMessage(ctx, "s1", "t1", assistant("one file"), r); !errors.Is(err, errInjected) {
		t.Fatalf("EndTurnWithMessage with the write failing: %v", err)
	}
	if got := counts(t, s, "s1"); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("rows changed by the failed write: %v, want %v", got, before)
	}
	on = false
	id, err := s.EndTurnWithMessage(ctx, "s1", "t1", assistant("one file"), r)
	if err != nil {
		t.Fatal(err)
	}
	if id <= ids[len(ids)-1] {
		t.Errorf("the answer's checkpoint id %d is not after the turn's %v", id, ids)
	}
	want := `0 user "list" turn=t1
1 tool_call "{}" id=c1 name=list_dir turn=t1
2 tool_result "a" id=c1 name=list_dir turn=t1
3 assistant "one file" turn=t1
`
	if got := rowsString(allRows(t, s, "s1")); got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
	msgs, err := s.Context(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 4 || msgs[3].Role != llm.RoleAssistant || msgs[3].Text != "one file" {
		t.Errorf("context = %+v", msgs)
	}
	sess, err := s.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Totals.InputTokens != 3 || sess.Totals.OutputTokens != 2 {
		t.Errorf("usage totals = %+v", sess.Totals)
	}
	// The turn is over: nothing more joins it, and ending it again adds nothing.
	if _, err := s.EndTurnWithMessage(ctx, "s1", "t1", assistant("again"), r); !errors.Is(err, ErrTurnNotRunning) {
		t.Errorf("EndTurnWithMessage of an ended turn: %v", err)
	}
	if _, err := s.EndTurnWithMessage(ctx, "s1", "nope", assistant("x"), r); !errors.Is(err, ErrTurnNotRunning) || !errors.Is(err, ErrNotFound) {
		t.Errorf("EndTurnWithMessage of no turn: %v", err)
	}
	if err := s.EndTurn(ctx, "s1", "t1"); err != nil {
		t.Fatal(err)
	}
	if n := len(allRows(t, s, "s1")); n != 4 {
		t.Errorf("%d rows, want 4", n)
	}
}

// A turn's checkpoints that this Store did not write (a turn left running by the
// process before, ended by this one) are read back and transcribed like its own.
func TestATurnBegunByAnEarlierStoreEndsWithItsCheckpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s1, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	create(t, s1, "s1")
	checkpoints(t, s1, "s1", "t1", user("hi"), assistant("", call("c1", "shell", `{"command":"ls"}`)), result("c1", "shell", "x"))
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.EndTurnWithMessage(ctx, "s1", "t1", assistant("done"), TurnResult{StopReason: "end_turn"}); err != nil {
		t.Fatal(err)
	}
	want := `0 user "hi" turn=t1
1 tool_call "{\"command\":\"ls\"}" id=c1 name=shell turn=t1
2 tool_result "x" id=c1 name=shell turn=t1
3 assistant "done" turn=t1
`
	if got := rowsString(allRows(t, s2, "s1")); got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
}
