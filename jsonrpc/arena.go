package jsonrpc

import "bytes"

// arena serves the reader's small allocations during a burst of pipelined frames
// from a few shared chunks instead of one object each: the copies of the frames,
// their Requests, their method names and the buffers of their answers. Only the
// reader goroutine uses it. A chunk lives as long as anything carved from it (a
// handler may keep its params), and the reader drops its chunks whenever it is
// about to block, so an idle connection holds none, and a lone request takes the
// ordinary allocations, which cost less than a chunk.
type arena struct {
	bytes []byte    // free room for frame copies and answer buffers
	chunk int       // the size of the next chunk: it doubles during a burst
	reqs  []Request // free Requests
	nreqs int       // the size of the next chunk of Requests: it doubles during a burst
	// names interns method names: a connection uses a few, again and again.
	names map[string]string
	// one, when set, is what request returns: the reader's own Request, for a
	// request it may serve in place (Conn.servedInPlace).
	one *Request
}

const (
	arenaFirst    = 1 << 10 // bytes of a burst's first chunk of frames and answers
	arenaChunk    = 8 << 10 // bytes of its later chunks, at most
	arenaMaxPiece = 1 << 10 // larger pieces are allocated on their own
	arenaRequests = 32      // Requests per chunk, at most
	arenaNames    = 64      // method names interned per connection, at most
)

// drop lets go of the chunks (the reader is about to block).
func (a *arena) drop() { a.bytes, a.reqs, a.chunk, a.nreqs = nil, nil, 0, 0 }

// clone copies b into the arena.
func (a *arena) clone(b []byte) []byte {
	if len(b) > arenaMaxPiece {
		return bytes.Clone(b)
	}
	out := a.alloc(len(b))
	return append(out, b...)
}

// alloc returns an empty slice with room for n bytes: appending past n reallocates,
// never overwrites a neighbour.
func (a *arena) alloc(n int) []byte {
	if n > arenaMaxPiece {
		return make([]byte, 0, n)
	}
	if cap(a.bytes)-len(a.bytes) < n {
		a.chunk = min(max(2*a.chunk, arenaFirst), arenaChunk)
		a.bytes = make([]byte, 0, max(a.chunk, n))
	}
	start := len(a.bytes)
	a.bytes = a.bytes[:start+n]
	return a.bytes[start : start : start+n]
}

// request returns a zero Request.
func (a *arena) request() *Request {
	if a.one != nil {
		return a.one
	}
	if len(a.reqs) == 0 {
		a.nreqs = min(max(2*a.nreqs, 4), arenaRequests)
		a.reqs = make([]Request, a.nreqs)
	}
	r := &a.reqs[0]
	a.reqs = a.reqs[1:]
	return r
}

// name returns the method name b as a string, shared with earlier requests.
func (a *arena) name(b []byte) string {
	if s, ok := a.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(a.names) < arenaNames && len(b) <= 64 {
		if a.names == nil {
			a.names = make(map[string]string)
		}
		a.names[s] = s
	}
	return s
}
