package store

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func userVersion(t *testing.T, db *sql.DB) int {
	t.Helper()
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// rawDB opens path with the writer's settings but no migrations.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_foreign_keys=1&_journal_mode=WAL&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return db
}

func TestSchemaIsTwoNumberedMigrations(t *testing.T) {
	if SchemaVersion() != 9 {
		t.Fatalf("SchemaVersion() = %d, want 9", SchemaVersion())
	}
	for i, m := range migrations {
		if !strings.HasPrefix(m, migrationMarker) {
			t.Errorf("migration %d does not start with its header: %.40q", i+1, m)
		}
	}
}

func TestMigrationHeadersMustCountUpFromOne(t *testing.T) {
	for name, text := range map[string]string{
		"gap":      "-- +migration 1: a\nSELECT 1;\n-- +migration 3: c\nSELECT 1;\n",
		"no start": "-- +migration 2: b\nSELECT 1;\n",
		"garbage":  "-- +migration one: a\nSELECT 1;\n",
		"empty":    "-- nothing here\n",
	} {
		if _, err := parseMigrations(text); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
	got, err := parseMigrations("-- preamble\n-- +migration 1: a\nA;\n-- +migration 2: b\nB;\n")
	if err != nil || len(got) != 2 || !strings.Contains(got[0], "A;") || strings.Contains(got[0], "B;") {
		t.Errorf("parseMigrations = %q, %v", got, err)
	}
}

func TestMigratesFromAnEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openAt(t, path)
	if v := userVersion(t, s.w); v != SchemaVersion() {
		t.Fatalf("user_version = %d, want %d", v, SchemaVersion())
	}
	for _, table := range []string{"sessions", "transcript", "turns", "checkpoints", "snapshots", "update_runs", "uploads"} {
		var n int
		if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?", table).Scan(&n); err != nil || n != 1 {
			t.Errorf("table %s: count %d, %v", table, n, err)
		}
	}
	s.Close()
	// Opening again applies nothing and keeps the version.
	s2 := openAt(t, path)
	if v := userVersion(t, s2.w); v != SchemaVersion() {
		t.Fatalf("after reopening, user_version = %d", v)
	}
}

func TestMigratesFromThePreviousSchemaVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	if err := privateFile(path); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	if err := migrate(ctx, db, path, 1); err != nil {
		t.Fatalf("migrating to v1: %v", err)
	}
	if v := userVersion(t, db); v != 1 {
		t.Fatalf("user_version = %d, want 1", v)
	}
	// A version 1 database with one session that has history and a snapshot.
	for _, q := range []string{
		`INSERT INTO sessions (id, owner, agent, workspace, interaction_surface, created_at, last_activity, message_count)
		 VALUES ('old', 'alice', 'default', '/w', 'rpc', 1000, 2000, 2)`,
		`INSERT INTO turns VALUES ('old', 't1', 'complete', 1500)`,
		`INSERT INTO transcript (session_id, idx, role, text, turn_id) VALUES ('old', 0, 'user', 'hi', 't1'), ('old', 1, 'assistant', 'hello', 't1')`,
		`INSERT INTO checkpoints (session_id, turn_id, message) VALUES ('old', 't1', '{"role":"user","text":"hi"}'), ('old', 't1', '{"role":"assistant","text":"hello"}')`,
		`INSERT INTO snapshots VALUES ('old', '[{"role":"user","text":"hi"}]', 1)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s := openAt(t, path)
	if v := userVersion(t, s.w); v != SchemaVersion() {
		t.Fatalf("user_version = %d, want %d", v, SchemaVersion())
	}
	sess, err := s.Session(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if sess.MessageCount != 2 || sess.LastSeq != 0 || sess.Owner != "alice" || sess.LastActivity.UnixMilli() != 2000 {
		t.Errorf("session after migration: %+v", sess)
	}
	rows, total, err := s.Messages(ctx, "old", 100, -1)
	if err != nil || total != 2 || len(rows) != 2 || rows[1].Text != "hello" {
		t.Errorf("Messages = %+v, %d, %v", rows, total, err)
	}
	got, err := s.Context(ctx, "old")
	if err != nil || len(got) != 2 || got[0].Text != "hi" || got[1].Text != "hello" {
		t.Errorf("Context = %+v, %v; want the snapshot then checkpoint 2", got, err)
	}
	// What version 2 added works on the migrated data.
	if err := s.AppendUpdates(ctx, []Update{{SessionID: "old", Seq: 1, Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if mark, err := s.SeqMark(ctx, "old"); err != nil || mark != 1 {
		t.Errorf("SeqMark = %d, %v; want 1", mark, err)
	}
	if list, _, err := s.ListSessions(ctx, "alice", 10, ""); err != nil || len(list) != 1 {
		t.Errorf("ListSessions = %+v, %v", list, err)
	}
}

func TestRefusesASchemaNewerThanItKnows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	db := rawDB(t, path)
	if _, err := db.ExecContext(ctx, "PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded")
	}
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "99") {
		t.Errorf("err = %v; want ErrSchemaTooNew naming version 99", err)
	}
}

// Version 6 moves the replay log's runs to a rowid table keyed by an index: the
// runs of a version 5 database replay as before, the log goes on from them, and a
// deleted session's runs still go with it.
func TestMigratesTheReplayLogToARowidTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	if err := privateFile(path); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	if err := migrate(ctx, db, path, 5); err != nil {
		t.Fatalf("migrating to v5: %v", err)
	}
	for _, q := range []string{
		`INSERT INTO sessions (id, owner, agent, workspace, interaction_surface, created_at, last_activity, message_count, seq_mark, updates_kept)
		 VALUES ('old', 'alice', 'default', '/w', 'rpc', 1000, 2000, 0, 3, 3)`,
		`INSERT INTO update_runs VALUES ('old', 1, 2, CAST('{"seq":1}' || char(10) || '{"seq":2}' AS BLOB)), ('old', 3, 3, CAST('{"seq":3}' AS BLOB))`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s := openAt(t, path)
	if err := s.AppendUpdates(ctx, []Update{{SessionID: "old", Seq: 4, Payload: []byte(`{"seq":4}`)}, {SessionID: "old", Seq: 5, Payload: []byte(`{"seq":5}`)}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	oldest, err := s.Updates(ctx, "old", 0, func(u Update) error {
		got = append(got, fmt.Sprintf("%d %s", u.Seq, u.Payload))
		return nil
	})
	want := []string{`1 {"seq":1}`, `2 {"seq":2}`, `3 {"seq":3}`, `4 {"seq":4}`, `5 {"seq":5}`}
	if err != nil || oldest != 1 || !slices.Equal(got, want) {
		t.Fatalf("Updates = %q, oldest %d, %v; want %q, 1", got, oldest, err, want)
	}
	var plan string
	if err := s.w.QueryRowContext(ctx, `EXPLAIN QUERY PLAN
		SELECT first_seq, last_seq FROM update_runs WHERE session_id = 'old' ORDER BY last_seq`).Scan(new(int), new(int), new(int), &plan); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "COVERING INDEX update_runs_by_seq") {
		t.Errorf("a trim's scan of the runs is planned as %q, not on the covering index", plan)
	}
	if err := s.Delete(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.w.QueryRowContext(ctx, "SELECT count(*) FROM update_runs").Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d runs left after the session was deleted (%v)", left, err)
	}
}

// Version 8 keys the transcript by the session's number and turns by their ids
// alone: a version 7 database's transcripts read as before, the running turn it
// left is recovered after its checkpoints (which the rebuild of turns must not
// have deleted), operations still answer, a fork copies the rows, and a deleted
// session's rows go with it while the other session's stay.
func TestMigratesTheTranscriptToKeysBySessionNumber(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	if err := privateFile(path); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	if err := migrate(ctx, db, path, 7); err != nil {
		t.Fatalf("migrating to v7: %v", err)
	}
	for _, q := range []string{
		`INSERT INTO sessions (id, owner, agent, workspace, interaction_surface, created_at, last_activity, message_count)
		 VALUES ('a', 'alice', 'default', '/w', 'rpc', 1000, 2000, 2), ('b', 'alice', 'default', '/w', 'rpc', 1000, 3000, 2)`,
		`INSERT INTO turns VALUES ('a', 't1', 'complete', 1500), ('a', 't2', 'running', 1600), ('b', 'u1', 'complete', 1500)`,
		`INSERT INTO transcript (session_id, idx, role, text, turn_id) VALUES
		 ('a', 0, 'user', 'hi a', 't1'), ('a', 1, 'assistant', 'hello a', 't1'),
		 ('b', 0, 'user', 'hi b', 'u1'), ('b', 1, 'assistant', 'hello b', 'u1')`,
		`INSERT INTO checkpoints (session_id, turn_id, message) VALUES
		 ('a', 't1', '{"role":"user","text":"hi a"}'), ('a', 't1', '{"role":"assistant","text":"hello a"}'),
		 ('a', 't2', '{"role":"user","text":"again"}'), ('b', 'u1', '{"role":"user","text":"hi b"}')`,
		`INSERT INTO operations (session_id, operation_id, turn_id, stop_reason, text) VALUES ('b', 'op1', 'u1', 'end_turn', 'hello b')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s := openAt(t, path)
	text := func(id string) string {
		t.Helper()
		rows, total, err := s.Messages(ctx, id, 100, -1)
		if err != nil {
			t.Fatalf("Messages(%s): %v", id, err)
		}
		var out []string
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%d:%s:%s", r.Index, r.Role, r.Text))
		}
		return fmt.Sprintf("%d %s", total, strings.Join(out, " | "))
	}
	if got, want := text("b"), "2 0:user:hi b | 1:assistant:hello b"; got != want {
		t.Errorf("b after migration: %q, want %q", got, want)
	}
	if op, err := s.Operation(ctx, "b", "op1"); err != nil || op.Result == nil || op.Result.Text != "hello b" {
		t.Errorf("operation after migration: %+v, %v", op, err)
	}
	if n, err := s.Recover(ctx, "a"); err != nil || n != 1 {
		t.Fatalf("Recover(a) = %d, %v; want the running turn recovered", n, err)
	}
	if got, want := text("a"), "4 0:user:hi a | 1:assistant:hello a | 2:user:again | 3:marker:"+InterruptedText; got != want {
		t.Errorf("a after recovery: %q, want %q", got, want)
	}
	if list, _, err := s.ListSessions(ctx, "alice", 10, ""); err != nil || len(list) != 2 || list[0].FirstPrompt != "hi b" || list[1].FirstPrompt != "hi a" {
		t.Errorf("ListSessions = %+v, %v", list, err)
	}
	if err := s.Fork(ctx, "a", Session{ID: "c", Owner: "alice", Agent: "default", Workspace: "/w"}, Controls{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got, want := text("c"), "4 0:user:hi a | 1:assistant:hello a | 2:user:again | 3:marker:"+InterruptedText; got != want {
		t.Errorf("the fork after its source was deleted: %q, want %q", got, want)
	}
	// A session created now gets a number no other session has, and its rows are its own.
	if err := s.CreateSession(ctx, Session{ID: "d", Owner: "alice", Agent: "default", Workspace: "/w"}); err != nil {
		t.Fatal(err)
	}
	if got, want := text("d"), "0 "; got != want {
		t.Errorf("a new session: %q, want %q", got, want)
	}
	var orphans int
	if err := s.w.QueryRowContext(ctx, "SELECT count(*) FROM transcript WHERE key >> 32 NOT IN (SELECT num FROM sessions)").Scan(&orphans); err != nil || orphans != 0 {
		t.Errorf("%d transcript rows of no session (%v)", orphans, err)
	}
}
