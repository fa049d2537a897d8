package jsonrpc

import "sync"

// streamBuffers are the outbound buffers of every connection over a StreamFramer.
var streamBuffers bufferPool

// keptBuffers is how many full-sized stream buffers (streamChunk) outlive a garbage
// collection: a sync.Pool is emptied by every collection, and a streaming turn runs
// about one, so its backlog's buffers were allocated and zeroed anew each turn.
// What is kept is at most keptBuffers × maxPooledStream, across all connections.
const keptBuffers = 8

// bufferPool is a sync.Pool of stream buffers with a few full-sized ones kept
// aside from it.
type bufferPool struct {
	mu   sync.Mutex
	kept []*[]byte
	pool sync.Pool
}

// get returns an empty buffer; with full, one of at least streamChunk bytes. The
// kept full-sized ones go only to a backlog (full): a connection that writes a
// few frames at a time, such as one fed a window of paced notifications (at most
// PacedWindow bytes), takes a pooled buffer that grows to what it holds, and so
// 100 connections streaming one turn do not each hold a buffer of streamChunk.
func (p *bufferPool) get(full bool) *[]byte {
	if full {
		p.mu.Lock()
		if n := len(p.kept); n > 0 {
			b := p.kept[n-1]
			p.kept[n-1] = nil
			p.kept = p.kept[:n-1]
			p.mu.Unlock()
			return b
		}
		p.mu.Unlock()
	}
	b, _ := p.pool.Get().(*[]byte)
	if b == nil {
		b = new([]byte)
	}
	if full && cap(*b) < streamChunk {
		*b = make([]byte, 0, streamChunk)
	}
	return b
}

// put takes back a written buffer; one larger than maxPooledStream is dropped.
func (p *bufferPool) put(b *[]byte) {
	if cap(*b) > maxPooledStream {
		return
	}
	*b = (*b)[:0]
	if cap(*b) >= streamChunk {
		p.mu.Lock()
		if len(p.kept) < keptBuffers {
			p.kept = append(p.kept, b)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	p.pool.Put(b)
}
