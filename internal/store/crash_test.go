package store

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// The crash tests run this test binary again as a child that writes to a store and
// dies without closing it: SIGKILL (os.Process.Kill) from itself or from the parent,
// so no deferred call, no Close, no WAL checkpoint runs.
const (
	crashChildEnv = "ZEROCLAW_STORE_CRASH_CHILD" // the scenario
	crashDBEnv    = "ZEROCLAW_STORE_CRASH_DB"    // the database path
)

// crashChild runs the scenario named by crashChildEnv and never returns.
func crashChild() {
	s, err := Open(os.Getenv(crashDBEnv), Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	switch os.Getenv(crashChildEnv) {
	case "mid-turn":
		err = midTurn(s)
	case "append-forever":
		err = appendForever(s)
	default:
		err = fmt.Errorf("unknown scenario %q", os.Getenv(crashChildEnv))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	p, _ := os.FindProcess(os.Getpid())
	p.Kill()
	time.Sleep(time.Minute)
	os.Exit(3) // not reached
}

// midTurn: one complete turn, a trim, then a second turn that dies after a tool
// call was answered and another was not.
func midTurn(s *Store) error {
	if err := s.CreateSession(ctx, Session{ID: "s1", Owner: "alice", Agent: "default", Workspace: "/w"}); err != nil {
		return err
	}
	steps := []func() error{
		func() error { _, err := s.BeginTurn(ctx, "s1", "t1", user("first")); return err },
		func() error { _, err := s.AppendCheckpoint(ctx, "s1", "t1", assistant("one")); return err },
		func() error { return s.EndTurn(ctx, "s1", "t1") },
		func() error {
			id, err := s.BeginTurn(ctx, "s1", "t2", user("second"))
			if err != nil {
				return err
			}
			// The snapshot keeps a summary and covers everything up to the prompt.
			return s.Trim(ctx, "s1", []llm.Message{user("summary")}, id)
		},
		func() error {
			_, err := s.AppendCheckpoint(ctx, "s1", "t2", assistant("working", call("c1", "shell", `{"command":"ls"}`), call("c2", "shell", `{"command":"sleep 99"}`)))
			return err
		},
		func() error { _, err := s.AppendCheckpoint(ctx, "s1", "t2", result("c1", "shell", "a b")); return err },
		func() error { return s.ReserveSeq(ctx, "s1", 512) },
		func() error { return s.AppendUpdates(ctx, updates("s1", 1, 7)) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// appendForever appends checkpoints and prints each id once it has committed,
// until the parent kills it.
func appendForever(s *Store) error {
	if err := s.CreateSession(ctx, Session{ID: "s1", Owner: "alice", Agent: "default", Workspace: "/w"}); err != nil {
		return err
	}
	id, err := s.BeginTurn(ctx, "s1", "t1", user("0"))
	if err != nil {
		return err
	}
	fmt.Println(id)
	for i := 1; ; i++ {
		id, err := s.AppendCheckpoint(ctx, "s1", "t1", assistant(strconv.Itoa(i)))
		if err != nil {
			return err
		}
		fmt.Println(id)
	}
}

func startChild(t *testing.T, scenario, db string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+scenario, crashDBEnv+"="+db)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if stderr.Len() > 0 {
			t.Logf("child stderr: %s", stderr.String())
		}
	})
	return cmd, bufio.NewScanner(out)
}

// mustBeKilled waits for the child and fails unless a signal ended it.
func mustBeKilled(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	err := cmd.Wait()
	if cmd.ProcessState == nil || cmd.ProcessState.Exited() {
		t.Fatalf("the child exited instead of being killed: %v", err)
	}
}

func TestRecoveryAfterAKillMidTurn(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sessions.db")
	cmd, out := startChild(t, "mid-turn", db)
	for out.Scan() {
	}
	mustBeKilled(t, cmd)
	if _, err := os.Stat(db + "-wal"); err != nil {
		t.Fatalf("no WAL left behind, so this was no crash: %v", err)
	}

	s := openAt(t, db)
	n, err := s.Recover(ctx, "s1")
	if err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v; want 1", n, err)
	}
	want := `0 user "first" turn=t1
1 assistant "one" turn=t1
2 user "second" turn=t2
3 assistant "working" turn=t2
4 tool_call "{\"command\":\"ls\"}" id=c1 name=shell turn=t2
5 tool_call "{\"command\":\"sleep 99\"}" id=c2 name=shell turn=t2
6 tool_result "a b" id=c1 name=shell turn=t2
7 marker "` + InterruptedText + `" interrupted turn=t2
`
	if got := rowsString(allRows(t, s, "s1")); got != want {
		t.Errorf("transcript after recovery:\n%s\nwant:\n%s", got, want)
	}
	if n, err := s.Recover(ctx, "s1"); err != nil || n != 0 {
		t.Errorf("second Recover = %d, %v", n, err)
	}
	if got := len(allRows(t, s, "s1")); got != 8 {
		t.Errorf("%d rows after the second Recover, want 8", got)
	}
	// The model: the snapshot, then the checkpoints after its boundary; no marker;
	// the unanswered call answered.
	wantCtx := `user "summary"
assistant "working" call(c1 shell {"command":"ls"}) call(c2 shell {"command":"sleep 99"})
tool "a b" for=c1/shell
tool "interrupted" for=c2/shell error
`
	if got := msgsString(mustContext(t, s, "s1")); got != wantCtx {
		t.Errorf("Context after recovery:\n%s\nwant:\n%s", got, wantCtx)
	}
	if mark, err := s.SeqMark(ctx, "s1"); err != nil || mark != 512 {
		t.Errorf("SeqMark = %d, %v; want 512", mark, err)
	}
	if seqs, oldest := replay(t, s, "s1", 0); len(seqs) != 7 || oldest != 1 {
		t.Errorf("updates after the crash: %v, oldest %d", seqs, oldest)
	}
}

func TestAKillWhileAppendingLosesAtMostTheCheckpointBeingWritten(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sessions.db")
	cmd, out := startChild(t, "append-forever", db)
	var acked []int64
	for out.Scan() {
		id, err := strconv.ParseInt(out.Text(), 10, 64)
		if err != nil {
			t.Fatalf("child said %q", out.Text())
		}
		acked = append(acked, id)
		if len(acked) == 200 {
			cmd.Process.Kill() // while it is writing the next ones
		}
	}
	mustBeKilled(t, cmd)
	if len(acked) < 200 {
		t.Fatalf("the child died after %d checkpoints", len(acked))
	}

	s := openAt(t, db)
	got := mustContext(t, s, "s1")
	// Every acknowledged checkpoint survived, in order, with nothing torn or out of
	// place; at most the ones after the last acknowledgement are missing.
	if len(got) < len(acked) {
		t.Fatalf("%d checkpoints survived, %d were acknowledged", len(got), len(acked))
	}
	for i, m := range got {
		if m.Text != strconv.Itoa(i) {
			t.Fatalf("checkpoint %d is %q", i, m.Text)
		}
	}
	if n, err := s.Recover(ctx, "s1"); err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v", n, err)
	}
	rows := allRows(t, s, "s1")
	if len(rows) != len(got)+1 || !rows[len(rows)-1].Interrupted {
		t.Errorf("%d rows for %d checkpoints; last %+v", len(rows), len(got), rows[len(rows)-1])
	}
}
