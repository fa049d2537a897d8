//go:build unix

package store

import (
	"strings"
	"testing"
)

// A commit reaches the WAL file in as few writes as its size allows (walvfs.go),
// not two per page, and another connection reads it at once.
func TestACommitIsWrittenToTheWALInOneWriteAPiece(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	if _, err := s.BeginTurn(ctx, "s1", "t0", user("warm")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		turn   string
		words  int
		writes int64 // at most, with the WAL's header (written and synced on its own when it starts over)
	}{
		{"t1", 20_000, 2},  // 100 KB: 30-odd pages, one write
		{"t2", 100_000, 5}, // 500 KB: 120-odd pages, four writes of 128 KiB
	} {
		prompt := strings.Repeat("word ", c.words)
		before := walWrites.Load()
		if err := s.EndTurn(ctx, "s1", prevTurn(c.turn)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.BeginTurn(ctx, "s1", c.turn, user(prompt)); err != nil {
			t.Fatal(err)
		}
		writes := walWrites.Load() - before
		if writes < 1 || writes > c.writes+1 { // +1: the end of the turn before, one page or two
			t.Errorf("a %d-byte prompt's turn: %d writes to the WAL, want 1 to %d", len(prompt), writes, c.writes+1)
		}
		got := mustContext(t, s, "s1") // read on another connection
		if last := got[len(got)-1]; last.Text != prompt {
			t.Errorf("the prompt read back is %d bytes, want %d", len(last.Text), len(prompt))
		}
	}
}

func prevTurn(turn string) string { return map[string]string{"t1": "t0", "t2": "t1"}[turn] }
