package feed

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"slices"
	"strconv"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// Chunk is the params of a text chunk, as the feed encodes them by hand: the
// members of a chunk, in the order the session's Update has them.
type Chunk struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId,omitzero"`
	Seq       uint64 `json:"seq"`
	Type      string `json:"type"`
	Text      string `json:"text"`
}

// encoder writes the text chunks of one session, which a streamed reply sends by
// the thousand, by hand, byte for byte what json.Marshal writes of the session's
// Update (TestEncodeMatchesMarshal), after a prefix (sessionId, turnId and the
// "seq" key) kept for as long as the turn lasts. The other types go through
// json.Marshal (Feed.Publish).
type encoder struct {
	prefix []byte       // {"sessionId":…,"turnId":…,"seq":
	turn   string       // the turnId prefix was made for
	shape  *store.Shape // of the chunks of type typ after prefix, or nil
	typ    string       // the type of shape
}

// chunk appends the JSON of a text chunk to b and returns it (reallocated when b
// has no room), with its Shape for the replay log when it was encoded by hand (the
// core is the quoted text), else nil.
func (e *encoder) chunk(b []byte, sessionID, turnID string, seq uint64, typ, text string) ([]byte, *store.Shape, error) {
	if e.prefix == nil || e.turn != turnID || !e.prefixOf(sessionID) {
		e.shape = nil
		p := append(e.prefix[:0], `{"sessionId":`...)
		p, err := jsontext.AppendQuote(p, sessionID)
		if err != nil {
			return marshalChunk(sessionID, turnID, seq, typ, text) // invalid UTF-8: let Marshal decide
		}
		if turnID != "" {
			p = append(p, `,"turnId":`...)
			if p, err = jsontext.AppendQuote(p, turnID); err != nil {
				return marshalChunk(sessionID, turnID, seq, typ, text)
			}
		}
		e.prefix, e.turn = append(p, `,"seq":`...), turnID
	}
	if e.shape == nil || e.typ != typ {
		// Its parts are copies: the prefix's buffer is written again for the next
		// turn, while the replay log may still hold updates of this shape.
		e.shape, e.typ = &store.Shape{
			Prefix: slices.Clone(e.prefix),
			Middle: []byte(`,"type":"` + typ + `","text":"`),
			Suffix: []byte(`"}`),
		}, typ
	}
	b = append(b, e.prefix...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"type":"`...)
	b = append(b, typ...)
	b = append(b, `","text":`...)
	if plainASCII(text) { // a word of a streamed reply, mostly: nothing to escape
		b = append(append(append(b, '"'), text...), '"', '}')
		return b, e.shape, nil
	}
	b, err := jsontext.AppendQuote(b, text)
	if err != nil {
		return marshalChunk(sessionID, turnID, seq, typ, text)
	}
	return append(b, '}'), e.shape, nil
}

// plainASCII reports whether s is printable ASCII with no quote or backslash: JSON
// quotes it as it is. The general quoting cost a chunk of a few letters as much as
// the rest of its encoding.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// marshalChunk is json.Marshal of a text chunk. It is a function of its own so
// that the chunk's text is copied to the heap only here: the chunks that encode by
// hand are published from the stack.
//
//go:noinline
func marshalChunk(sessionID, turnID string, seq uint64, typ, text string) ([]byte, *store.Shape, error) {
	b, err := json.Marshal(&Chunk{SessionID: sessionID, TurnID: turnID, Seq: seq, Type: typ, Text: text})
	return b, nil, err
}

// prefixOf reports whether the kept prefix is the one of session id: it starts
// with id quoted, which a plain id (the daemon's own) always is.
func (e *encoder) prefixOf(id string) bool {
	const key = len(`{"sessionId":"`)
	return len(e.prefix) > key+len(id) && string(e.prefix[key:key+len(id)]) == id && e.prefix[key+len(id)] == '"'
}
