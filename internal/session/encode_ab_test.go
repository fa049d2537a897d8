package session

import (
	"encoding/json/v2"
	"testing"
)

func TestEncodeMatchesMarshal(t *testing.T) {
	for _, text := range []string{"", "hello ", "a\nb\t\"q\" \\ <&> \u2028 é 😀 \x01", "line 1 word word\n"} {
		for _, typ := range []string{AgentMessageChunk, AgentThoughtChunk} {
			for _, turn := range []string{"", "turn_0123"} {
				u := &Update{SessionID: "6f1c2a3e-1b2c", TurnID: turn, Seq: 12345, Type: typ, Text: &text}
				var e encoder
				got, err := e.chunk(nil, u.SessionID, u.TurnID, u.Seq, u.Type, *u.Text)
				want, err2 := json.Marshal(u)
				if err != nil || err2 != nil || string(got) != string(want) {
					t.Errorf("encode %q:\n got %s %v\nwant %s %v", text, got, err, want, err2)
				}
			}
		}
	}
	// One encoder across sessions and turns, as a session's is across its turns:
	// the prefix it keeps always follows the update.
	var e encoder
	buf := make([]byte, 0, 4096)
	for _, sid := range []string{"s1", "s1", "s10", "s", "s1"} {
		for _, turn := range []string{"turn_1", "turn_1", "", "turn_2"} {
			text := sid + turn
			u := &Update{SessionID: sid, TurnID: turn, Seq: 7, Type: AgentMessageChunk, Text: &text}
			got, err := e.chunk(buf[len(buf):], u.SessionID, u.TurnID, u.Seq, u.Type, *u.Text)
			want, err2 := json.Marshal(u)
			if err != nil || err2 != nil || string(got) != string(want) {
				t.Errorf("encoder, session %q turn %q:\n got %s %v\nwant %s %v", sid, turn, got, err, want, err2)
			}
			buf = buf[:len(buf)+len(got)]
		}
	}
	// Every byte, alone and in a word: the plain ASCII ones take the short way.
	for c := range 256 {
		for _, text := range []string{string(rune(c)), string([]byte{byte(c)}), "wo" + string([]byte{byte(c)}) + "rd "} {
			u := &Update{SessionID: "s", Seq: 3, Type: AgentMessageChunk, Text: &text}
			var e encoder
			got, err := e.chunk(nil, u.SessionID, u.TurnID, u.Seq, u.Type, *u.Text)
			want, err2 := json.Marshal(u)
			if string(got) != string(want) || (err == nil) != (err2 == nil) {
				t.Errorf("byte %#x in %q: got %s %v, want %s %v", c, text, got, err, want, err2)
			}
		}
	}
	bad := "\xff"
	u := &Update{SessionID: "s", Seq: 1, Type: AgentMessageChunk, Text: &bad}
	var e2 encoder
	got, err := e2.chunk(nil, u.SessionID, u.TurnID, u.Seq, u.Type, *u.Text)
	want, err2 := json.Marshal(u)
	if string(got) != string(want) || (err == nil) != (err2 == nil) {
		t.Errorf("invalid UTF-8: got %s %v, want %s %v", got, err, want, err2)
	}
}

func BenchmarkEncodeChunk(b *testing.B) {
	text := "word "
	u := &Update{SessionID: "6f1c2a3e-1b2c-4d5e-8f90-a1b2c3d4e5f6", TurnID: "turn_0123456789abcdef", Seq: 12345, Type: AgentMessageChunk, Text: &text}
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			json.Marshal(u)
		}
	})
	b.Run("encode", func(b *testing.B) {
		var e encoder
		buf := make([]byte, 0, 256)
		for b.Loop() {
			buf, _ = e.chunk(buf[:0], u.SessionID, u.TurnID, u.Seq, u.Type, *u.Text)
		}
	})
}
