package upload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// wsBound is bound to a workspace: its uploads of more than one chunk are spooled.
type wsBound struct{ ws string }

func (b wsBound) MetadataBytes() int { return len(b.ws) }
func (b wsBound) Workspace() string  { return b.ws }

// temps returns the temporary files in ws's uploads directory, each with its bytes
// (none when there is no such directory).
func temps(t *testing.T, ws string) map[string][]byte {
	t.Helper()
	if fi, err := os.Stat(filepath.Join(ws, Dir)); errors.Is(err, os.ErrNotExist) || err == nil && !fi.IsDir() {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(ws, Dir))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if tempName.MatchString(e.Name()) {
			b, err := os.ReadFile(filepath.Join(ws, Dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = b
		}
	}
	return out
}

// onlyTemp returns the one temporary file in ws's uploads directory.
func onlyTemp(t *testing.T, ws string) (string, []byte) {
	t.Helper()
	got := temps(t, ws)
	if len(got) != 1 {
		t.Fatalf("uploads/ holds %d temporary files, want 1", len(got))
	}
	for name, b := range got {
		return name, b
	}
	return "", nil
}

func spoolChunk(t *testing.T, st *Stage[wsBound], id string, off int, data []byte) {
	t.Helper()
	n, err := st.Chunk("c", id, int64(off), b64(data))
	if err != nil || n != int64(off+len(data)) {
		t.Fatalf("chunk at %d: received %d, %v", off, n, err)
	}
}

// An upload of more than one chunk is hashed and written to its temporary file as
// its chunks arrive; every kind of chunk the stage takes (a resend, refusals, one
// decoded the slow way) leaves the file holding exactly the accepted bytes, and the
// commit's Prepare hands over that very file, synced, rather than writing another.
func TestAChunkedUploadIsWrittenToItsFileAsItsChunksArrive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ws := t.TempDir()
		st := NewStage[wsBound](Options{})
		defer st.Discard("c") // a failed test leaves no spool blocked in the bubble
		data := random(3*ChunkBytes + 5)
		sum := sha256.Sum256(data)
		b, err := st.Begin("c", wsBound{ws}, int64(len(data)), "a.bin", hex.EncodeToString(sum[:]))
		if err != nil {
			t.Fatal(err)
		}
		spoolChunk(t, st, b.UploadID, 0, data[:ChunkBytes])
		synctest.Wait() // the spool has written what it was given
		name, got := onlyTemp(t, ws)
		if !bytes.Equal(got, data[:ChunkBytes]) {
			t.Fatalf("after the first chunk the file holds %d bytes, want the chunk's %d", len(got), ChunkBytes)
		}

		// An exact resend is acknowledged and writes nothing; a changed one and
		// bad base64 are refused and write nothing either.
		if n, err := st.Chunk("c", b.UploadID, 0, b64(data[:ChunkBytes])); err != nil || n != ChunkBytes {
			t.Fatalf("resend: %d, %v", n, err)
		}
		changed := bytes.Clone(data[:ChunkBytes])
		changed[7] ^= 1
		if _, err := st.Chunk("c", b.UploadID, 0, b64(changed)); reasonOf(t, err) != ReasonBadOffset {
			t.Fatalf("a changed resend: %v", err)
		}
		bad := b64(data[ChunkBytes : 2*ChunkBytes])
		bad[2*piece+1] = '@'
		if _, err := st.Chunk("c", b.UploadID, ChunkBytes, bad); reasonOf(t, err) != ReasonBadBase64 {
			t.Fatalf("bad base64: %v", err)
		}
		// A chunk with line breaks is decoded whole, the slow way.
		wrapped := b64(data[ChunkBytes : 2*ChunkBytes])
		wrapped = append(wrapped[:400:400], append([]byte("\r\n\r\n"), wrapped[400:]...)...)
		if n, err := st.Chunk("c", b.UploadID, ChunkBytes, wrapped); err != nil || n != 2*ChunkBytes {
			t.Fatalf("wrapped: %d, %v", n, err)
		}
		synctest.Wait()
		if again, got := onlyTemp(t, ws); again != name || !bytes.Equal(got, data[:2*ChunkBytes]) {
			t.Fatalf("after two chunks the file is %s with %d bytes, want %s with the first %d", again, len(got), name, 2*ChunkBytes)
		}
		spoolChunk(t, st, b.UploadID, 2*ChunkBytes, data[2*ChunkBytes:3*ChunkBytes])
		// Taking an incomplete upload leaves it, and its file, as they were.
		if _, err := st.Take("c", b.UploadID); reasonOf(t, err) != ReasonIncomplete {
			t.Fatalf("take of an incomplete upload: %v", err)
		}
		spoolChunk(t, st, b.UploadID, 3*ChunkBytes, data[3*ChunkBytes:])

		up, err := st.Take("c", b.UploadID)
		if err != nil {
			t.Fatal(err)
		}
		defer up.Release()
		if up.Payload.Sum != sum || !bytes.Equal(up.Payload.Data, data) {
			t.Fatalf("taken: sum %x, %d bytes", up.Payload.Sum, len(up.Payload.Data))
		}
		p, err := up.Payload.Prepare(ws)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Discard()
		if again, got := onlyTemp(t, ws); again != name || !bytes.Equal(got, data) {
			t.Fatalf("prepared file %s with %d bytes, want the spooled %s with all %d", again, len(got), name, len(data))
		}
		rel := Path(hex.EncodeToString(sum[:]), "a.bin")
		if err := p.Place(rel); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(ws, rel)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("placed: %d bytes, %v", len(got), err)
		}
		if got := temps(t, ws); len(got) != 0 {
			t.Errorf("%d temporary files left after Place", len(got))
		}
	})
}

