package jsonrpc

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"unicode/utf8"

	"github.com/segmentio/asm/ascii"
)

// scan is the classifier's fast path: one pass over the frame, with no decoder, that
// validates everything the decoder path does (RFC 8259 syntax, valid UTF-8, no
// duplicate member names at any depth, one value per frame) and fills f as read
// does. It reports false whenever it is not sure: a frame that is not an object, a
// syntax error, a member name with an escape, a \u escape of a surrogate, an object
// of more than maxScanMembers members or nesting deeper than maxScanDepth. Classify
// then takes the decoder path, which decides, and words the errors. So the fast path
// can only accept what the decoder accepts, and with the same fields
// (FuzzClassify checks both).
func (f *fields) scan(frame []byte) bool {
	if len(frame) > math.MaxInt32 {
		return false
	}
	s := scanner{b: frame}
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	if !s.object(0, f) {
		return false
	}
	s.space()
	if s.i != len(s.b) {
		return false
	}
	f.isObject = true
	return true
}

const (
	maxScanMembers = 24
	maxScanDepth   = 64
)

type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// object reads an object at s.i (which holds '{'). At depth 0 it records the
// envelope's members in top.
func (s *scanner) object(depth int, top *fields) bool {
	if depth >= maxScanDepth {
		return false
	}
	s.i++ // '{'
	// The names so far, as offsets into s.b: small to zero on every call.
	var names [maxScanMembers]struct{ start, end int32 }
	n := 0
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		if s.i >= len(s.b) || s.b[s.i] != '"' || n == maxScanMembers {
			return false
		}
		start := s.i
		escaped, ok := s.string()
		if !ok || escaped {
			return false // a name with escapes: the decoder compares it unescaped
		}
		name := s.b[start+1 : s.i-1]
		for _, prev := range names[:n] {
			if string(s.b[prev.start:prev.end]) == string(name) {
				return false // a duplicate: the decoder words the error
			}
		}
		names[n].start, names[n].end = int32(start+1), int32(s.i-1)
		n++
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		vstart := s.i
		if !s.value(depth + 1) {
			return false
		}
		if top != nil {
			v := s.b[vstart:s.i:s.i]
			switch string(name) {
			case "jsonrpc":
				top.version = v
			case "method":
				top.method = v
			case "id":
				top.id = v
			case "params":
				top.params = v
			case "result":
				top.result = v
			case "error":
				top.error = v
			}
		}
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			s.space()
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *scanner) array(depth int) bool {
	if depth >= maxScanDepth {
		return false
	}
	s.i++ // '['
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if !s.value(depth + 1) {
			return false
		}
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			s.space()
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *scanner) value(depth int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(depth, nil)
	case c == '[':
		return s.array(depth)
	case c == '"':
		_, ok := s.string()
		return ok
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *scanner) number() bool {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && '1' <= s.b[s.i] && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// string reads a string at s.i (which holds '"') and reports whether it held an
// escape. Plain ASCII goes eight bytes at a time.
func (s *scanner) string() (escaped, ok bool) {
	s.i++
	long := false
	for {
		for len(s.b)-s.i >= 32 { // long runs of plain ASCII (base64) 32 bytes at a time
			b := s.b[s.i : s.i+32]
			if special(binary.LittleEndian.Uint64(b))|special(binary.LittleEndian.Uint64(b[8:]))|
				special(binary.LittleEndian.Uint64(b[16:]))|special(binary.LittleEndian.Uint64(b[24:])) != 0 {
				break
			}
			s.i += 32
			if !long && len(s.b)-s.i >= longString {
				// A long string (an upload chunk's 1.4 MB of base64): try the
				// rest of it as printable ASCII in three vector passes.
				long = true
				if n := plainRest(s.b[s.i:]); n >= 0 {
					s.i += n + 1
					return escaped, true
				}
			}
		}
		for len(s.b)-s.i >= 8 {
			if m := special(binary.LittleEndian.Uint64(s.b[s.i:])); m != 0 {
				s.i += bits.TrailingZeros64(m) >> 3 // the first special byte
				break
			}
			s.i += 8
		}
		if s.i >= len(s.b) {
			return escaped, false
		}
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return escaped, true
		case c == '\\':
			escaped = true
			if !s.escape() {
				return escaped, false
			}
		case c < 0x20:
			return escaped, false
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, n := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && n <= 1 {
				return escaped, false
			}
			s.i += n
		}
	}
}

// escape reads one escape sequence at s.i (which holds '\').
func (s *scanner) escape() bool {
	if s.i+1 >= len(s.b) {
		return false
	}
	switch s.b[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return true
	case 'u':
		if len(s.b)-s.i < 6 {
			return false
		}
		var r rune
		for _, h := range s.b[s.i+2 : s.i+6] {
			switch {
			case '0' <= h && h <= '9':
				r = r<<4 | rune(h-'0')
			case 'a' <= h && h <= 'f':
				r = r<<4 | rune(h-'a'+10)
			case 'A' <= h && h <= 'F':
				r = r<<4 | rune(h-'A'+10)
			default:
				return false
			}
		}
		if 0xD800 <= r && r <= 0xDFFF {
			return false // surrogates: whether they pair up is the decoder's to judge
		}
		s.i += 6
		return true
	}
	return false
}

// longString is how much of a frame must follow 32 plain bytes of a string for
// string to try plainRest on the rest.
const longString = 256

// plainRest returns the index of the quote that ends b, a string's contents from
// some point on, when everything before it is printable ASCII other than a
// backslash, and -1 otherwise (string then reads on as usual). The quote is found
// with one memchr, and the bytes before it checked with one more and one vector
// pass (segmentio/asm), where string's eight bytes at a time ran at 2 GB/s.
func plainRest(b []byte) int {
	n := bytes.IndexByte(b, '"')
	if n < 0 || bytes.IndexByte(b[:n], '\\') >= 0 || !ascii.ValidPrint(b[:n]) {
		return -1
	}
	return n
}

// special marks, with its high bit, every byte of the eight in x (little endian)
// that is a quote, a backslash, a control character or not ASCII. Bytes above a
// marked one may be marked wrongly (a borrow carries); the lowest mark is exact.
func special(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote := x ^ (ones * '"')
	backslash := x ^ (ones * '\\')
	// A zero byte in v sets its high bit in (v - ones) &^ v; so does a byte below 0x20
	// in x - 0x20 repeated; x's own high bits mark non-ASCII bytes.
	return ((quote-ones)&^quote | (backslash-ones)&^backslash | (x-ones*0x20)&^x | x) & highs
}
