package store

import (
	"fmt"
	"slices"
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
	add(func(seq uint64) []byte { return fmt.Appendf(nil, "\x01%d", seq) }, 2)          // the compact mark
	add(func(seq uint64) []byte { return fmt.Appendf(nil, "{\"seq\":%d,\n}", seq) }, 2) // a newline
	add(func(seq uint64) []byte { return chunk(seq, "again") }, 2)
	s := open(t)
	create(t, s, "s1")
	// In three batches, so that runs start and end at every kind of payload.
	for _, batch := range [][]Update{want[:7], want[7:125], want[125:]} {
		if err := s.AppendUpdates(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	for _, after := range []uint64{0, 5, 119, 130} {
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

// The runs of a streamed reply are stored compact: less than half the bytes of
// the params themselves.
func TestStreamedChunksAreStoredCompact(t *testing.T) {
	s := open(t)
	create(t, s, "s1")
	var batch []Update
	total := 0
	for seq := uint64(1); seq <= 500; seq++ {
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
	if stored > total/2 {
		t.Errorf("%d bytes of params stored in %d bytes", total, stored)
	}
}