// However a spooled upload goes without being placed, its temporary file goes with
// it, and its budget is refunded.
func TestASpooledFileIsRemovedWhenItsUploadGoes(t *testing.T) {
	for name, drop := range map[string]func(t *testing.T, st *Stage[wsBound], id string, idle *atomic.Int64){
		"its connection closed": func(t *testing.T, st *Stage[wsBound], id string, _ *atomic.Int64) { st.Discard("c") },
		"it sat idle": func(t *testing.T, st *Stage[wsBound], id string, _ *atomic.Int64) {
			time.Sleep(time.Hour + time.Second) // fake time: the idle timer fires
		},
		"it was reclaimed for a new upload": func(t *testing.T, st *Stage[wsBound], id string, idle *atomic.Int64) {
			idle.Store(int64(time.Second))
			time.Sleep(time.Second) // fake time: past the deadline, its timer not yet fired
			if _, err := st.Begin("other", wsBound{"x"}, MaxBytes, "", ""); err != nil {
				t.Fatal(err)
			}
			st.Discard("other")
		},
		"the declared sha256 did not match": func(t *testing.T, st *Stage[wsBound], id string, _ *atomic.Int64) {
			spoolChunk(t, st, id, ChunkBytes, random(ChunkBytes+1))
			if _, err := st.Take("c", id); reasonOf(t, err) != ReasonSHA256Mismatch {
				t.Fatalf("take: %v", err)
			}
		},
		"its commit failed before the file was prepared": func(t *testing.T, st *Stage[wsBound], id string, _ *atomic.Int64) {
			spoolChunk(t, st, id, ChunkBytes, random(ChunkBytes+1))
			up, err := st.Take("c", id)
			if err != nil {
				t.Fatal(err)
			}
			up.Release()
		},
		"its commit needed no file": func(t *testing.T, st *Stage[wsBound], id string, _ *atomic.Int64) {
			spoolChunk(t, st, id, ChunkBytes, random(ChunkBytes+1))
			up, err := st.Take("c", id)
			if err != nil {
				t.Fatal(err)
			}
			up.Payload.Unspool() // a repeat of stored bytes: nothing to write
			if got := temps(t, up.Bound.ws); len(got) != 0 {
				t.Errorf("Unspool left %d temporary files", len(got))
			}
			up.Release()
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ws := t.TempDir()
				var idle atomic.Int64
				idle.Store(int64(time.Hour))
				st := NewStage[wsBound](Options{Idle: func() time.Duration { return time.Duration(idle.Load()) }, Budget: 12 << 20})
				defer st.Discard("c")
				sha := ""
				if strings.Contains(name, "sha256") {
					sha = strings.Repeat("0", 64)
				}
				b, err := st.Begin("c", wsBound{ws}, 2*ChunkBytes+1, "", sha)
				if err != nil {
					t.Fatal(err)
				}
				spoolChunk(t, st, b.UploadID, 0, random(ChunkBytes))
				synctest.Wait()
				if _, got := onlyTemp(t, ws); len(got) != ChunkBytes {
					t.Fatalf("the spooled file holds %d bytes, want %d", len(got), ChunkBytes)
				}
				drop(t, st, b.UploadID, &idle)
				synctest.Wait()
				if got := temps(t, ws); len(got) != 0 {
					t.Errorf("%d temporary files left", len(got))
				}
				if n, used := st.Staged(); n != 0 || used != 0 {
					t.Errorf("%d staged, %d charged", n, used)
				}
			})
		})
	}
}

