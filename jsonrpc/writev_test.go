package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
)

// callsFramer records each write the outbox makes: one entry a call, holding the
// pieces it was given.
type callsFramer struct {
	NDJSON
	calls [][][]byte
	fail  error
}

func (f *callsFramer) WriteStream(b []byte) error {
	f.calls = append(f.calls, [][]byte{bytes.Clone(b)})
	return f.fail
}

func (f *callsFramer) WriteStreams(pieces [][]byte) error {
	var call [][]byte
	for _, p := range pieces {
		call = append(call, bytes.Clone(p))
	}
	f.calls = append(f.calls, call)
	return f.fail
}

// onlyStream hides WriteStreams: a stream that takes one piece a call.
type onlyStream struct{ f *callsFramer }

func (o onlyStream) AppendFrame(dst, msg []byte) []byte { return o.f.AppendFrame(dst, msg) }
func (o onlyStream) WriteStream(b []byte) error         { return o.f.WriteStream(b) }

// The writer writes the pieces of its stream that follow one another (a window of
// the session's tail that crosses from one of its blocks to the next, a frame of
// its own between borrowed ones) in one call, in their order, as long as they make
// at most a buffer's worth (streamChunk, so that a write deadline still covers
// about that much); over a stream that cannot take several pieces at once, one
// call a piece. Every piece is written, and its own buffers go back to the pool.
func TestTheStreamsPiecesGoOutTogetherUpToABuffersWorth(t *testing.T) {
	blockEnd := bytes.Repeat([]byte("a"), 100)
	blockStart := bytes.Repeat([]byte("b"), 200)
	own := streamBuffers.get(false)
	*own = append(*own, "own\n"...)
	large := bytes.Repeat([]byte("c"), streamChunk-100)
	last := bytes.Repeat([]byte("d"), 50)
	stream := func() []segment {
		return []segment{{ref: blockEnd}, {ref: blockStart}, {own: own}, {ref: large}, {ref: last}}
	}

	f := &callsFramer{}
	o := &outbox{framer: f}
	if err := o.writeStream(stream()); err != nil {
		t.Fatal(err)
	}
	want := [][][]byte{{blockEnd, blockStart, []byte("own\n")}, {large, last}}
	if !equalCalls(f.calls, want) {
		t.Fatalf("writes %s, want %s", describe(f.calls), describe(want))
	}
	if len(o.pieces) != 0 {
		t.Fatalf("the writer kept %d pieces after writing", len(o.pieces))
	}

	f = &callsFramer{}
	*own = append((*own)[:0], "own\n"...)
	o = &outbox{framer: onlyStream{f}}
	s := stream()
	if err := o.writeStream(s); err != nil {
		t.Fatal(err)
	}
	want = [][][]byte{{blockEnd}, {blockStart}, {[]byte("own\n")}, {large}, {last}}
	if !equalCalls(f.calls, want) {
		t.Fatalf("over a stream of one piece a call: writes %s, want %s", describe(f.calls), describe(want))
	}
	for i, sg := range s {
		if sg.own != nil || sg.ref != nil {
			t.Fatalf("segment %d still held after the write", i)
		}
	}

	// A failed write stops the writing: nothing after it is written.
	f = &callsFramer{fail: errors.New("broken pipe")}
	o = &outbox{framer: f}
	if err := o.writeStream([]segment{{ref: large}, {ref: large}, {ref: last}}); err == nil || len(f.calls) != 1 {
		t.Fatalf("after a failed write: err %v and %d writes, want the error and 1 write", err, len(f.calls))
	}
}

// NDJSON's WriteStreams over a socket (writev) delivers its pieces whole and in
// order, however many calls the kernel takes them in.
func TestWriteStreamsDeliversEveryPieceInOrder(t *testing.T) {
	nc, peer := unixPair(t)
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(peer)
		peer.Close()
		got <- b
	}()
	f := NewNDJSON(nc)
	var pieces, wantAll [][]byte
	for i := range 40 { // more than a socket buffer: the kernel takes it in several calls
		p := bytes.Repeat([]byte{byte('a' + i%26)}, 1000+i*997)
		pieces = append(pieces, p)
		wantAll = append(wantAll, p)
	}
	if err := f.WriteStreams(pieces); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	if b, want := <-got, bytes.Join(wantAll, nil); !bytes.Equal(b, want) {
		t.Fatalf("the peer read %d bytes, want the %d of the pieces in order", len(b), len(want))
	}
}

func equalCalls(a, b [][][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if !bytes.Equal(a[i][j], b[i][j]) {
				return false
			}
		}
	}
	return true
}

// describe gives each call as the sizes of its pieces.
func describe(calls [][][]byte) string {
	var sizes [][]int
	for _, c := range calls {
		var n []int
		for _, p := range c {
			n = append(n, len(p))
		}
		sizes = append(sizes, n)
	}
	return fmt.Sprint(sizes)
}
