package upload

import (
	"bytes"
	"crypto/sha256"
	"testing"
)

// Whether the kernel takes MADV_POPULATE_WRITE (the buffer's pages made resident
// by the spool while chunks arrive) or not (all of them mapped at once), a spooled
// upload ends with exactly the bytes sent.
func TestStagedUploadsHoldTheirBytesWithAndWithoutPopulateWrite(t *testing.T) {
	defer populateWrite.Store(populateWrite.Load())
	for _, pw := range []bool{true, false} {
		populateWrite.Store(pw)
		ws := t.TempDir()
		st := NewStage[wsBound](Options{})
		data := random(5*ChunkBytes + 11)
		b, err := st.Begin("c", wsBound{ws}, int64(len(data)), "", "")
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(data); off += ChunkBytes {
			spoolChunk(t, st, b.UploadID, off, data[off:min(off+ChunkBytes, len(data))])
		}
		up, err := st.Take("c", b.UploadID)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(up.Payload.Data, data) || up.Payload.Sum != sha256.Sum256(data) {
			t.Errorf("populate_write %v: the staged bytes differ from those sent", pw)
		}
		p, err := up.Payload.Prepare(ws)
		if err != nil {
			t.Fatal(err)
		}
		if _, got := onlyTemp(t, ws); !bytes.Equal(got, data) {
			t.Errorf("populate_write %v: the spooled file differs from the bytes sent", pw)
		}
		p.Discard()
		up.Release()
	}
}
