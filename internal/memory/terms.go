package memory

import (
	"context"
	"sync"
	"time"
)

// termCounts remembers how many memories hold a word, as far as the keyword
// search counted it (termBudget+1 or commonTerm+1; never a count of none), so that the words a user uses
// again and again are not counted at every turn. A count only steers which words a
// search uses, never what it finds, so one that is a little stale is harmless: the
// cache is emptied after maxTermWrites writes or termTTL, whichever comes first,
// and holds at most maxTerms words.
type termCounts struct {
	mu      sync.Mutex
	counts  map[termKey]int
	writes  int
	started time.Time
}

type termKey struct {
	term string
	upTo int
}

const (
	maxTerms      = 8192
	maxTermWrites = 256
	termTTL       = 10 * time.Minute
)

// get returns the counts of terms up to upTo, counting with count those it lacks.
func (c *termCounts) get(ctx context.Context, now time.Time, terms []string, upTo int,
	count func(ctx context.Context, terms []string, upTo int) (map[string]int, error)) (map[string]int, error) {
	out := make(map[string]int, len(terms))
	var missing []string
	c.mu.Lock()
	if c.counts == nil || len(c.counts) > maxTerms || c.writes > maxTermWrites || now.Sub(c.started) > termTTL {
		c.counts, c.writes, c.started = map[termKey]int{}, 0, now
	}
	for _, t := range terms {
		if n, ok := c.counts[termKey{t, upTo}]; ok {
			out[t] = n
		} else {
			missing = append(missing, t)
		}
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	counted, err := count(ctx, missing, upTo)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	for t, n := range counted {
		out[t] = n
		if n > 0 { // a word no memory held yet is counted again: the next write may hold it
			c.counts[termKey{t, upTo}] = n
		}
	}
	c.mu.Unlock()
	return out, nil
}

// wrote counts a write that may have changed the counts.
func (c *termCounts) wrote() {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
}
