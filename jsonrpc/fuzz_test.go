package jsonrpc

import (
	"bytes"
	"encoding/binary"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"io"
	"math/bits"
	"strings"
	"testing"
)

// FuzzClassify checks the classifier's invariants on arbitrary frames: it never
// panics, decides exactly one outcome, replies only with ids that are valid JSON
// ids, and a request it accepts survives re-encoding unchanged.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}`,
		`{"jsonrpc":"2.0","result":null,"id":"zc-out-0"}`,
		`{"jsonrpc":"2.0","error":{"code":-1,"message":"x","data":[1]},"id":2}`,
		`[{"jsonrpc":"2.0","method":"status","id":1}]`,
		`{"jsonrpc":"2.0","method":"m","result":1,"id":7}`,
		`{"method":"status","id":"s"}`,
		"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	for _, s := range longStringCases() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		orig := bytes.Clone(frame)
		env := Classify(frame)
		checkOneSet(t, env)
		if !bytes.Equal(frame, orig) {
			t.Fatal("Classify modified its input")
		}
		switch {
		case env.Reject != nil:
			if !validID(jsontext.Value(env.Reject.ID)) {
				t.Fatalf("reject id %q is not a valid id", env.Reject.ID)
			}
			if c := env.Reject.Error.Code; c != CodeParseError && c != CodeInvalidRequest {
				t.Fatalf("reject code %d", c)
			}
			if env.Reject.Error.Code == CodeParseError && jsontext.Value(frame).IsValid() {
				t.Fatalf("valid JSON got a parse error: %s", env.Reject.Error.Message)
			}
		case env.Request != nil:
			r := env.Request
			msg, err := AppendRequest(nil, r.ID, r.Method, r.Params)
			if err != nil {
				t.Fatal(err)
			}
			again := Classify(msg)
			if again.Request == nil || again.Request.Method != r.Method ||
				!bytes.Equal(again.Request.ID, r.ID) || !bytes.Equal(again.Request.Params, r.Params) {
				t.Fatalf("request did not survive re-encoding: %s -> %s", frame, msg)
			}
		case env.Response != nil:
			if !jsontext.Value(frame).IsValid() {
				t.Fatal("invalid JSON accepted as a response")
			}
		}
	})
}

// FuzzNDJSON feeds arbitrary bytes, split into arbitrary reads, through the framer
// with a small line cap, and compares its frames with a plain split on newlines.
func FuzzNDJSON(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n\n  \n{\"b\":2}"), uint8(3))
	f.Add([]byte("0123456789abcdefXYZ\nshort\n"), uint8(1))
	f.Add([]byte("\r\n\t\n"), uint8(7))
	f.Fuzz(func(t *testing.T, input []byte, step uint8) {
		const max = 16
		fr := NewNDJSON(nopCloser{&chunkReader{data: input, step: int(step%9) + 1}})
		fr.MaxLine = max
		var want [][]byte
		tooLarge := false
		for _, line := range bytes.SplitAfter(input, []byte("\n")) {
			content := bytes.TrimSuffix(line, []byte("\n"))
			if len(content) >= max {
				tooLarge = true
				break
			}
			if len(content) > 0 && !isBlank(content) {
				want = append(want, content)
			}
		}
		for i := 0; ; i++ {
			got, err := fr.ReadFrame()
			if err != nil {
				var fe *FrameError
				switch {
				case errors.As(err, &fe):
					if !tooLarge || i != len(want) {
						t.Fatalf("frame_too_large after %d frames; want %d frames, tooLarge=%v", i, len(want), tooLarge)
					}
				case errors.Is(err, io.EOF):
					if tooLarge || i != len(want) {
						t.Fatalf("EOF after %d frames; want %d, tooLarge=%v", i, len(want), tooLarge)
					}
				default:
					t.Fatal(err)
				}
				return
			}
			if i >= len(want) || !bytes.Equal(got, want[i]) {
				t.Fatalf("frame %d = %q, want %q", i, got, want)
			}
			if cap(fr.buf) > max {
				t.Fatalf("buffer grew to %d bytes, past the %d-byte line cap", cap(fr.buf), max)
			}
		}
	})
}