// A spool whose file cannot be made (here uploads is a file, not a directory) still
// hashes: the commit's Prepare then writes the bytes whole, and succeeds once the
// workspace can take them, or fails with a StorageError and leaves nothing.
func TestASpoolThatCannotWriteLeavesTheFileToPrepare(t *testing.T) {
	for _, fixed := range []bool{true, false} {
		ws := t.TempDir()
		blocker := filepath.Join(ws, Dir)
		if err := os.WriteFile(blocker, []byte("not a directory"), 0o600); err != nil {
			t.Fatal(err)
		}
		st := NewStage[wsBound](Options{})
		data := random(2*ChunkBytes + 3)
		sum := sha256.Sum256(data)
		b, _ := st.Begin("c", wsBound{ws}, int64(len(data)), "", hex.EncodeToString(sum[:]))
		for off := 0; off < len(data); off += ChunkBytes {
			spoolChunk(t, st, b.UploadID, off, data[off:min(off+ChunkBytes, len(data))])
		}
		up, err := st.Take("c", b.UploadID)
		if err != nil {
			t.Fatalf("take (the hash is the spool's): %v", err)
		}
		if fixed {
			os.Remove(blocker)
		}
		p, err := up.Payload.Prepare(ws)
		switch {
		case fixed && err != nil:
			t.Fatalf("prepare once the workspace takes files: %v", err)
		case fixed:
			if _, got := onlyTemp(t, ws); !bytes.Equal(got, data) {
				t.Errorf("prepared %d bytes, want %d", len(got), len(data))
			}
			p.Discard()
		default:
			var se *StorageError
			if !errors.As(err, &se) {
				t.Fatalf("prepare into a workspace whose uploads is a file: %v, want a StorageError", err)
			}
			if fi, err := os.Lstat(blocker); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("uploads was changed: %v, %v", fi, err)
			}
		}
		up.Release()
		if got := temps(t, ws); len(got) != 0 {
			t.Errorf("%d temporary files left", len(got))
		}
	}
}

// A connection that closes while its chunks are decoded and spooled: the buffers
// are unmapped only once neither a chunk nor a spool uses them, and every
// temporary file is removed.
func TestAnUploadDiscardedWhileItsChunksAreSpooledFreesNothingInUse(t *testing.T) {
	ws := t.TempDir()
	st := NewStage[wsBound](Options{})
	enc := b64(random(ChunkBytes))
	for range 20 {
		b, err := st.Begin("c", wsBound{ws}, 4*ChunkBytes, "", "")
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
	if got := temps(t, ws); len(got) != 0 {
		t.Errorf("%d temporary files left", len(got))
	}
	if n, used := st.Staged(); n != 0 || used != 0 {
		t.Errorf("%d staged, %d charged after the discards", n, used)
	}
}

// BenchmarkSpooledUpload10MB: one 10 MiB upload staged from its ten 1 MiB chunks'
// data_b64, as file/upload/chunk hands them over, then taken and prepared for its
// commit (the spooled file synced), without the socket: chunk-ms is the time the
// chunks' answers wait for, commit-ms that of Take and Prepare.
func BenchmarkSpooledUpload10MB(b *testing.B) {
	ws := b.TempDir()
	st := NewStage[wsBound](Options{})
	const chunks = 10
	var enc [chunks][]byte
	for i := range enc {
		enc[i] = b64(random(ChunkBytes))
	}
	var chunking, committing time.Duration
	b.SetBytes(chunks * ChunkBytes)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		begun, err := st.Begin("c", wsBound{ws}, chunks*ChunkBytes, "", "")
		if err != nil {
			b.Fatal(err)
		}
		for i := range chunks {
			if _, err := st.Chunk("c", begun.UploadID, int64(i)*ChunkBytes, enc[i]); err != nil {
				b.Fatal(err)
			}
		}
		taking := time.Now()
		up, err := st.Take("c", begun.UploadID)
		if err != nil {
			b.Fatal(err)
		}
		p, err := up.Payload.Prepare(ws)
		if err != nil {
			b.Fatal(err)
		}
		chunking += taking.Sub(start)
		committing += time.Since(taking)
		p.Discard()
		up.Release()
	}
	b.ReportMetric(float64(chunking.Microseconds())/1000/float64(b.N), "chunks-ms/op")
	b.ReportMetric(float64(committing.Microseconds())/1000/float64(b.N), "commit-ms/op")
}

