package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

func operation(t *testing.T, s *Store, sid, op string) Operation {
	t.Helper()
	o, err := s.Operation(ctx, sid, op)
	if err != nil {
		t.Fatalf("Operation(%s, %s): %v", sid, op, err)
	}
	return o
}

func TestAnOperationIsKeptWithItsTurnAndAnsweredOnceTheTurnEnds(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	if _, err := s.Operation(ctx, "s1", "op-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before any turn: %v", err)
	}
	if _, err := s.BeginTurnFor(ctx, "s1", "t1", "op-1", user("hi")); err != nil {
		t.Fatal(err)
	}
	if o := operation(t, s, "s1", "op-1"); o.TurnID != "t1" || o.Result != nil {
		t.Fatalf("while the turn runs: %+v", o)
	}
	want := TurnResult{StopReason: "end_turn", Text: "hello", InputTokens: 1, OutputTokens: 2}
	if err := s.EndTurnWith(ctx, "s1", "t1", want); err != nil {
		t.Fatal(err)
	}
	if o := operation(t, s, "s1", "op-1"); o.TurnID != "t1" || o.Result == nil || *o.Result != want {
		t.Fatalf("after the turn: %+v", o)
	}
	// The same id in another session is another operation.
	create(t, s, "s2")
	if _, err := s.Operation(ctx, "s2", "op-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another session: %v", err)
	}
	// An id is used once per session.
	if _, err := s.BeginTurnFor(ctx, "s1", "t2", "op-1", user("again")); err == nil {
		t.Fatal("a second turn began for one operation id")
	}
}

func TestRecoveryAnswersTheOperationOfAnInterruptedTurnAcrossARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openAt(t, path)
	create(t, s, "s1")
	if _, err := s.BeginTurnFor(ctx, "s1", "t1", "op-crash", user("hi")); err != nil {
		t.Fatal(err)
	}
	s.Close() // the daemon died mid-turn
	s = openAt(t, path)
	if n, err := s.Recover(ctx, "s1"); err != nil || n != 1 {
		t.Fatalf("Recover: %d, %v", n, err)
	}
	if o := operation(t, s, "s1", "op-crash"); o.TurnID != "t1" || o.Result == nil || *o.Result != InterruptedResult {
		t.Fatalf("after recovery: %+v", o)
	}
}

func TestASessionKeepsItsLastOperationsAndForgetsOlderOnes(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	n := MaxOperations + 3
	for i := range n {
		turnID, op := fmt.Sprintf("t%d", i), fmt.Sprintf("op-%d", i)
		if _, err := s.BeginTurnFor(ctx, "s1", turnID, op, user("p")); err != nil {
			t.Fatal(err)
		}
		if err := s.EndTurnWith(ctx, "s1", turnID, TurnResult{StopReason: "end_turn"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		_, err := s.Operation(ctx, "s1", fmt.Sprintf("op-%d", i))
		if forgotten := i < n-MaxOperations; forgotten != errors.Is(err, ErrNotFound) {
			t.Errorf("op-%d: %v (forgotten: %v)", i, err, forgotten)
		}
	}
	// Deleting the session deletes its operations with its turns.
	if err := s.Delete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM operations").Scan(&left); err != nil || left != 0 {
		t.Fatalf("operations left after delete: %d, %v", left, err)
	}
}
