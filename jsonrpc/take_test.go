package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json/jsontext"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

// largeLine is a request line of about n bytes whose params hold one long string
// made of c, with the given id.
func largeLine(id, n int, c byte) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"big","params":{"s":"%s"}}`, id, strings.Repeat(string(c), n)) + "\n"
}

// A large line is handed over with TakeFrame, not copied, and the framer reads on
// correctly whatever of the next lines it had already read; short lines and lines
// it did not just return are refused.
func TestTakeFrameKeepsTheFollowingLines(t *testing.T) {
	var in strings.Builder
	for i := range 6 {
		in.WriteString(largeLine(i, 200<<10+i*1000, byte('a'+i)))
		in.WriteString(`{"jsonrpc":"2.0","id":"s","method":"small"}` + "\n")
	}
	f := NewNDJSON(nopCloser{strings.NewReader(in.String())})
	var taken [][]byte
	for i := 0; ; i++ {
		line, err := f.ReadFrame()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			if f.TakeFrame(line) {
				t.Fatalf("line %d, %d bytes: a short line was taken", i, len(line))
			}
			if string(line) != `{"jsonrpc":"2.0","id":"s","method":"small"}` {
				t.Fatalf("line %d: %q", i, line)
			}
			continue
		}
		if !f.TakeFrame(line) {
			t.Fatalf("line %d, %d bytes: not taken", i, len(line))
		}
		if f.TakeFrame(line) {
			t.Fatalf("line %d taken twice", i)
		}
		taken = append(taken, line)
		if len(taken) == 3 {
			// Buffers given back serve later lines; the lines taken earlier are
			// the caller's and stay as they were until returned.
			f.ReturnFrame(taken[0])
			taken[0] = nil
		}
	}
	if len(taken) != 6 {
		t.Fatalf("%d large lines read, want 6", len(taken))
	}
	for i, line := range taken[1:] {
		i++
		if want := strings.TrimSuffix(largeLine(i, 200<<10+i*1000, byte('a'+i)), "\n"); string(line) != want {
			t.Errorf("large line %d changed after it was taken (%d bytes, want %d)", i, len(line), len(want))
		}
	}
	if f.TakeFrame([]byte(strings.Repeat("x", 100<<10))) {
		t.Error("a line not from the framer was taken")
	}
}

// A stream of large lines, each taken and given back once read, reuses one buffer
// instead of allocating (or copying) one per line.
func TestLargeLinesReuseTheirBuffer(t *testing.T) {
	line := []byte(largeLine(1, 1<<20, 'q'))
	var r bytes.Reader
	f := NewNDJSON(nopCloser{&r})
	read := func() {
		r.Reset(line)
		f.eof = false
		got, err := f.ReadFrame()
		if err != nil || len(got) != len(line)-1 || !f.TakeFrame(got) {
			t.Fatalf("%d bytes, %v", len(got), err)
		}
		f.ReturnFrame(got)
	}
	read()
	// Each line: the small buffer the framer reads on into after a take, and the
	// pool's box; the 1 MiB buffer only when the pool dropped it (the race detector
	// drops one Put in four), never by growing up to it by doubling.
	if n := testing.AllocsPerRun(50, read); n > 3 {
		t.Errorf("%.1f allocations per large line, want at most 3", n)
	}
}

// A medium line (a long prompt, 16 to 64 KiB) is read in two reads, the second
// into a pooled buffer, instead of growing one from 1 KiB by doubling for every
// line, and once it is read the framer gives that buffer back: an idle connection
// holds a small one only.
func TestMediumLinesAreReadIntoAPooledBuffer(t *testing.T) {
	for _, size := range []int{20 << 10, 40 << 10, 60 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			line := []byte(largeLine(1, size, 'm'))
			r := &countingReader{}
			f := NewNDJSON(nopCloser{r})
			read := func() {
				r.Reset(line)
				r.reads = 0
				f.eof = false
				got, err := f.ReadFrame()
				if err != nil || len(got) != len(line)-1 {
					t.Fatalf("%d bytes, %v", len(got), err)
				}
				if _, err := f.ReadFrame(); err != io.EOF {
					t.Fatalf("after the line: %v, want EOF", err)
				}
			}
			read()
			read()
			if r.reads > 3 { // its first KiB, the rest, EOF
				t.Errorf("a %d-byte line after one like it took %d reads, want at most 3", len(line), r.reads)
			}
			if cap(f.buf) > initialReadBuffer {
				t.Errorf("an idle framer keeps a buffer of %d bytes after a %d-byte line, want at most %d", cap(f.buf), len(line), initialReadBuffer)
			}
			// Each line: the small buffer it starts in and the pool's box; the
			// pooled one only when the pool dropped it (the race detector drops
			// one Put in four).
			if n := testing.AllocsPerRun(50, read); n > 3 {
				t.Errorf("%.1f allocations per %d-byte line, want at most 3", n, len(line))
			}
		})
	}
}

// countingReader is a bytes.Reader that counts its reads.
type countingReader struct {
	bytes.Reader
	reads int
}

func (r *countingReader) Read(p []byte) (int, error) {
	r.reads++
	return r.Reader.Read(p)
}

// Over a Conn, a large request whose handler is declared to keep nothing
// (Options.Recycle) is served from the framer's buffer, and the buffer it gives
// back serves the next large requests with their own bytes: the handler of each
// sees exactly its own frame's params.
func TestRecycledLargeFramesAreServedIntact(t *testing.T) {
	var mu sync.Mutex
	var bad []string
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		var p struct {
			S string `json:"s"`
		}
		if err := DecodeParams(req.Params, &p); err != nil {
			return nil, err
		}
		id := string(req.ID)
		var n int
		fmt.Sscan(id, &n)
		if want := strings.Repeat(string(byte('a'+n%26)), 300<<10+n); p.S != want {
			mu.Lock()
			bad = append(bad, id)
			mu.Unlock()
		}
		return jsontext.Value(`"ok"`), nil
	})
	recycled := 0
	_, peer, r := pair(t, h, Options{Schedule: func(req *Request) Schedule {
		mu.Lock()
		recycled++
		mu.Unlock()
		if req.Method == "big" {
			return Spawn | Recycle
		}
		return Spawn
	}})
	go func() {
		for i := range 12 {
			io.WriteString(peer, largeLine(i, 300<<10+i, byte('a'+i%26)))
		}
	}()
	for range 12 {
		m := readMsg(t, peer, r)
		if m["result"] != "ok" {
			t.Fatalf("answer %v", m)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("requests %v saw params other than their own", bad)
	}
	if recycled != 12 {
		t.Fatalf("Schedule asked %d times, want 12 (once a frame)", recycled)
	}
}
