package memory

import (
	"context"
	"math"
	"slices"
	"sync"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// scope is the memories one vector search covers: an agent's, of one owner (every
// owner's when ""), embedded by one model.
type scope struct{ agent, owner, model string }

// vectorCache keeps, per scope searched once, every embedding of the scope in
// memory, normalized, so that a search reads no blob from SQLite: 10,000 vectors
// of 1,536 dimensions are 60 MB, which a scan of the table would read again at
// every turn. The store stays the truth: the cache is filled from it on first use
// and follows every write this Service makes after that write committed.
type vectorCache struct {
	mu     sync.Mutex
	scopes map[scope]*vectorScope
}

type vectorScope struct {
	byID  map[string]int // index in items
	items []vectorItem
}

type vectorItem struct {
	m   store.Memory // without its embedding
	vec []float32    // unit length
}

// nearestHit is a memory with its cosine similarity to a query (≥ 0).
type nearestHit struct {
	m   store.Memory
	sim float64
}

// nearest returns the n memories of sc most similar to q (similarity > 0).
func (c *vectorCache) nearest(ctx context.Context, s *Service, sc scope, q []float32, n int) ([]nearestHit, error) {
	q = normalized(q)
	c.mu.Lock()
	defer c.mu.Unlock()
	vs, ok := c.scopes[sc]
	if !ok {
		// Loaded under the lock: a write that committed before the read is in it,
		// one that commits during it updates the scope once the lock is free.
		vs = &vectorScope{byID: map[string]int{}}
		err := s.st.MemoryVectors(ctx, sc.agent, sc.owner, sc.model, func(m store.Memory) {
			vs.set(m)
		})
		if err != nil {
			return nil, err
		}
		c.scopes[sc] = vs
	}
	hits := make([]nearestHit, 0, n+1)
	worst := 0.0
	for i := range vs.items {
		it := &vs.items[i]
		if len(it.vec) != len(q) {
			continue
		}
		sim := float64(dot(q, it.vec))
		if sim <= 0 || (len(hits) == n && sim <= worst) {
			continue
		}
		at, _ := slices.BinarySearchFunc(hits, sim, func(h nearestHit, v float64) int {
			if h.sim > v {
				return -1
			}
			return 1
		})
		hits = slices.Insert(hits, at, nearestHit{m: it.m, sim: min(sim, 1)})
		if len(hits) > n {
			hits = hits[:n]
		}
		if len(hits) == n {
			worst = hits[n-1].sim
		}
	}
	return hits, nil
}

// put follows a stored memory into the scopes loaded: its owner's and every
// owner's, of its model; a memory replaced without an embedding leaves them.
func (c *vectorCache) put(m store.Memory) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for sc, vs := range c.scopes {
		if sc.agent != m.Agent || (sc.owner != "" && sc.owner != m.Owner) {
			continue
		}
		if m.Embedding != nil && sc.model == m.EmbeddingModel {
			vs.set(m)
		} else {
			vs.drop(m.ID)
		}
	}
}

// remove follows a forgotten memory out of the scopes loaded.
func (c *vectorCache) remove(m store.Memory) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for sc, vs := range c.scopes {
		if sc.agent == m.Agent {
			vs.drop(m.ID)
		}
	}
}

func (vs *vectorScope) set(m store.Memory) {
	it := vectorItem{vec: normalized(m.Embedding)}
	m.Embedding = nil
	it.m = m
	if i, ok := vs.byID[m.ID]; ok {
		vs.items[i] = it
		return
	}
	vs.byID[m.ID] = len(vs.items)
	vs.items = append(vs.items, it)
}

func (vs *vectorScope) drop(id string) {
	i, ok := vs.byID[id]
	if !ok {
		return
	}
	last := len(vs.items) - 1
	vs.items[i] = vs.items[last]
	vs.byID[vs.items[i].m.ID] = i
	vs.items = vs.items[:last]
	delete(vs.byID, id)
}

// normalized returns v scaled to unit length (a copy), or v when it is all zeros.
func normalized(v []float32) []float32 {
	n := math.Sqrt(float64(dot(v, v)))
	if n == 0 {
		return v
	}
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = float32(float64(f) / n)
	}
	return out
}

// dotGeneric is the dot product of two vectors of one length, in eight
// independent sums so that the processor overlaps the multiplications, on
// re-sliced views so that the compiler drops the bounds checks. dot is this, or
// the AVX2 version where the processor has it (dot_amd64.go).
func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for len(a) >= 8 {
		a8, b8 := a[:8:8], b[:8:8]
		s0 += a8[0] * b8[0]
		s1 += a8[1] * b8[1]
		s2 += a8[2] * b8[2]
		s3 += a8[3] * b8[3]
		s4 += a8[4] * b8[4]
		s5 += a8[5] * b8[5]
		s6 += a8[6] * b8[6]
		s7 += a8[7] * b8[7]
		a, b = a[8:], b[8:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3) + (s4 + s5) + (s6 + s7)
}
