package upload

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

type testBound struct{ s string }

func (b testBound) MetadataBytes() int { return len(b.s) }
func (b testBound) Workspace() string  { return "" } // nothing spooled: spool_test.go

func random(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func mustChunk(t *testing.T, st *Stage[testBound], id string, off int, data []byte) {
	t.Helper()
	n, err := st.Chunk("c", id, int64(off), b64(data))
	if err != nil || n != int64(off+len(data)) {
		t.Fatalf("chunk at %d: received %d, %v", off, n, err)
	}
}

func take(t *testing.T, st *Stage[testBound], id string, want []byte) {
	t.Helper()
	up, err := st.Take("c", id)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Release()
	if !bytes.Equal(up.Payload.Data, want) || up.Payload.Sum != sha256.Sum256(want) {
		t.Fatalf("taken %d bytes (sum %x), want the %d sent (sum %x)", len(up.Payload.Data), up.Payload.Sum, len(want), sha256.Sum256(want))
	}
}

// Chunks are decoded in place in pieces and hashed as they go; every shape of
// chunk (many pieces, padded, unpadded, a resend, a refused one in between) ends
// with exactly the bytes sent and their hash.
func TestChunksDecodeInPlaceAndHashAsTheyGo(t *testing.T) {
	st := NewStage[testBound](Options{})
	data := random(3*ChunkBytes + 1) // ends in a padded chunk
	b, err := st.Begin("c", testBound{"s"}, int64(len(data)), "", "")
	if err != nil {
		t.Fatal(err)
	}
	mustChunk(t, st, b.UploadID, 0, data[:ChunkBytes])
	// A resend of an accepted chunk is acknowledged unchanged; one with other bytes is not.
	if n, err := st.Chunk("c", b.UploadID, 0, b64(data[:ChunkBytes])); err != nil || n != ChunkBytes {
		t.Fatalf("resend: %d, %v", n, err)
	}
	other := bytes.Clone(data[:ChunkBytes])
	other[piece] ^= 1
	if _, err := st.Chunk("c", b.UploadID, 0, b64(other)); reasonOf(t, err) != ReasonBadOffset {
		t.Fatalf("a changed resend: %v", err)
	}
	// Invalid base64 deep inside a chunk, after whole pieces were decoded and hashed:
	// refused, and neither the count nor the hash keeps any of it.
	bad := b64(data[ChunkBytes : 2*ChunkBytes])
	bad[3*piece+5] = '@'
	if _, err := st.Chunk("c", b.UploadID, ChunkBytes, bad); reasonOf(t, err) != ReasonBadBase64 ||
		!strings.Contains(err.Error(), "illegal base64 data at input byte 196613") {
		t.Fatalf("bad base64 at byte %d: %v", 3*piece+5, err)
	}
	// Unpadded is accepted too (this chunk's length is a multiple of 3: no padding
	// either way, so use one that is not).
	raw := []byte(base64.RawStdEncoding.EncodeToString(data[ChunkBytes : 2*ChunkBytes+2]))
	if n, err := st.Chunk("c", b.UploadID, ChunkBytes, raw); err != nil || n != 2*ChunkBytes+2 {
		t.Fatalf("unpadded: %d, %v", n, err)
	}
	// Line breaks, which only an escaped JSON string can carry, are skipped. (They
	// count towards the length that picks padded or unpadded, as they always did.)
	wrapped := b64(data[2*ChunkBytes+2 : 3*ChunkBytes])
	wrapped = append(wrapped[:1000:1000], append([]byte("\r\n\r\n"), wrapped[1000:]...)...)
	mustChunk(t, st, b.UploadID, 2*ChunkBytes+2, data[2*ChunkBytes+2:3*ChunkBytes])
	// (the same bytes again, wrapped: an exact resend)
	if n, err := st.Chunk("c", b.UploadID, 2*ChunkBytes+2, wrapped); err != nil || n != 3*ChunkBytes {
		t.Fatalf("wrapped resend: %d, %v", n, err)
	}
	// Past the declared size: refused with the figures.
	if _, err := st.Chunk("c", b.UploadID, 3*ChunkBytes, b64(data[3*ChunkBytes-1:])); reasonOf(t, err) != ReasonTooLarge {
		t.Fatalf("past the size: %v", err)
	}
	mustChunk(t, st, b.UploadID, 3*ChunkBytes, data[3*ChunkBytes:])
	take(t, st, b.UploadID, data)
	if n, used := st.Staged(); n != 0 || used != 0 {
		t.Errorf("after Release: %d staged, %d charged", n, used)
	}
}

// A chunk with line breaks cannot be split into pieces at multiples of four
// characters: it is decoded whole instead, and hashed once.
func TestAWrappedChunkDecodesWhole(t *testing.T) {
	st := NewStage[testBound](Options{})
	data := random(200_001)
	b, _ := st.Begin("c", testBound{"s"}, int64(len(data)), "", "")
	enc := b64(data[:150_000])
	var wrapped []byte
	for len(enc) > 76 {
		wrapped = append(append(wrapped, enc[:76]...), '\n')
		enc = enc[76:]
	}
	wrapped = append(wrapped, enc...)
	for len(wrapped)%4 != 0 {
		wrapped = append(wrapped, '\n')
	}
	if n, err := st.Chunk("c", b.UploadID, 0, wrapped); err != nil || n != 150_000 {
		t.Fatalf("wrapped: %d, %v", n, err)
	}
	mustChunk(t, st, b.UploadID, 150_000, data[150_000:])
	take(t, st, b.UploadID, data)
}

// The in-place path of a chunk allocates nothing per chunk but the slot that
// remembers where it started.
func TestAChunkDecodesWithoutAllocating(t *testing.T) {
	st := NewStage[testBound](Options{})
	const chunks = 8
	b, _ := st.Begin("c", testBound{"s"}, chunks*ChunkBytes, "", "")
	enc := b64(random(ChunkBytes))
	mustChunk(t, st, b.UploadID, 0, nil) // the buffer is allocated at the first chunk
	if allocs := chunkAllocs(t, st, b.UploadID, enc, chunks-1); allocs > 1 {
		t.Errorf("%.1f allocations per 1 MiB chunk, want at most 1", allocs)
	}
}

// chunkAllocs is the allocations per chunk of n chunks of enc, one after the other
// from offset 0, into the upload id of connection "c".
func chunkAllocs[B Bound](t *testing.T, st *Stage[B], id string, enc []byte, n int) float64 {
	t.Helper()
	off := int64(0)
	return testing.AllocsPerRun(n, func() {
		next, err := st.Chunk("c", id, off, enc)
		if err != nil {
			t.Fatal(err)
		}
		off = next
	})
}

// BenchmarkChunk: one 1 MiB chunk's data_b64 decoded into the staging buffer and
// hashed, as file/upload/chunk does once the params are read.
func BenchmarkChunk(b *testing.B) {
	st := NewStage[testBound](Options{})
	enc := b64(random(ChunkBytes))
	const chunks = 10
	var id string
	off := int64(chunks)
	b.SetBytes(ChunkBytes)
	b.ReportAllocs()
	for b.Loop() {
		if off == chunks*ChunkBytes || off == chunks {
			if id != "" {
				up, _ := st.Take("c", id)
				up.Release()
			}
			begun, _ := st.Begin("c", testBound{"s"}, chunks*ChunkBytes, "", "")
			id, off = begun.UploadID, 0
		}
		n, err := st.Chunk("c", id, off, enc)
		if err != nil {
			b.Fatal(err)
		}
		off = n
	}
}

// A connection that closes while its chunks are being decoded: the buffers
// (mapped memory, unmapped when dropped) are freed only once no chunk uses them.
func TestDiscardWhileChunksAreDecodedFreesNothingInUse(t *testing.T) {
	st := NewStage[testBound](Options{})
	enc := b64(random(ChunkBytes))
	for range 20 {
		b, err := st.Begin("c", testBound{"s"}, 4*ChunkBytes, "", "")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for off := int64(0); off < 4*ChunkBytes; {
				n, err := st.Chunk("c", b.UploadID, off, enc)
				if err != nil {
					if r, ok := err.(*Refusal); !ok || r.Reason != ReasonUnknownUpload {
						t.Error(err) // not Fatal: this is not the test's goroutine
					}
					return
				}
				off = n
			}
		}()
		st.Discard("c")
		<-done
	}
	if n, used := st.Staged(); n != 0 || used != 0 {
		t.Errorf("%d staged, %d charged after the discards", n, used)
	}
}
