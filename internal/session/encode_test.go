package session

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/feed"
)

// A user_message made from the prompt's JSON string is the marshalled update when
// the string is spelled as Marshal spells it, and decodes to the text whatever its
// escapes.
func TestAUserMessageFromTheQuotedPromptMatchesMarshal(t *testing.T) {
	s := &Session{ID: "6f1c2a3e-1b2c"}
	for _, text := range []string{"", "go", "a\nb\t\"q\" \\ <&> \u2028 é 😀 \x01", "line 1 word word\nline 2"} {
		quoted, err := jsontext.AppendQuote(nil, text)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.userMessage("turn_1", 42, text, quoted)
		want, err2 := json.Marshal(&Update{SessionID: s.ID, TurnID: "turn_1", Seq: 42, Type: UserMessage, Text: text})
		if err != nil || err2 != nil || string(got) != string(want) {
			t.Errorf("user_message of %q:\n got %s %v\nwant %s %v", text, got, err, want, err2)
		}
	}
	got, err := s.userMessage("turn_1", 42, "é/\n", jsontext.Value(`"\u00e9\/\n"`))
	var u Update
	if err != nil || json.Unmarshal(got, &u) != nil || u.Text != "é/\n" || u.Seq != 42 || u.Type != UserMessage {
		t.Errorf("user_message %s (%v) decodes to %+v", got, err, u)
	}
}

// The feed encodes text chunks by hand as its Chunk marshals (its
// TestEncodeMatchesMarshal): that is the session's Update of a chunk, marshalled.
func TestAChunkOfTheFeedIsTheUpdateMarshalled(t *testing.T) {
	for _, text := range []string{"", "hello ", "a\nb\t\"q\" \\ <&> \u2028 é 😀 \x01"} {
		for _, turn := range []string{"", "turn_1"} {
			want, err := json.Marshal(&Update{SessionID: "s", TurnID: turn, Seq: 9, Type: AgentThoughtChunk, Text: text})
			got, err2 := json.Marshal(&feed.Chunk{SessionID: "s", TurnID: turn, Seq: 9, Type: AgentThoughtChunk, Text: text})
			if err != nil || err2 != nil || string(got) != string(want) {
				t.Errorf("chunk %q: feed %s %v, update %s %v", text, got, err2, want, err)
			}
		}
	}
}
