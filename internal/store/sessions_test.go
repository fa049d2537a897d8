package store

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestCreateSessionStoresTheRowAndRefusesATakenID(t *testing.T) {
	s := open(t)
	created := time.UnixMilli(1_700_000_000_123)
	in := Session{ID: "s1", Owner: "alice", Agent: "coder", Workspace: "/ws", CreatedAt: created}
	if err := s.CreateSession(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, err := s.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	want := Session{ID: "s1", Owner: "alice", Agent: "coder", Workspace: "/ws", Surface: SurfaceRPC,
		CreatedAt: created, LastActivity: created}
	if got.ID != want.ID || got.Owner != want.Owner || got.Agent != want.Agent || got.Workspace != want.Workspace ||
		got.Surface != want.Surface || !got.CreatedAt.Equal(want.CreatedAt) || !got.LastActivity.Equal(want.LastActivity) ||
		got.KilledAt != nil || got.MessageCount != 0 || got.LastSeq != 0 {
		t.Errorf("Session = %+v\nwant      %+v", got, want)
	}
	if err := s.CreateSession(ctx, in); !errors.Is(err, ErrExists) {
		t.Errorf("second CreateSession: %v, want ErrExists", err)
	}
	if err := s.CreateSession(ctx, Session{}); err == nil {
		t.Error("CreateSession with an empty id succeeded")
	}
	_, err = s.Session(ctx, "nope")
	mustNotExist(t, err)
}

func TestListSessionsPagesByActivityWithAStableCursor(t *testing.T) {
	s := open(t)
	base := time.UnixMilli(1_000_000)
	add := func(id, owner string, activity int) {
		t.Helper()
		at := base.Add(time.Duration(activity) * time.Millisecond)
		if err := s.CreateSession(ctx, Session{ID: id, Owner: owner, Agent: "a", Workspace: "/w", CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	// Ten sessions; two pairs share an activity time (ties break by id, descending).
	for i := range 10 {
		activity := i
		if i == 3 || i == 6 {
			activity = i - 1
		}
		owner := "alice"
		if i%2 == 1 {
			owner = "bob"
		}
		add(fmt.Sprintf("s%02d", i), owner, activity)
	}
	ids := func(ss []Session) []string {
		var out []string
		for _, x := range ss {
			out = append(out, x.ID)
		}
		return out
	}
	page1, next, err := s.ListSessions(ctx, "", 4, "")
	if err != nil || next == "" {
		t.Fatalf("page 1: %v, next %q", err, next)
	}
	if got, want := fmt.Sprint(ids(page1)), "[s09 s08 s07 s06]"; got != want {
		t.Errorf("page 1 = %s, want %s", got, want)
	}
	// Sessions created between pages come first in a new listing, not in this one.
	add("new1", "alice", 100)
	add("new2", "bob", 50)
	page2, next, err := s.ListSessions(ctx, "", 4, next)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(ids(page2)), "[s05 s04 s03 s02]"; got != want {
		t.Errorf("page 2 = %s, want %s", got, want)
	}
	page3, next, err := s.ListSessions(ctx, "", 4, next)
	if err != nil || next != "" {
		t.Fatalf("page 3: %v, next %q (want none)", err, next)
	}
	if got, want := fmt.Sprint(ids(page3)), "[s01 s00]"; got != want {
		t.Errorf("page 3 = %s, want %s", got, want)
	}

	bob, next, err := s.ListSessions(ctx, "bob", 0, "")
	if err != nil || next != "" {
		t.Fatal(err, next)
	}
	if got, want := fmt.Sprint(ids(bob)), "[new2 s09 s07 s05 s03 s01]"; got != want {
		t.Errorf("bob's sessions = %s, want %s", got, want)
	}
	// An exact page leaves no cursor behind.
	if all, next, err := s.ListSessions(ctx, "", 12, ""); err != nil || len(all) != 12 || next != "" {
		t.Errorf("12 of 12: %d rows, next %q, %v", len(all), next, err)
	}
	for _, bad := range []string{"%%%", "djE6", "eDox"} {
		if _, _, err := s.ListSessions(ctx, "", 4, bad); !errors.Is(err, ErrBadCursor) {
			t.Errorf("cursor %q: %v, want ErrBadCursor", bad, err)
		}
	}
}

func TestKillTombstonesTheSessionAndKeepsItsHistory(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	turn(t, s, "s1", "t1", user("hi"), assistant("hello"))
	at := time.UnixMilli(1_800_000_000_000)
	if err := s.Kill(ctx, "s1", at); err != nil {
		t.Fatal(err)
	}
	got, err := s.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if got.KilledAt == nil || !got.KilledAt.Equal(at) {
		t.Fatalf("KilledAt = %v, want %v", got.KilledAt, at)
	}
	if got.MessageCount != 2 {
		t.Errorf("MessageCount = %d after kill, want 2", got.MessageCount)
	}
	// A second kill keeps the first time.
	if err := s.Kill(ctx, "s1", at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Session(ctx, "s1"); !again.KilledAt.Equal(at) {
		t.Errorf("KilledAt moved to %v", again.KilledAt)
	}
	mustNotExist(t, s.Kill(ctx, "nope", at))
}

func TestDeleteRemovesTheSessionFromEveryTable(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	create(t, s, "other")
	for _, id := range []string{"s1", "other"} {
		turn(t, s, id, "t1", user("hi"), assistant("", call("c1", "shell", `{}`)), result("c1", "shell", "ok"), assistant("done"))
		ids := checkpoints(t, s, id, "t2", user("again"))
		if err := s.Trim(ctx, id, nil, ids[0]-1); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendUpdates(ctx, []Update{{SessionID: id, Seq: 1, Payload: []byte("{}")}}); err != nil {
			t.Fatal(err)
		}
	}
	before := counts(t, s, "s1")
	for table, n := range before {
		if n == 0 {
			t.Fatalf("setup: no rows in %s", table)
		}
	}
	if err := s.Delete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	for table, n := range counts(t, s, "s1") {
		if n != 0 {
			t.Errorf("%s still has %d rows of the deleted session", table, n)
		}
	}
	if got := counts(t, s, "other"); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("the other session changed: %v, want %v", got, before)
	}
	mustNotExist(t, s.Delete(ctx, "s1"))
	_, err := s.Session(ctx, "s1")
	mustNotExist(t, err)
}

func TestAFailedKillOrDeleteChangesNothing(t *testing.T) {
	var on bool
	for _, op := range []string{OpKill, OpDelete} {
		t.Run(op, func(t *testing.T) {
			s := open(t, Options{FailWrites: failing(op, &on)})
			create(t, s, "s1")
			turn(t, s, "s1", "t1", user("hi"), assistant("hello"))
			before := counts(t, s, "s1")
			on = true
			defer func() { on = false }()
			var err error
			if op == OpKill {
				err = s.Kill(ctx, "s1", time.Now())
			} else {
				err = s.Delete(ctx, "s1")
			}
			if !errors.Is(err, errInjected) {
				t.Fatalf("err = %v, want the injected failure", err)
			}
			if got := counts(t, s, "s1"); fmt.Sprint(got) != fmt.Sprint(before) {
				t.Errorf("rows changed: %v, want %v", got, before)
			}
			if sess, err := s.Session(ctx, "s1"); err != nil || sess.KilledAt != nil {
				t.Errorf("Session = %+v, %v; want alive", sess, err)
			}
		})
	}
}