// A spooled chunk allocates no more than one that is not: handing the bytes to the
// spool's goroutines costs nothing per chunk.
func TestAChunkOfASpooledUploadDecodesWithoutAllocating(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewStage[wsBound](Options{})
		defer st.Discard("c")
		const chunks = 8
		b, _ := st.Begin("c", wsBound{t.TempDir()}, chunks*ChunkBytes, "", "")
		enc := b64(random(ChunkBytes))
		spoolChunk(t, st, b.UploadID, 0, nil) // the buffer and the spool start at the first chunk
		// The spool's goroutines open its file (which allocates) once it starts; on a
		// busy machine that happened during the measured chunks. Wait until they wait.
		synctest.Wait()
		if allocs := chunkAllocs(t, st, b.UploadID, enc, chunks-1); allocs > 1 {
			t.Errorf("%.1f allocations per 1 MiB spooled chunk, want at most 1", allocs)
		}
	})
}

// The spool syncs what it wrote whenever it has caught up with the chunks, and not
// while more wait to be written: a sync that held it up while two chunks arrived
// is followed by one more, after both are written.
func TestASpoolSyncsWhenItHasCaughtUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var synced []int64 // the file's size at each sync
		hold := make(chan struct{})
		defer func(f func(*os.File) error) { syncFile = f }(syncFile)
		syncFile = func(f *os.File) error {
			fi, err := f.Stat()
			if err != nil {
				return err
			}
			synced = append(synced, fi.Size())
			if len(synced) == 2 {
				<-hold
			}
			return f.Sync()
		}
		ws := t.TempDir()
		st := NewStage[wsBound](Options{})
		defer st.Discard("c")
		data := random(4 * ChunkBytes)
		b, err := st.Begin("c", wsBound{ws}, int64(len(data)), "", "")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			spoolChunk(t, st, b.UploadID, i*ChunkBytes, data[i*ChunkBytes:(i+1)*ChunkBytes])
			synctest.Wait()
		}
		if want := []int64{ChunkBytes, 2 * ChunkBytes}; !slices.Equal(synced, want) {
			t.Fatalf("synced at sizes %v after two chunks, each written before the next, want %v", synced, want)
		}
		// The second sync holds the writer while the last two chunks arrive.
		for i := 2; i < 4; i++ {
			spoolChunk(t, st, b.UploadID, i*ChunkBytes, data[i*ChunkBytes:(i+1)*ChunkBytes])
		}
		close(hold)
		synctest.Wait()
		if want := []int64{ChunkBytes, 2 * ChunkBytes, 4 * ChunkBytes}; !slices.Equal(synced, want) {
			t.Fatalf("synced at sizes %v, want %v: not while the fourth chunk waited", synced, want)
		}
	})
}

// A sync of the spool's file that fails stops the spool: the commit writes the
// bytes to a file of its own, and the spool's is removed.
func TestASpoolWhoseSyncFailsLeavesTheFileToPrepare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer func(f func(*os.File) error) { syncFile = f }(syncFile)
		syncFile = func(*os.File) error { return errors.New("input/output error") }
		ws := t.TempDir()
		st := NewStage[wsBound](Options{})
		defer st.Discard("c")
		data := random(2*ChunkBytes + 3)
		sum := sha256.Sum256(data)
		b, err := st.Begin("c", wsBound{ws}, int64(len(data)), "", hex.EncodeToString(sum[:]))
		if err != nil {
			t.Fatal(err)
		}
		spoolChunk(t, st, b.UploadID, 0, data[:ChunkBytes])
		synctest.Wait() // written, and its sync failed
		spooled, _ := onlyTemp(t, ws)
		for off := ChunkBytes; off < len(data); off += ChunkBytes {
			spoolChunk(t, st, b.UploadID, off, data[off:min(off+ChunkBytes, len(data))])
		}
		up, err := st.Take("c", b.UploadID)
		if err != nil {
			t.Fatal(err)
		}
		defer up.Release()
		p, err := up.Payload.Prepare(ws)
		if err != nil {
			t.Fatalf("prepare after the spool's sync failed: %v", err)
		}
		defer p.Discard()
		name, got := onlyTemp(t, ws)
		if name == spooled {
			t.Errorf("the commit took the file whose sync failed (%s)", name)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("prepared %d bytes, want the upload's %d", len(got), len(data))
		}
	})
}