type chunkReader struct {
	data []byte
	step int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.step, len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

type nopCloser struct{ io.Reader }

func (nopCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopCloser) Close() error                { return nil }

// scanCases are frames on the edges of the fast path: each must get the same
// verdict and fields from scan as from the decoder.
var scanCases = []string{
	`{"jsonrpc":"2.0","method":"status","id":1}`,
	` {"jsonrpc" : "2.0" , "method":"m", "params":{"a":[1,-2.5e+3,0.1E-2,true,false,null,{}],"b":"x\"\\\/\b\f\n\r\t\u00e9"},"id":"s"} `,
	`{"jsonrpc":"2.0","method":"m","params":{"a":1,"a":2},"id":1}`,      // a nested duplicate
	`{"jsonrpc":"2.0","method":"m","method":"n","id":1}`,                // a top-level duplicate
	`{"jsonrpc":"2.0","method":"m","params":{"\u0061":1,"a":2},"id":1}`, // a duplicate only once unescaped
	`{"jsonrpc":"2.0","method":"m","params":["\ud83d\ude00"],"id":1}`,   // a surrogate pair
	`{"jsonrpc":"2.0","method":"m","params":["\ud83d"],"id":1}`,         // a lone surrogate
	"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\",\"id\":1}",                // invalid UTF-8
	"{\"jsonrpc\":\"2.0\",\"method\":\"é€😀\",\"id\":1}",                 // valid multi-byte UTF-8
	"{\"jsonrpc\":\"2.0\",\"method\":\"a\x01b\",\"id\":1}",              // a raw control character
	`{"jsonrpc":"2.0","method":"m","id":01}`,                            // a leading zero
	`{"jsonrpc":"2.0","method":"m","id":1.}`,
	`{"jsonrpc":"2.0","method":"m","id":-}`,
	`{"jsonrpc":"2.0","method":"m","id":1e}`,
	`{"jsonrpc":"2.0","method":"m","id":1}{}`, // two values
	`{"jsonrpc":"2.0","method":"m","id":1,}`,  // a trailing comma
	`{"jsonrpc":"2.0","method":"m","params":[1,],"id":1}`,
	`{"jsonrpc":"2.0","method":"m","params":{"k":tru},"id":1}`,
	`{"jsonrpc":"2.0","result":{"deep":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},"id":"zc-out-1"}`,
	`{"jsonrpc":"2.0","method":"m","params":"` + strings.Repeat("QUJD", 100) + `","id":1}`,
	`[1,2]`,
	`{"jsonrpc":"2.0","method":"m","params":{"s":"unterminated}`,
}

// longStringCases are frames with a string long enough for plainRest, with what
// it must not take (or must) far into the string.
func longStringCases() []string {
	long := strings.Repeat("QUJD", 200)
	frame := func(s string) string { return `{"jsonrpc":"2.0","method":"m","params":{"d":"` + s + `"},"id":1}` }
	out := []string{frame(long), frame(long + long)}
	for _, odd := range []string{`\\`, `\"`, `\n`, `\u00e9`, `\x`, `\`, "\n", "\x01", "\x1f", "\x7f", "\xff", "é", "\xe9", "😀"} {
		out = append(out, frame(long+odd+long), frame(long+odd))
	}
	// Unterminated, and a quote right where the vector pass starts.
	return append(out, `{"jsonrpc":"2.0","method":"m","params":{"d":"`+long, frame(strings.Repeat("A", 32))+long)
}

func TestScanAgreesWithTheDecoder(t *testing.T) {
	for _, frame := range append(scanCases, longStringCases()...) {
		checkScan(t, []byte(frame))
	}
	// The fast path must take the ordinary frames, or it saves nothing.
	for _, i := range []int{0, 1, 8, 19} {
		var f fields
		if !f.scan([]byte(scanCases[i])) {
			t.Errorf("scan declined %.80q", scanCases[i])
		}
	}
	long := longStringCases()
	for _, frame := range []string{statusFrameText, promptFrameText, long[0], long[1], long[2], long[4], long[8], long[20], long[24], long[28]} {
		var f fields
		if !f.scan([]byte(frame)) {
			t.Errorf("scan declined %.80q", frame)
		}
	}
}

const statusFrameText = `{"jsonrpc":"2.0","method":"status","id":2}`

var promptFrameText = `{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"5f0c9a8e","prompt":"` +
	strings.Repeat(`Refactor the \"parser\" so that it reports line numbers.\n`, 70) + `"},"id":"req-17"}`

// checkScan fails when scan accepts a frame the decoder refuses, or fills other
// fields than the decoder does.
func checkScan(t *testing.T, frame []byte) {
	t.Helper()
	var fast, slow fields
	if !fast.scan(frame) {
		return // the decoder decides: nothing to compare
	}
	if err := slow.decode(frame); err != nil {
		t.Fatalf("scan accepted %q, which the decoder refuses: %v", frame, err)
	}
	for i, pair := range [][2]jsontext.Value{
		{fast.version, slow.version}, {fast.method, slow.method}, {fast.id, slow.id},
		{fast.params, slow.params}, {fast.result, slow.result}, {fast.error, slow.error},
	} {
		if !bytes.Equal(pair[0], pair[1]) || (pair[0] == nil) != (pair[1] == nil) {
			t.Fatalf("field %d of %q: scan %q, decoder %q", i, frame, pair[0], pair[1])
		}
	}
	if fast.isObject != slow.isObject {
		t.Fatalf("isObject of %q: scan %v, decoder %v", frame, fast.isObject, slow.isObject)
	}
}

// FuzzScan checks the fast path against the decoder on arbitrary frames.
func FuzzScan(f *testing.F) {
	for _, s := range scanCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) { checkScan(t, frame) })
}

func TestSpecialMarksTheFirstSpecialByteExactly(t *testing.T) {
	isSpecial := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 || c >= 0x80 }
	for pos := range 8 {
		for c := range 256 {
			for _, fill := range []byte{'a', ' ', 0x7f} {
				var w [8]byte
				for i := range w {
					w[i] = fill
				}
				w[pos] = byte(c)
				for i := pos + 1; i < 8; i++ {
					w[i] = byte(c) // what follows may be special too
				}
				m := special(binary.LittleEndian.Uint64(w[:]))
				if !isSpecial(byte(c)) {
					if m != 0 {
						t.Fatalf("%q: marked %x, nothing is special", w, m)
					}
					continue
				}
				if got := bits.TrailingZeros64(m) >> 3; got != pos {
					t.Fatalf("%q: first mark at %d, want %d", w, got, pos)
				}
			}
		}
	}
}

// FuzzStringMember: on any params DecodeParams accepts, the string StringMember
// finds is the text DecodeParams decoded, and it finds one whenever there is one.
func FuzzStringMember(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hi"}`,
		`{"sessionId":"s","prompt":"a\nb\u00e9\/\"c\\","attachments":[{"prompt":"x"}]}`,
		`{"x":{"prompt":"inner","y":[1,"]",{"}":"{"}]},"prompt":"outer"}`,
		`{"prompt":null}`, `{"prompt":7}`, `{"pr\u006fmpt":"x"}`, `{}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, params string) {
		var p struct {
			Prompt *string `json:"prompt"`
		}
		if DecodeParams(jsontext.Value(params), &p) != nil {
			return
		}
		raw, ok := StringMember(jsontext.Value(params), "prompt")
		if !ok {
			// Only a name spelled with an escape hides a string prompt.
			if p.Prompt != nil && !strings.Contains(params, `\`) {
				t.Fatalf("no prompt found in %s, which has %q", params, *p.Prompt)
			}
			return
		}
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			t.Fatalf("found %s in %s: %v", raw, params, err)
		}
		if p.Prompt == nil || text != *p.Prompt {
			t.Fatalf("found %q in %s; DecodeParams decoded %v", text, params, p.Prompt)
		}
	})
}
