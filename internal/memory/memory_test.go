package memory

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

func newService(t testing.TB, cfg config.Config, opts store.Options) (*Service, *store.Store) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "sessions.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := New(Options{Store: st, Config: func() config.Config { return cfg }})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, st
}

func put(t testing.TB, s *Service, owner, content, key string, tags ...string) Memory {
	t.Helper()
	m, err := s.Put(context.Background(), PutParams{Agent: "default", Owner: owner, Content: content, Key: key, Tags: tags})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRecallIsTheMemoryContextBlockOfTheBestMatches(t *testing.T) {
	s, _ := newService(t, config.Default(), store.Options{})
	tea := put(t, s, "alice", "Alice drinks green tea every morning", "drink")
	put(t, s, "alice", "The build runs with make ci", "")
	r, err := s.Recall(context.Background(), "default", "alice", "what tea does alice like?")
	if err != nil {
		t.Fatal(err)
	}
	want := "[Memory context]\n- drink: Alice drinks green tea every morning\n[/Memory context]\n\n"
	if r.Prefix != want {
		t.Fatalf("prefix = %q, want %q", r.Prefix, want)
	}
	if len(r.Entries) != 1 || r.Entries[0].ID != tea.ID || r.Entries[0].Key != "drink" || r.Entries[0].Score != 1 {
		t.Fatalf("entries = %+v", r.Entries)
	}
	// Nothing matches: nothing recalled.
	if r, err := s.Recall(context.Background(), "default", "alice", "quantum chromodynamics"); err != nil || r.Prefix != "" || len(r.Entries) != 0 {
		t.Fatalf("unrelated recall = %+v, %v", r, err)
	}
}

func TestSameKeyReplacesAndOtherOwnersNeverSee(t *testing.T) {
	s, _ := newService(t, config.Default(), store.Options{})
	a := put(t, s, "alice", "the deploy target is staging", "deploy")
	b := put(t, s, "alice", "the deploy target is production", "deploy")
	if a.ID != b.ID {
		t.Fatalf("same key made a new memory: %s then %s", a.ID, b.ID)
	}
	list, _, err := s.List(context.Background(), ListParams{Agent: "default", Owner: "alice"})
	if err != nil || len(list) != 1 || list[0].Content != "the deploy target is production" {
		t.Fatalf("list = %+v, %v", list, err)
	}
	// bob sees, recalls and forgets none of alice's.
	if r, _ := s.Recall(context.Background(), "default", "bob", "deploy target"); len(r.Entries) != 0 {
		t.Fatalf("bob recalled %+v", r.Entries)
	}
	if list, _, _ := s.List(context.Background(), ListParams{Agent: "default", Owner: "bob"}); len(list) != 0 {
		t.Fatalf("bob lists %+v", list)
	}
	if err := s.Delete(context.Background(), a.ID, "bob", false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bob's delete = %v, want not found", err)
	}
	// An admin sees every owner's.
	if list, _, _ := s.List(context.Background(), ListParams{Agent: "default", Owner: "root", Admin: true}); len(list) != 1 {
		t.Fatalf("admin lists %+v", list)
	}
	if err := s.Delete(context.Background(), a.ID, "alice", false); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Recall(context.Background(), "default", "alice", "deploy target"); len(r.Entries) != 0 {
		t.Fatalf("a forgotten memory was recalled: %+v", r.Entries)
	}
}

func TestRecallLimits(t *testing.T) {
	cfg := config.Default()
	cfg.Memory.RecallLimit = 7
	s, _ := newService(t, cfg, store.Options{})
	long := strings.Repeat("x", 2000)
	for i := range 9 {
		put(t, s, "alice", "kiwi fact "+strings.Repeat("k", i)+" "+long, "")
	}
	r, err := s.Recall(context.Background(), "default", "alice", "kiwi")
	if err != nil {
		t.Fatal(err)
	}
	body := strings.TrimSuffix(strings.TrimPrefix(r.Prefix, "[Memory context]\n"), "[/Memory context]\n\n")
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	total := 0
	for _, l := range lines {
		_, content, _ := strings.Cut(l, ": ")
		if n := len([]rune(content)); n > RecallEach {
			t.Errorf("a recalled memory has %d characters, more than %d", n, RecallEach)
		}
		total += len([]rune(content))
	}
	if total > RecallTotal || len(r.Entries) != 5 || len(lines) != 5 {
		t.Fatalf("recalled %d entries, %d lines, %d characters; want 5 (4000 characters / 800 each)", len(r.Entries), len(lines), total)
	}

	cfg.Memory.RecallLimit = 2
	s2, _ := newService(t, cfg, store.Options{})
	for range 4 {
		put(t, s2, "alice", "kiwi fact", "")
	}
	if r, _ := s2.Recall(context.Background(), "default", "alice", "kiwi"); len(r.Entries) != 2 {
		t.Fatalf("recall_limit 2 recalled %d", len(r.Entries))
	}
}

func TestMinScoreAndDecay(t *testing.T) {
	now := time.Now()
	cfg := config.Default()
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{Now: func() time.Time { return now.Add(-21 * 24 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := New(Options{Store: st, Config: func() config.Config { return cfg }, Now: func() time.Time { return now }})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	put(t, s, "alice", "old plum fact", "")
	found, err := s.Search(context.Background(), "default", "alice", "plum", 5)
	if err != nil || len(found) != 1 {
		t.Fatalf("search = %v, %v", found, err)
	}
	// three half-lives: 1/8
	if got := found[0].Score; got < 0.124 || got > 0.126 {
		t.Fatalf("score after 21 days = %v, want 0.125", got)
	}
	if r, _ := s.Recall(context.Background(), "default", "alice", "plum"); len(r.Entries) != 0 {
		t.Fatalf("a memory scoring below min_score was recalled: %+v", r.Entries)
	}
	zero := 0.0
	cfg.Memory.MinScore = &zero
	if r, _ := s.Recall(context.Background(), "default", "alice", "plum"); len(r.Entries) != 1 {
		t.Fatalf("min_score 0 recalled %+v", r.Entries)
	}
}

func TestBadInputNamesTheField(t *testing.T) {
	s, _ := newService(t, config.Default(), store.Options{})
	for _, c := range []struct {
		p            PutParams
		field, cause string
	}{
		{PutParams{Agent: "default", Content: "  "}, "content", "empty"},
		{PutParams{Agent: "default", Content: strings.Repeat("é", MaxContent+1)}, "content", "too_long"},
		{PutParams{Agent: "nobody", Content: "x"}, "agentAlias", "unknown_agent"},
		{PutParams{Agent: "default", Content: "x", Tags: []string{"has space"}}, "tags", "bad_tag"},
		{PutParams{Agent: "default", Content: "x", Key: "two\nlines"}, "key", "bad_key"},
	} {
		_, err := s.Put(context.Background(), c.p)
		var e *Error
		if !errors.As(err, &e) || e.Field != c.field || e.Reason != c.cause {
			t.Errorf("Put(%.40v) = %v, want %s/%s", c.p, err, c.field, c.cause)
		}
	}
	if _, err := s.Put(context.Background(), PutParams{Agent: "default", Content: strings.Repeat("é", MaxContent)}); err != nil {
		t.Errorf("8000 characters refused: %v", err)
	}
}

func TestAFailedWriteIsAnError(t *testing.T) {
	fail := errors.New("disk full")
	var failing bool
	s, _ := newService(t, config.Default(), store.Options{FailWrites: func(op string) error {
		if failing && strings.HasPrefix(op, "memory_") {
			return fail
		}
		return nil
	}})
	m := put(t, s, "alice", "kept fig fact", "")
	failing = true
	if _, err := s.Put(context.Background(), PutParams{Agent: "default", Owner: "alice", Content: "lost fig fact"}); !errors.Is(err, fail) {
		t.Fatalf("Put with a failing write = %v", err)
	}
	if err := s.Delete(context.Background(), m.ID, "alice", false); !errors.Is(err, fail) {
		t.Fatalf("Delete with a failing write = %v", err)
	}
	failing = false
	list, _, _ := s.List(context.Background(), ListParams{Agent: "default", Owner: "alice"})
	if len(list) != 1 || list[0].ID != m.ID {
		t.Fatalf("after failed writes: %+v", list)
	}
}

func embeddingsConfig(url string) config.Config {
	cfg := config.Default()
	cfg.Providers["emb"] = config.Provider{Kind: "openai", BaseURL: url, Model: "m"}
	cfg.Memory.EmbeddingsProvider = "emb"
	return cfg
}

func TestEmbeddingsScoreAndReindexFillsWhatFailed(t *testing.T) {
	f := fakeopenai.New(t)
	s, _ := newService(t, embeddingsConfig(f.URL()), store.Options{})
	a := put(t, s, "alice", "alice prefers dark roast coffee", "")
	if !a.Embedded {
		t.Fatal("memory stored without its embedding")
	}
	f.FailEmbeddings(500)
	b := put(t, s, "alice", "bob prefers tea", "")
	if b.Embedded {
		t.Fatal("an embedding from a failing endpoint")
	}
	f.FailEmbeddings(0)
	f.WrongEmbeddingSize(true)
	c := put(t, s, "alice", "carol prefers water", "")
	if c.Embedded {
		t.Fatal("an embedding of the wrong size was kept")
	}
	// Keyword and vector both count: score = 0.7 cos + 0.3 kw.
	f.WrongEmbeddingSize(false)
	found, err := s.Search(context.Background(), "default", "alice", "dark roast coffee", 5)
	if err != nil || len(found) == 0 || found[0].ID != a.ID {
		t.Fatalf("search = %+v, %v", found, err)
	}
	cos := float64(dot(fakeopenai.Embed("dark roast coffee", fakeopenai.DefaultDims), fakeopenai.Embed(a.Content, fakeopenai.DefaultDims)))
	if want := 0.7*cos + 0.3*1; math.Abs(found[0].Score-want) > 1e-4 {
		t.Fatalf("score = %v, want 0.7 × %v + 0.3 × 1 = %v", found[0].Score, cos, want)
	}
	f.WrongEmbeddingSize(true)
	r, err := s.Reindex(context.Background(), "default", nil)
	if err != nil || r.Embedded != 0 || r.Missing != 2 {
		t.Fatalf("reindex with wrong sizes = %+v, %v; want 0 embedded, 2 missing", r, err)
	}
	f.WrongEmbeddingSize(false)
	var calls [][2]int
	r, err = s.Reindex(context.Background(), "default", func(done, total int) { calls = append(calls, [2]int{done, total}) })
	if err != nil || r.Embedded != 2 || r.Missing != 0 {
		t.Fatalf("reindex = %+v, %v; want 2 embedded, 0 missing", r, err)
	}
	if len(calls) == 0 || calls[len(calls)-1] != [2]int{2, 2} {
		t.Fatalf("progress = %v", calls)
	}
	// The reindexed memory is found by meaning now: "tea" is in the query only.
	found, _ = s.Search(context.Background(), "default", "alice", "bob prefers", 5)
	if len(found) == 0 || found[0].ID != b.ID || !found[0].Embedded {
		t.Fatalf("after reindex: %+v", found)
	}
	// A failing endpoint at recall time: keyword only, no error.
	f.FailEmbeddings(503)
	if rc, err := s.Recall(context.Background(), "default", "alice", "coffee"); err != nil || len(rc.Entries) != 1 {
		t.Fatalf("recall with failing embeddings = %+v, %v", rc, err)
	}
}

func TestAMissingOrDamagedIndexIsRebuiltAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	open := func() (*Service, *store.Store) {
		st, err := store.Open(path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := New(Options{Store: st, Config: config.Default})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s, st
	}
	s, st := open()
	put(t, s, "alice", "the wifi password is hunter2", "wifi")
	st.Close()
	for _, damage := range []string{
		"DROP TABLE memories_fts",
		"DELETE FROM memories_fts_data WHERE id > 1",
		"DROP TABLE memories_fts_data",
	} {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(damage); err != nil {
			t.Fatalf("%s: %v", damage, err)
		}
		db.Close()
		s, st := open()
		r, err := s.Recall(context.Background(), "default", "alice", "wifi password")
		if err != nil || len(r.Entries) != 1 {
			t.Fatalf("after %q: recall = %+v, %v", damage, r, err)
		}
		st.Close()
	}
}

func TestAWordNoMemoryHadIsFoundOnceOneHasIt(t *testing.T) {
	s, _ := newService(t, config.Default(), store.Options{})
	put(t, s, "alice", "apples are red", "")
	if r, _ := s.Recall(context.Background(), "default", "alice", "quince"); len(r.Entries) != 0 {
		t.Fatalf("recalled %v", r.Entries)
	}
	put(t, s, "alice", "a quince is yellow", "")
	if r, _ := s.Recall(context.Background(), "default", "alice", "quince"); len(r.Entries) != 1 {
		t.Fatalf("after storing it: %v", r.Entries)
	}
}
