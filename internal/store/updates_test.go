package store

import (
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

func updates(id string, from, to uint64) []Update {
	var out []Update
	for seq := from; seq <= to; seq++ {
		out = append(out, Update{SessionID: id, Seq: seq, Payload: fmt.Appendf(nil, `{"seq":%d}`, seq)})
	}
	return out
}

// replay returns the seqs Updates streams after afterSeq, and oldest.
func replay(t testing.TB, s *Store, id string, afterSeq uint64) ([]uint64, uint64) {
	t.Helper()
	var seqs []uint64
	oldest, err := s.Updates(ctx, id, afterSeq, func(u Update) error {
		if want := fmt.Sprintf(`{"seq":%d}`, u.Seq); string(u.Payload) != want || u.SessionID != id {
			t.Errorf("update %d: %s of %s, want %s", u.Seq, u.Payload, u.SessionID, want)
		}
		seqs = append(seqs, u.Seq)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return seqs, oldest
}

func TestSeqMarkOnlyGrowsAndSurvivesReopening(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openAt(t, path)
	create(t, s, "s1")
	if mark, err := s.SeqMark(ctx, "s1"); err != nil || mark != 0 {
		t.Fatalf("a new session's mark: %d, %v", mark, err)
	}
	if err := s.ReserveSeq(ctx, "s1", 256); err != nil {
		t.Fatal(err)
	}
	if err := s.ReserveSeq(ctx, "s1", 100); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = openAt(t, path)
	if mark, err := s.SeqMark(ctx, "s1"); err != nil || mark != 256 {
		t.Errorf("mark after reopening: %d, %v; want 256", mark, err)
	}
	if sess, _ := s.Session(ctx, "s1"); sess.LastSeq != 256 {
		t.Errorf("Session.LastSeq = %d, want 256", sess.LastSeq)
	}
	mustNotExist(t, s.ReserveSeq(ctx, "nope", 1))
	_, err := s.SeqMark(ctx, "nope")
	mustNotExist(t, err)
	if err := s.ReserveSeq(ctx, "s1", 1<<63); err == nil {
		t.Error("a seq beyond int64 was accepted")
	}
}

func TestAppendUpdatesKeepsTheNewestPerSession(t *testing.T) {
	// Keep 5: a batch is stored as one run per session, and trimming drops whole runs
	// from the oldest as long as at least 5 updates remain.
	s := open(t, Options{Keep: 5})
	create(t, s, "s1")
	create(t, s, "s2")
	if err := s.AppendUpdates(ctx, append(updates("s1", 1, 3), updates("s2", 1, 2)...)); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendUpdates(ctx, updates("s1", 4, 9)); err != nil {
		t.Fatal(err)
	}
	seqs, oldest := replay(t, s, "s1", 0)
	if fmt.Sprint(seqs) != "[4 5 6 7 8 9]" || oldest != 4 {
		t.Errorf("s1 keeps %v (oldest %d), want [4 5 6 7 8 9] (4): the run 1-3 goes, 4-9 stays whole", seqs, oldest)
	}
	seqs, oldest = replay(t, s, "s2", 0)
	if fmt.Sprint(seqs) != "[1 2]" || oldest != 1 {
		t.Errorf("s2 keeps %v (oldest %d), want [1 2] (1)", seqs, oldest)
	}
	// A later batch with a gap (seqs reserved before a restart and never used): the
	// run 4-9 stays, since dropping it would leave fewer than 5.
	if err := s.AppendUpdates(ctx, updates("s1", 300, 302)); err != nil {
		t.Fatal(err)
	}
	if seqs, oldest := replay(t, s, "s1", 0); fmt.Sprint(seqs) != "[4 5 6 7 8 9 300 301 302]" || oldest != 4 {
		t.Errorf("after the gap: %v (oldest %d)", seqs, oldest)
	}
	for _, batch := range [][]Update{updates("s1", 303, 304), updates("s1", 305, 306)} {
		if err := s.AppendUpdates(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if seqs, oldest := replay(t, s, "s1", 0); fmt.Sprint(seqs) != "[300 301 302 303 304 305 306]" || oldest != 300 {
		t.Errorf("after more runs: %v (oldest %d)", seqs, oldest)
	}
	var kept int
	s.r.QueryRowContext(ctx, "SELECT updates_kept FROM sessions WHERE id = 's1'").Scan(&kept)
	if kept != 7 {
		t.Errorf("updates_kept = %d, want 7", kept)
	}
}

func TestRunsSplitBackExactlyAndNewlinesStayWhole(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	batch := []Update{
		{SessionID: "s1", Seq: 1, Payload: []byte(`{"a":1}`)},
		{SessionID: "s1", Seq: 2, Payload: []byte("{\n\"b\":2}")}, // a raw newline: a run of its own
		{SessionID: "s1", Seq: 3, Payload: []byte{}},
		{SessionID: "s1", Seq: 4, Payload: []byte(`{"d":4}`)},
		{SessionID: "s1", Seq: 6, Payload: []byte(`{"f":6}`)}, // a gap starts a new run
	}
	if err := s.AppendUpdates(ctx, batch); err != nil {
		t.Fatal(err)
	}
	var got []Update
	if _, err := s.Updates(ctx, "s1", 0, func(u Update) error { got = append(got, u); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(batch) {
		t.Fatalf("replayed %d updates, want %d", len(got), len(batch))
	}
	for i := range batch {
		if got[i].Seq != batch[i].Seq || string(got[i].Payload) != string(batch[i].Payload) {
			t.Errorf("update %d = %d %q, want %d %q", i, got[i].Seq, got[i].Payload, batch[i].Seq, batch[i].Payload)
		}
	}
}

func TestAppendUpdatesRaisesTheMarkAndSkipsWhatItCannotStore(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	if err := s.ReserveSeq(ctx, "s1", 3); err != nil {
		t.Fatal(err)
	}
	// 1-5 of s1, an update of a session deleted meanwhile, and 2-3 again (a retry).
	batch := append(updates("s1", 1, 5), Update{SessionID: "gone", Seq: 1, Payload: []byte("{}")})
	batch = append(batch, updates("s1", 2, 3)...)
	if err := s.AppendUpdates(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if seqs, _ := replay(t, s, "s1", 0); fmt.Sprint(seqs) != "[1 2 3 4 5]" {
		t.Errorf("stored %v", seqs)
	}
	if mark, _ := s.SeqMark(ctx, "s1"); mark != 5 {
		t.Errorf("mark = %d, want 5 (the highest stored seq)", mark)
	}
	if err := s.AppendUpdates(ctx, nil); err != nil {
		t.Errorf("an empty batch: %v", err)
	}
}

func TestUpdatesStreamsAfterASeq(t *testing.T) {
	s := open(t, Options{Keep: 10})
	create(t, s, "s1")
	create(t, s, "empty")
	for _, batch := range [][]Update{updates("s1", 1, 5), updates("s1", 6, 10), updates("s1", 11, 15)} {
		if err := s.AppendUpdates(ctx, batch); err != nil { // three runs; 6-15 stay
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		after      uint64
		want       string
		truncated  bool // afterSeq+1 < oldest
		wantOldest uint64
	}{
		{0, "[6 7 8 9 10 11 12 13 14 15]", true, 6},
		{4, "[6 7 8 9 10 11 12 13 14 15]", true, 6},
		{5, "[6 7 8 9 10 11 12 13 14 15]", false, 6},
		{12, "[13 14 15]", false, 6},
		{15, "[]", false, 6},
		{1 << 63, "[]", false, 6},
	} {
		seqs, oldest := replay(t, s, "s1", tc.after)
		if seqs == nil {
			seqs = []uint64{}
		}
		if fmt.Sprint(seqs) != tc.want || oldest != tc.wantOldest || (tc.after+1 < oldest) != tc.truncated {
			t.Errorf("after %d: %v oldest %d; want %s oldest %d truncated %v", tc.after, seqs, oldest, tc.want, tc.wantOldest, tc.truncated)
		}
	}
	if seqs, oldest := replay(t, s, "empty", 0); len(seqs) != 0 || oldest != 0 {
		t.Errorf("empty log: %v, oldest %d", seqs, oldest)
	}
	stop := errors.New("enough")
	n := 0
	_, err := s.Updates(ctx, "s1", 0, func(Update) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Errorf("fn's error: %v after %d updates", err, n)
	}
	_, err = s.Updates(ctx, "nope", 0, func(Update) error { return nil })
	mustNotExist(t, err)
}

func TestAFailedAppendUpdatesStoresNothing(t *testing.T) {
	on := true
	s := open(t, Options{FailWrites: failing(OpAppendUpdates, &on)})
	create(t, s, "s1")
	if err := s.AppendUpdates(ctx, updates("s1", 1, 3)); !errors.Is(err, errInjected) {
		t.Fatalf("AppendUpdates: %v", err)
	}
	// Nothing stored, and the lost seqs count as no longer kept (see AppendUpdates).
	if seqs, oldest := replay(t, s, "s1", 0); len(seqs) != 0 || oldest != 4 {
		t.Errorf("stored %v, oldest %d", seqs, oldest)
	}
	if n := counts(t, s, "s1")["update_runs"]; n != 0 {
		t.Errorf("%d runs stored by a failed batch", n)
	}
	if mark, _ := s.SeqMark(ctx, "s1"); mark != 0 {
		t.Errorf("mark = %d after a failed batch", mark)
	}
}

// Concurrent turns, update batches and readers: every call is safe for concurrent
// use, and nothing is lost (run with -race).
func TestConcurrentUse(t *testing.T) {
	s := open(t, Options{Keep: 1000})
	const sessions, steps = 4, 40
	for i := range sessions {
		create(t, s, fmt.Sprint("s", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions*3)
	for i := range sessions {
		id := fmt.Sprint("s", i)
		wg.Go(func() {
			if _, err := s.BeginTurn(ctx, id, "t1", user("go")); err != nil {
				errs <- err
				return
			}
			for j := range steps {
				if _, err := s.AppendCheckpoint(ctx, id, "t1", assistant(fmt.Sprint(j))); err != nil {
					errs <- err
					return
				}
			}
			if err := s.EndTurn(ctx, id, "t1"); err != nil {
				errs <- err
			}
		})
		wg.Go(func() {
			for j := range uint64(steps) {
				if err := s.AppendUpdates(ctx, updates(id, j*4+1, j*4+4)); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			for range steps {
				if _, err := s.Context(ctx, id); err != nil {
					errs <- err
					return
				}
				if _, _, err := s.ListSessions(ctx, "", 10, ""); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range sessions {
		id := fmt.Sprint("s", i)
		if rows := allRows(t, s, id); len(rows) != steps+1 {
			t.Errorf("%s: %d rows, want %d", id, len(rows), steps+1)
		}
		if seqs, _ := replay(t, s, id, 0); len(seqs) != steps*4 {
			t.Errorf("%s: %d updates, want %d", id, len(seqs), steps*4)
		}
	}
}

// BeginTurnShown stores the prompt's update with the prompt, in one transaction:
// both or neither, and the update replays like any other.
func TestBeginTurnShownStoresTheUpdateWithThePrompt(t *testing.T) {
	on := false
	s := open(t, Options{FailWrites: failing(OpBeginTurn, &on)})
	create(t, s, "s1")
	shown := Update{SessionID: "s1", Seq: 1, Payload: []byte(`{"seq":1}`)} // replay checks payloads of this form

	on = true
	if _, err := s.BeginTurnShown(ctx, "s1", "t1", "", user("go"), shown); !errors.Is(err, errInjected) {
		t.Fatalf("BeginTurnShown with the write failing: %v", err)
	}
	if c := counts(t, s, "s1"); c["turns"] != 0 || c["checkpoints"] != 0 || c["update_runs"] != 0 {
		t.Fatalf("a failed begin stored %v", c)
	}
	// Not stored, never shown: nothing is lost, so nothing counts as no longer kept.
	if seqs, oldest := replay(t, s, "s1", 0); len(seqs) != 0 || oldest != 0 {
		t.Errorf("after a failed begin: stored %v, oldest %d", seqs, oldest)
	}

	on = false
	if _, err := s.BeginTurnShown(ctx, "s1", "t1", "", user("go"), shown); err != nil {
		t.Fatal(err)
	}
	if seqs, _ := replay(t, s, "s1", 0); !slices.Equal(seqs, []uint64{1}) {
		t.Errorf("replay %v, want [1]", seqs)
	}
	if mark, _ := s.SeqMark(ctx, "s1"); mark != 1 {
		t.Errorf("seq mark %d, want 1", mark)
	}
	if msgs, err := s.Context(ctx, "s1"); err != nil || len(msgs) != 1 || msgs[0].Text != "go" {
		t.Errorf("context %v, %v", msgs, err)
	}
	if _, err := s.BeginTurnShown(ctx, "s1", "t2", "", user("go"), Update{SessionID: "s2", Seq: 2}); err == nil {
		t.Error("an update of another session was taken")
	}
}

// A begin whose update follows a failed batch closes the gap as AppendUpdates does:
// the updates before it are dropped in its transaction, and a replay from before
// the loss answers that they are no longer kept.
func TestBeginTurnShownAfterALossDropsWhatPrecedesTheGap(t *testing.T) {
	on := false
	s := open(t, Options{FailWrites: failing(OpAppendUpdates, &on)})
	create(t, s, "s1")
	if err := s.AppendUpdates(ctx, updates("s1", 1, 3)); err != nil {
		t.Fatal(err)
	}
	on = true
	if err := s.AppendUpdates(ctx, updates("s1", 4, 5)); !errors.Is(err, errInjected) {
		t.Fatalf("AppendUpdates: %v", err)
	}
	on = false
	if _, err := s.BeginTurnShown(ctx, "s1", "t1", "", user("go"), Update{SessionID: "s1", Seq: 6, Payload: []byte(`{"seq":6}`)}); err != nil {
		t.Fatal(err)
	}
	if seqs, oldest := replay(t, s, "s1", 0); !slices.Equal(seqs, []uint64{6}) || oldest != 6 {
		t.Errorf("replay %v, oldest %d: want [6] from 6", seqs, oldest)
	}
	if _, lost := s.lostOf("s1"); lost {
		t.Error("the loss is still remembered after the gap closed")
	}
}

// A prompt stored from the JSON string its client sent (BeginTurnShownQuoted) reads
// back as its text, whatever escapes the client chose, before and after a restart;
// for a string encoded as the store encodes, the stored message is the same bytes.
func TestAPromptStoredAsItsClientQuotedItReadsBackAsItsText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openAt(t, path)
	create(t, s, "s1")
	const quoted = `"caf\u00e9 \"q\" a\/b\tc\nline \u0032"`
	const text = "café \"q\" a/b\tc\nline 2"
	shown := Update{SessionID: "s1", Seq: 1, Payload: []byte(`{"seq":1}`)}
	if _, err := s.BeginTurnShownQuoted(ctx, "s1", "t1", "", user(text), jsontext.Value(quoted), shown); err != nil {
		t.Fatal(err)
	}
	if err := s.EndTurn(ctx, "s1", "t1"); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store, when string) {
		t.Helper()
		if msgs, err := s.Context(ctx, "s1"); err != nil || len(msgs) != 1 || msgs[0].Text != text || msgs[0].Role != llm.RoleUser {
			t.Errorf("%s: context %+v, %v; want the prompt %q", when, msgs, err, text)
		}
		if rows := allRows(t, s, "s1"); len(rows) != 1 || rows[0].Text != text {
			t.Errorf("%s: transcript %+v, want the prompt %q", when, rows, text)
		}
	}
	check(s, "before a restart")
	s.Close()
	check(openAt(t, path), "after a restart")

	for _, text := range []string{"go", "line 1\nline 2\ttab \"q\" \\ é ✓ \x01 </script>", strings.Repeat("word ", 9000)} {
		q, err := jsontext.AppendQuote(nil, text)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodePrompt(user(text), q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeMessage(user(text))
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("prompt %.40q stored from its quoted form as %.80s, encoded as %.80s", text, got, want)
		}
	}
}
