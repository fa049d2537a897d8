package store

import (
	"errors"
	"testing"
	"time"
)

func TestUploadIndexKeepsTheFirstRowAndFollowsItsSession(t *testing.T) {
	s := openAt(t, t.TempDir()+"/sessions.db")
	if err := s.CreateSession(ctx, Session{ID: "s1", Owner: "operator", Agent: "default", Workspace: "/w"}); err != nil {
		t.Fatal(err)
	}
	first := Upload{SessionID: "s1", SHA256: "ab", Filename: "a.png", WorkspacePath: "uploads/ab.png", Size: 3}
	if err := s.IndexUpload(ctx, first); err != nil {
		t.Fatal(err)
	}
	again := first
	again.Filename, again.WorkspacePath = "b.txt", "uploads/ab.txt"
	if err := s.IndexUpload(ctx, again); err != nil {
		t.Fatal(err)
	}
	got, err := s.IndexedUpload(ctx, "s1", "ab")
	if err != nil || got != first {
		t.Fatalf("IndexedUpload = %+v, %v; want %+v", got, err, first)
	}
	if _, err := s.IndexedUpload(ctx, "s1", "cd"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown hash: %v, want ErrNotFound", err)
	}
	if err := s.IndexUpload(ctx, Upload{SessionID: "nope", SHA256: "ab"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("index for a missing session: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IndexedUpload(ctx, "s1", "ab"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after delete: %v, want the row gone with its session", err)
	}
}

func TestWorkspacesListsEachStoredSessionsWorkspaceOnce(t *testing.T) {
	s := openAt(t, t.TempDir()+"/sessions.db")
	for _, row := range []Session{
		{ID: "s1", Owner: "operator", Agent: "default", Workspace: "/w/b"},
		{ID: "s2", Owner: "alice", Agent: "default", Workspace: "/w/a"},
		{ID: "s3", Owner: "operator", Agent: "default", Workspace: "/w/b"},
	} {
		if err := s.CreateSession(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Kill(ctx, "s2", time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := s.Workspaces(ctx)
	if err != nil || len(got) != 2 || got[0] != "/w/a" || got[1] != "/w/b" {
		t.Fatalf("Workspaces = %q, %v; want [/w/a /w/b] (a killed session's too)", got, err)
	}
}
