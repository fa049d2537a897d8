package jsonrpc

import (
	"runtime"
	"testing"
)

// Full-sized stream buffers outlive garbage collections (a streaming turn runs
// about one, which emptied a sync.Pool), up to keptBuffers of them; larger ones
// are never kept.
func TestFullStreamBuffersOutliveACollection(t *testing.T) {
	var p bufferPool
	put := make(map[*[]byte]bool)
	for range keptBuffers + 2 {
		b := p.get(true)
		if cap(*b) < streamChunk {
			t.Fatalf("a full buffer of %d bytes", cap(*b))
		}
		*b = append(*b, "frame\n"...)
		put[b] = true
	}
	huge := new([]byte)
	*huge = make([]byte, 0, 2*maxPooledStream)
	p.put(huge)
	for b := range put {
		p.put(b)
	}
	runtime.GC()
	runtime.GC()
	for range keptBuffers {
		b := p.get(true)
		if !put[b] {
			t.Fatal("a kept buffer was lost to the collection")
		}
		if len(*b) != 0 {
			t.Fatalf("a kept buffer still holds %q", *b)
		}
		delete(put, b)
	}
	if b := p.get(true); b == huge {
		t.Fatal("a buffer larger than maxPooledStream was kept")
	}
}
