package store

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild() // never returns: the process kills itself
	}
	goleak.VerifyTestMain(m)
}

var ctx = context.Background()

// open opens a fresh store in a temporary directory, closed when the test ends.
func open(t testing.TB, opts ...Options) *Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "sessions.db"), opts...)
}

func openAt(t testing.TB, path string, opts ...Options) *Store {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	s, err := Open(path, o)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func create(t testing.TB, s *Store, id string) {
	t.Helper()
	if err := s.CreateSession(ctx, Session{ID: id, Owner: "alice", Agent: "default", Workspace: "/w"}); err != nil {
		t.Fatalf("CreateSession(%s): %v", id, err)
	}
}

func user(text string) llm.Message { return llm.Message{Role: llm.RoleUser, Text: text} }

func assistant(text string, calls ...llm.ToolCall) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Text: text, ToolCalls: calls}
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: jsontext.Value(args)}
}

func result(id, name, out string) llm.Message {
	return llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: name, Text: out}
}

// turn records a whole turn: BeginTurn with msgs[0], a checkpoint per later message,
// EndTurn. It returns the checkpoint ids.
func turn(t testing.TB, s *Store, sessionID, turnID string, msgs ...llm.Message) []int64 {
	t.Helper()
	ids := checkpoints(t, s, sessionID, turnID, msgs...)
	if err := s.EndTurn(ctx, sessionID, turnID); err != nil {
		t.Fatalf("EndTurn(%s): %v", turnID, err)
	}
	return ids
}

// checkpoints begins a turn and appends msgs[1:] without ending it.
func checkpoints(t testing.TB, s *Store, sessionID, turnID string, msgs ...llm.Message) []int64 {
	t.Helper()
	id, err := s.BeginTurn(ctx, sessionID, turnID, msgs[0])
	if err != nil {
		t.Fatalf("BeginTurn(%s): %v", turnID, err)
	}
	ids := []int64{id}
	for _, m := range msgs[1:] {
		id, err := s.AppendCheckpoint(ctx, sessionID, turnID, m)
		if err != nil {
			t.Fatalf("AppendCheckpoint(%s): %v", turnID, err)
		}
		ids = append(ids, id)
	}
	return ids
}

func TestOpenCreatesThePrivateFileInWALMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openAt(t, path)
	create(t, s, "s1") // a write, so the WAL file exists
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
	var mode string
	if err := s.r.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	for pragma, want := range map[string]int{"synchronous": 1, "busy_timeout": 5000, "foreign_keys": 1} {
		var got int
		if err := s.w.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil || got != want {
			t.Errorf("writer PRAGMA %s = %d, %v; want %d", pragma, got, err, want)
		}
	}
}

func TestOpenTightensAnExistingFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no POSIX modes")
	}
	path := filepath.Join(t.TempDir(), "sessions.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // past the umask
		t.Fatal(err)
	}
	openAt(t, path)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestOpenRefusesAPathTheDriverWouldReadAsOptions(t *testing.T) {
	for _, p := range []string{filepath.Join(t.TempDir(), "a?mode=ro"), "file:x.db"} {
		if s, err := Open(p, Options{}); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

func TestReadersCannotWrite(t *testing.T) {
	s := open(t)
	if _, err := s.r.ExecContext(ctx, "INSERT INTO sessions (id, owner, agent, workspace, interaction_surface, created_at, last_activity) VALUES ('x','o','a','w','rpc',0,0)"); err == nil {
		t.Fatal("a write through the read pool succeeded")
	}
}

// failing returns a FailWrites hook that fails op while *on is true.
func failing(op string, on *bool) func(string) error {
	return func(got string) error {
		if got == op && *on {
			return errInjected
		}
		return nil
	}
}

var errInjected = errors.New("injected failure")

// counts returns the number of rows of every table for one session.
func counts(t testing.TB, s *Store, id string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"sessions", "transcript", "turns", "checkpoints", "snapshots", "update_runs"} {
		col := "session_id"
		if table == "sessions" {
			col = "id"
		}
		q := "SELECT count(*) FROM " + table + " WHERE " + col + " = ?"
		if table == "transcript" {
			// Keyed by the session's number: the session's range while it exists,
			// and once it is gone, the rows of no session at all.
			q = `SELECT CASE WHEN EXISTS (SELECT 1 FROM sessions WHERE id = ?1)
				THEN (SELECT count(*) FROM transcript, sessions s WHERE s.id = ?1 AND key >> 32 = s.num)
				ELSE (SELECT count(*) FROM transcript WHERE key >> 32 NOT IN (SELECT num FROM sessions)) END`
		}
		var n int
		if err := s.r.QueryRowContext(ctx, q, id).Scan(&n); err != nil {
			t.Fatalf("counting %s: %v", table, err)
		}
		out[table] = n
	}
	return out
}

func mustNotExist(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
}

// tickingClock starts at start and moves 1 ms on every reading.
func tickingClock(start time.Time) func() time.Time {
	var mu sync.Mutex
	now := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Millisecond)
		return now
	}
}
