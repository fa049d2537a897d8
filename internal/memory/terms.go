package memory

import (
	"context"
	"sync"
	"time"
)

// termCounts remembers how many memories hold a word, as far as the keyword
// search counted it (termBudget+1 or commonTerm+1), so that the words a user uses
// again and again are not counted at every turn. A count only steers which words a
// search uses, never what it finds, so one that is a little stale is harmless: the
// cache is emptied after maxTermWrites writes or termTTL, whichever comes first,
// and holds at most maxTerms words. A word no memory holds is another matter (it
// would never be searched), so those are remembered apart, in zeros, until the next
// write: the words of every turn's prompt on a store without memories of them then
// cost no query at all.
type termCounts struct {
	mu      sync.Mutex
	counts  map[termKey]int
	writes  int
	started time.Time
	zeros   map[string]bool
	epoch   uint64 // the writes begun or ended; a count that saw one change keeps no zero
}

type termKey struct {
	term string
	upTo int
}

const (
	maxTerms      = 8192
	maxTermWrites = 512 // 256 writes: wrote is called before and after each
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
	if c.zeros == nil || len(c.zeros) > maxTerms {
		c.zeros = map[string]bool{}
	}
	for _, t := range terms {
		if n, ok := c.counts[termKey{t, upTo}]; ok {
			out[t] = n
		} else if c.zeros[t] {
			out[t] = 0
		} else {
			missing = append(missing, t)
		}
	}
	epoch := c.epoch
	c.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	counted, err := count(ctx, missing, upTo)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	for _, t := range missing {
		n := counted[t]
		out[t] = n
		switch {
		case n > 0:
			c.counts[termKey{t, upTo}] = n
		case epoch == c.epoch: // no write began or ended while it was counted
			c.zeros[t] = true
		}
	}
	c.mu.Unlock()
	return out, nil
}

// wrote is called before and after a write that may change the counts: it forgets
// the words no memory held (a count running across the write keeps none either),
// and counts the write against the cache of the others.
func (c *termCounts) wrote() {
	c.mu.Lock()
	c.writes++
	c.epoch++
	c.zeros = nil
	c.mu.Unlock()
}
