package upload

import (
	"encoding/base64"
	"fmt"
	"hash"

	simd "github.com/segmentio/asm/base64"
)

// encodingOf is the encoding of a data_b64 of n characters: standard base64 with
// padding optional, so a length that is not a multiple of four is unpadded.
func encodingOf(n int) *base64.Encoding {
	if n%4 != 0 {
		return base64.RawStdEncoding
	}
	return base64.StdEncoding
}

// checkDecodedLen refuses data_b64 of n characters that must decode to more than
// limit bytes, before anything is decoded.
func checkDecodedLen(enc *base64.Encoding, n int, limit int64) error {
	if int64(enc.DecodedLen(n)) > limit+2 { // DecodedLen may overcount by the padding
		return dataTooLarge(limit)
	}
	return nil
}

func dataTooLarge(limit int64) error {
	return refused(ReasonTooLarge, fmt.Sprintf("the data is larger than %d bytes", limit), "limit_bytes", limit)
}

// Decode decodes a data_b64 param (standard base64, padding optional) into a new
// buffer, refusing more than limit decoded bytes before decoding.
func Decode(b64 []byte, limit int64) ([]byte, error) {
	enc := encodingOf(len(b64))
	if err := checkDecodedLen(enc, len(b64), limit); err != nil {
		return nil, err
	}
	return decode(enc, b64, limit)
}

func decode(enc *base64.Encoding, b64 []byte, limit int64) ([]byte, error) {
	out := make([]byte, enc.DecodedLen(len(b64)))
	n, err := enc.Decode(out, b64)
	if err != nil {
		return nil, refused(ReasonBadBase64, "data_b64 is not valid base64: "+err.Error())
	}
	if int64(n) > limit {
		return nil, dataTooLarge(limit)
	}
	return out[:n], nil
}

// exactDecodedLen is how many bytes b64 decodes to if it is valid; false when its
// length alone says it is not.
func exactDecodedLen(enc *base64.Encoding, b64 []byte) (int64, bool) {
	n := len(b64)
	if enc == base64.RawStdEncoding {
		if n%4 == 1 {
			return 0, false
		}
		return int64(enc.DecodedLen(n)), true
	}
	d := n / 4 * 3
	if n > 0 && b64[n-1] == '=' {
		d--
		if b64[n-2] == '=' {
			d--
		}
	}
	return int64(d), true
}

// piece is how many characters decodeHashed decodes at a time (a multiple of four):
// small enough that the decoded bytes are still in the cache when they are hashed.
const piece = 64 << 10

// decodeHashed decodes src into dst, which has room for enc.DecodedLen(len(src))
// bytes, writing each decoded piece to h (unless nil) as it goes, and reports whether all of src
// decoded to exactly want bytes. On false, h has taken part of the bytes: the
// caller restores it and decodes again the slow way, which gives the exact error
// (or succeeds, for input a piece boundary cannot split, such as line breaks).
func decodeHashed(enc *base64.Encoding, dst, src []byte, want int64, h hash.Hash) bool {
	fast := simd.StdEncoding
	if enc == base64.RawStdEncoding {
		fast = simd.RawStdEncoding
	}
	w := 0
	for len(src) > 0 {
		p := src[:min(len(src), piece)]
		m, err := fast.Decode(dst[w:], p)
		// Short of a whole piece's bytes before the end: padding, or a line break.
		if err != nil || len(p) < len(src) && m != len(p)/4*3 {
			return false
		}
		if h != nil {
			h.Write(dst[w : w+m])
		}
		w += m
		src = src[len(p):]
	}
	return int64(w) == want
}
