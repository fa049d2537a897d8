package store

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Every shape of run replays byte for byte: compact ones (params that share what
// precedes their seq, across the seqs' changes of width), and plain ones (params
// that do not, empty ones, ones starting with the compact mark or holding a
// newline, which are runs of their own).
func TestRunsReplayExactly(t *testing.T) {
	chunk := func(seq uint64, text string) []byte {
		return fmt.Appendf(nil, `{"sessionId":"s1","turnId":"t1","seq":%d,"type":"agent_message_chunk","text":%q}`, seq, text)
	}
	var want []Update
	add := func(payload func(seq uint64) []byte, n int) {
		for range n {
			seq := uint64(len(want) + 1)
			want = append(want, Update{SessionID: "s1", Seq: seq, Payload: payload(seq)})
		}
	}
	add(func(seq uint64) []byte { return chunk(seq, "word ") }, 120)                    // 1..120: 9→10, 99→100
	add(func(seq uint64) []byte { return chunk(seq, "") }, 3)                           // empty texts
	add(func(seq uint64) []byte { return fmt.Appendf(nil, `{"seq":%d}`, seq) }, 2)      // nothing but the seq
	add(func(seq uint64) []byte { return fmt.Appendf(nil, `{"seq":%d1}`, seq) }, 2)     // more digits than the seq
	add(func(seq uint64) []byte { return fmt.Appendf(nil, `{"other":%d}`, seq) }, 3)    // no seq: plain
	add(func(seq uint64) []byte { return []byte{} }, 2)                                 // empty payloads
	add(func(seq uint64) []byte { return fmt.Appendf(nil, "\x01%d", seq) }, 2)          // the old compact mark
	add(func(seq uint64) []byte { return fmt.Appendf(nil, "\x02%d", seq) }, 2)          // the compact mark
	add(func(seq uint64) []byte { return fmt.Appendf(nil, `{"seq":%d,"a"}`, seq) }, 3)  // all shared after the seq
	add(func(seq uint64) []byte { return fmt.Appendf(nil, `{"seq":%d,"ab"}`, seq) }, 1) // the middle and suffix overlap
	add(func(seq uint64) []byte { return fmt.Appendf(nil, `{"seq":%d,"b"}`, seq) }, 1)
	add(func(seq uint64) []byte { return fmt.Appendf(nil, "{\"seq\":%d,\n}", seq) }, 2) // a newline
	add(func(seq uint64) []byte { return chunk(seq, "again") }, 2)
	add(func(seq uint64) []byte { return chunk(seq, strings.Repeat("long ", 300)) }, 2) // larger than maxJoined
	add(func(seq uint64) []byte { return chunk(seq, "after") }, 2)
	s := open(t)
	create(t, s, "s1")
	// In three batches, so that runs start and end at every kind of payload.
	for _, batch := range [][]Update{want[:7], want[7:125], want[125:136], want[136:]} {
		if err := s.AppendUpdates(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	for _, after := range []uint64{0, 5, 119, 130, 137} {
		var got []Update
		if _, err := s.Updates(ctx, "s1", after, func(u Update) error {
			got = append(got, u)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want[after:], func(a, b Update) bool {
			return a.SessionID == b.SessionID && a.Seq == b.Seq && string(a.Payload) == string(b.Payload)
		}) {
			t.Fatalf("after %d: replayed %d updates, want %d, or other bytes", after, len(got), len(want)-int(after))
		}
	}
}

// The runs of a streamed reply are stored compact: a chunk keeps little more than
// its text.
func TestStreamedChunksAreStoredCompact(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	// A turn opens with its prompt (user_message), which shares little with the
	// chunks after it and is stored on its own.
	prompt := fmt.Appendf(nil, `{"sessionId":"6f1c2a3e-1b2c-4d5e-8f90-a1b2c3d4e5f6","turnId":"turn_0123456789abcdef","seq":1,"type":"user_message","text":%q}`,
		strings.Repeat("line of the prompt\n", 500))
	batch := []Update{{SessionID: "s1", Seq: 1, Payload: prompt}}
	total := 0
	for seq := uint64(2); seq <= 501; seq++ {
		p := fmt.Appendf(nil, `{"sessionId":"6f1c2a3e-1b2c-4d5e-8f90-a1b2c3d4e5f6","turnId":"turn_0123456789abcdef","seq":%d,"type":"agent_message_chunk","text":"word "}`, seq)
		batch = append(batch, Update{SessionID: "s1", Seq: seq, Payload: p})
		total += len(p)
	}
	if err := s.AppendUpdates(ctx, batch); err != nil {
		t.Fatal(err)
	}
	var stored int
	if err := s.w.QueryRowContext(ctx, "SELECT sum(length(payload)) FROM update_runs WHERE session_id = 's1'").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	stored -= len(prompt)
	if stored > 7*500+200 { // "word " and a newline per chunk, and the shared parts once

		t.Errorf("%d bytes of params stored in %d bytes", total, stored)
	}
}

// A run stored in the compact form of before issue 14 (the rest after each seq)
// still replays byte for byte.
func TestRunsOfTheOldCompactFormReplay(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	prefix := `{"sessionId":"s1","turnId":"t1","seq":`
	old := "\x01" + prefix
	var want []string
	for seq := 9; seq <= 11; seq++ {
		rest := fmt.Sprintf(`,"type":"agent_message_chunk","text":"w%d "}`, seq)
		old += "\n" + rest
		want = append(want, prefix+fmt.Sprint(seq)+rest)
	}
	if _, err := s.w.ExecContext(ctx, "INSERT INTO update_runs (session_id, first_seq, last_seq, payload) VALUES ('s1', 9, 11, ?)", []byte(old)); err != nil {
		t.Fatal(err)
	}
	var got []string
	if _, err := s.Updates(ctx, "s1", 0, func(u Update) error {
		got = append(got, string(u.Payload))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("replayed\n%q\nwant\n%q", got, want)
	}
}

// FuzzRunsRoundTrip: a run of any payloads without newlines or marks (what
// runLength lets into one) decodes to exactly what was encoded.
func FuzzRunsRoundTrip(f *testing.F) {
	f.Add(uint64(8), `{"sessionId":"s","seq":`, `,"type":"agent_message_chunk","text":"a b"}`, "x y", 3)
	f.Add(uint64(99), `{"seq":`, `}`, `1}`, 2)
	f.Fuzz(func(t *testing.T, first uint64, head, tail, vary string, n int) {
		n = 2 + int(uint(n)%40)
		if first > 1<<62 {
			first %= 1 << 62
		}
		var run []Update
		for i := range n {
			seq := first + uint64(i)
			p := fmt.Appendf(nil, "%s%d%s%s", head, seq, tail[:len(tail)*i%(len(tail)+1)], vary[:len(vary)*(i%3)/3])
			if !joinable(Update{Payload: p}) {
				return
			}
			run = append(run, Update{Seq: seq, Payload: p})
		}
		stored := encodeRun(nil, run)
		encodesOverScratch(t, run, stored)
		decodesTo(t, stored, run)
	})
}

// encodesOverScratch fails t unless run, encoded over a scratch buffer holding other
// bytes (the writer's, reused from run to run), is stored exactly as want, whether
// the buffer has room for it or not.
func encodesOverScratch(t *testing.T, run []Update, want []byte) {
	t.Helper()
	for _, room := range []int{len(want) / 2, len(want) + 7} {
		scratch := bytes.Repeat([]byte{'#'}, room)
		if got := encodeRun(scratch[:room/3], run); !bytes.Equal(got, want) {
			t.Fatalf("encoded over %d bytes of scratch: %q, want %q", room, got, want)
		}
	}
}

// decodesTo fails t unless stored, the stored form of run, decodes to exactly the
// payloads of run.
func decodesTo(t *testing.T, stored []byte, run []Update) {
	t.Helper()
	first := int64(run[0].Seq)
	parts, err := decodeRun(stored, first, first+int64(len(run))-1)
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range run {
		if string(parts[i]) != string(u.Payload) {
			t.Fatalf("update %d: %q, want %q", i, parts[i], u.Payload)
		}
	}
}

// FuzzShapedRunsRoundTrip: a run of updates of one Shape is stored by its parts,
// without its bytes being compared (shapedRun), and decodes to exactly what was
// encoded, across seqs that gain a digit.
func FuzzShapedRunsRoundTrip(f *testing.F) {
	f.Add(uint64(95), `{"sessionId":"s","turnId":"t","seq":`, `,"type":"agent_message_chunk","text":"`, `"}`, "word ", 9)
	f.Add(uint64(0), ``, ``, ``, "", 12)
	f.Add(uint64(9998), `{"seq":`, `,"text":"`, `"}`, `\n \"é\"`, 5)
	f.Fuzz(func(t *testing.T, first uint64, prefix, middle, suffix, vary string, n int) {
		n = 2 + int(uint(n)%40)
		first %= 1 << 62
		sh := &Shape{Prefix: []byte(prefix), Middle: []byte(middle), Suffix: []byte(suffix)}
		if strings.Contains(prefix+middle+suffix+vary, "\n") || (prefix != "" && (prefix[0] == compactMark || prefix[0] == framedMark)) {
			return // not a shape (Shape)
		}
		var run []Update
		for i := range n {
			seq := first + uint64(i)
			p := fmt.Appendf(nil, "%s%d%s%s%s", prefix, seq, middle, vary[:len(vary)*(i%4)/3], suffix)
			u := Update{Seq: seq, Payload: p, Shape: sh}
			if !joinable(u) {
				return
			}
			run = append(run, u)
		}
		stored := encodeRun(nil, run)
		if shaped := shapedRun(nil, run); !bytes.Equal(stored, shaped) {
			t.Fatalf("stored %q, not by its shape", stored)
		}
		encodesOverScratch(t, run, stored)
		decodesTo(t, stored, run)
	})
}

// A run whose updates are not all of one shape, or whose payload is too short
// for the shape it names, is compacted by comparing its bytes, as one of no
// shape is.
func TestARunNotAllOfOneShapeIsStoredByItsBytes(t *testing.T) {
	prefix, middle, suffix := `{"seq":`, `,"text":"`, `"}`
	a := &Shape{Prefix: []byte(prefix), Middle: []byte(middle), Suffix: []byte(suffix)}
	b := &Shape{Prefix: []byte(prefix), Middle: []byte(middle), Suffix: []byte(suffix)}
	mk := func(seq uint64, text string, sh *Shape) Update {
		return Update{Seq: seq, Payload: fmt.Appendf(nil, "%s%d%s%s%s", prefix, seq, middle, text, suffix), Shape: sh}
	}
	for name, run := range map[string][]Update{
		"two shapes":    {mk(7, "a", a), mk(8, "b", b), mk(9, "c", a)},
		"a shape, none": {mk(7, "a", a), mk(8, "b", nil)},
		"too short":     {mk(7, "a", a), {Seq: 8, Payload: []byte(`{"seq":8`), Shape: a}},
	} {
		t.Run(name, func(t *testing.T) {
			if shapedRun(nil, run) != nil {
				t.Error("stored by a shape")
			}
			decodesTo(t, encodeRun(nil, run), run)
		})
	}
}
