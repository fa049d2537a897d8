package feed

import (
	"bytes"
	"encoding/json/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

func TestEncodeMatchesMarshal(t *testing.T) {
	for _, text := range []string{"", "hello ", "a\nb\t\"q\" \\ <&> \u2028 é 😀 \x01", "line 1 word word\n"} {
		for _, typ := range []string{"agent_message_chunk", "agent_thought_chunk"} {
			for _, turn := range []string{"", "turn_0123"} {
				u := &Chunk{SessionID: "6f1c2a3e-1b2c", TurnID: turn, Seq: 12345, Type: typ, Text: text}
				var e encoder
				got, shape, err := e.chunk(nil, u.SessionID, u.TurnID, u.Seq, u.Type, u.Text)
				checkShape(t, got, u.Seq, shape)
				want, err2 := json.Marshal(u)
				if err != nil || err2 != nil || string(got) != string(want) {
					t.Errorf("encode %q:\n got %s %v\nwant %s %v", text, got, err, want, err2)
				}
			}
		}
	}
	// One encoder across sessions and turns, as a session's is across its turns:
	// the prefix it keeps always follows the update.
	// Its shapes stay true of the chunks made with them after it moved on.
	var e encoder
	buf := make([]byte, 0, 4096)
	type made struct {
		b     []byte
		shape *store.Shape
	}
	var chunks []made
	for _, sid := range []string{"s1", "s1", "s10", "s", "s1"} {
		for _, turn := range []string{"turn_1", "turn_1", "", "turn_2"} {
			text := sid + turn
			u := &Chunk{SessionID: sid, TurnID: turn, Seq: 7, Type: "agent_message_chunk", Text: text}
			got, shape, err := e.chunk(buf[len(buf):], u.SessionID, u.TurnID, u.Seq, u.Type, u.Text)
			chunks = append(chunks, made{got, shape})
			want, err2 := json.Marshal(u)
			if err != nil || err2 != nil || string(got) != string(want) {
				t.Errorf("encoder, session %q turn %q:\n got %s %v\nwant %s %v", sid, turn, got, err, want, err2)
			}
			buf = buf[:len(buf)+len(got)]
		}
	}
	for _, c := range chunks {
		checkShape(t, c.b, 7, c.shape)
	}
	// Every byte, alone and in a word: the plain ASCII ones take the short way.
	for c := range 256 {
		for _, text := range []string{string(rune(c)), string([]byte{byte(c)}), "wo" + string([]byte{byte(c)}) + "rd "} {
			u := &Chunk{SessionID: "s", Seq: 3, Type: "agent_message_chunk", Text: text}
			var e encoder
			got, shape, err := e.chunk(nil, u.SessionID, u.TurnID, u.Seq, u.Type, u.Text)
			checkShape(t, got, u.Seq, shape)
			want, err2 := json.Marshal(u)
			if string(got) != string(want) || (err == nil) != (err2 == nil) {
				t.Errorf("byte %#x in %q: got %s %v, want %s %v", c, text, got, err, want, err2)
			}
		}
	}
	bad := "\xff"
	u := &Chunk{SessionID: "s", Seq: 1, Type: "agent_message_chunk", Text: bad}
	var e2 encoder
	got, shape, err := e2.chunk(nil, u.SessionID, u.TurnID, u.Seq, u.Type, u.Text)
	checkShape(t, got, u.Seq, shape)
	want, err2 := json.Marshal(u)
	if string(got) != string(want) || (err == nil) != (err2 == nil) {
		t.Errorf("invalid UTF-8: got %s %v, want %s %v", got, err, want, err2)
	}
}

// checkShape fails t unless the chunk b of seq is made as shape says (when it
// names one): its prefix, seq, middle, a core and its suffix, no newline in any.
func checkShape(t *testing.T, b []byte, seq uint64, shape *store.Shape) {
	t.Helper()
	if shape == nil {
		return
	}
	head := strconv.AppendUint(slices.Clone(shape.Prefix), seq, 10)
	head = append(head, shape.Middle...)
	if !bytes.HasPrefix(b, head) || !bytes.HasSuffix(b, shape.Suffix) || len(b) < len(head)+len(shape.Suffix) || bytes.IndexByte(b, '\n') >= 0 {
		t.Errorf("chunk %s is not of its shape %q %q %q", b, shape.Prefix, shape.Middle, shape.Suffix)
	}
}

// One shape serves the chunks of a type for as long as the turn lasts: the
// replay log stores a run of them by its parts.
func TestChunksOfATurnShareAShape(t *testing.T) {
	var e encoder
	_, a, _ := e.chunk(nil, "s", "turn_1", 1, "agent_message_chunk", "one ")
	_, b, _ := e.chunk(nil, "s", "turn_1", 2, "agent_message_chunk", "tab\t \"q\" é ")
	_, c, _ := e.chunk(nil, "s", "turn_1", 3, "agent_thought_chunk", "hm")
	_, d, _ := e.chunk(nil, "s", "turn_2", 4, "agent_thought_chunk", "hm")
	if a == nil || a != b {
		t.Errorf("two chunks of a turn: shapes %p and %p", a, b)
	}
	if c == a || d == c || c == nil || d == nil {
		t.Errorf("another type or turn kept the shape: %p %p %p", a, c, d)
	}
}

func BenchmarkEncodeChunk(b *testing.B) {
	text := "word "
	u := &Chunk{SessionID: "6f1c2a3e-1b2c-4d5e-8f90-a1b2c3d4e5f6", TurnID: "turn_0123456789abcdef", Seq: 12345, Type: "agent_message_chunk", Text: text}
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			json.Marshal(u)
		}
	})
	b.Run("encode", func(b *testing.B) {
		var e encoder
		buf := make([]byte, 0, 256)
		for b.Loop() {
			buf, _, _ = e.chunk(buf[:0], u.SessionID, u.TurnID, u.Seq, u.Type, u.Text)
		}
	})
}
