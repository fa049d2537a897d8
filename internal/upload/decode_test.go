package upload

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"testing"
)

// FuzzDecodeHashedAgreesWithTheStandardDecoder: the fast decoder (AVX2, in pieces,
// hashing as it goes) accepts only what encoding/base64 accepts, decodes it to the
// same bytes and hashes exactly those; whatever it refuses, the caller decodes
// again with encoding/base64. Inputs span several pieces, and one byte anywhere
// (at a piece boundary too) is replaced.
func FuzzDecodeHashedAgreesWithTheStandardDecoder(f *testing.F) {
	f.Add([]byte("hello, world"), uint32(0), byte('A'), uint8(0), false)
	f.Add([]byte{0xff, 0xfe}, uint32(piece-1), byte('='), uint8(3), false)
	f.Add([]byte("x"), uint32(piece), byte('\n'), uint8(2), true)
	f.Add([]byte("abc"), uint32(7), byte('-'), uint8(1), true)
	f.Fuzz(func(t *testing.T, data []byte, pos uint32, c byte, size uint8, raw bool) {
		// Up to five pieces of characters.
		n := int(size)*(piece/64) + len(data)
		plain := bytes.Repeat(append(data, 1), n/(len(data)+1)+1)[:n]
		std := base64.StdEncoding
		if raw {
			std = base64.RawStdEncoding
		}
		src := []byte(std.EncodeToString(plain))
		if len(src) > 0 {
			src[int(pos)%len(src)] = c
		}
		enc := encodingOf(len(src))
		want, err := base64.StdEncoding.DecodeString(string(src))
		if enc == base64.RawStdEncoding {
			want, err = base64.RawStdEncoding.DecodeString(string(src))
		}
		n64, ok := exactDecodedLen(enc, src)
		if !ok {
			if err == nil {
				t.Fatalf("exactDecodedLen refused %d characters the standard decoder takes", len(src))
			}
			return
		}
		dst := make([]byte, enc.DecodedLen(len(src)))
		h := sha256.New()
		if !decodeHashed(enc, dst, src, n64, h) {
			return // decoded again the slow way by the caller
		}
		if err != nil {
			t.Fatalf("decodeHashed took %q, which the standard decoder refuses: %v", src, err)
		}
		if !bytes.Equal(dst[:n64], want) || !bytes.Equal(h.Sum(nil), sum(want)) {
			t.Fatalf("decodeHashed gave %d bytes (or their hash) unlike the standard decoder's %d", n64, len(want))
		}
	})
}

func sum(b []byte) []byte { s := sha256.Sum256(b); return s[:] }
