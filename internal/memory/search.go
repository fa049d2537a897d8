package memory

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// Scored is a memory a search found, with its score in [0, 1].
type Scored struct {
	Memory
	Score float64
}

// maxQueryTerms bounds the words of a query that the keyword search looks up.
const maxQueryTerms = 32

// termBudget bounds the keyword search's work: it uses a query's words from the
// rarest on while the memories holding them add up to at most this many, so that
// BM25 ranks a few hundred memories, not every one holding a common word (ranking
// costs some microseconds a memory). The rarest word is used alone when it is in
// more, unless it is in more than commonTerm: a word that common tells nothing, as
// the stop words do not.
const (
	termBudget = 256
	commonTerm = 4096
)

// queryTerms are the distinct words of text (lowercased runs of letters and
// digits) less the stop words, at most maxQueryTerms: the scan stops there, so a
// long prompt costs the words up to its 32nd distinct one, not a copy of itself.
func queryTerms(text string) []string {
	seen := map[string]bool{}
	var terms []string
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }
	for i := 0; i < len(text) && len(terms) < maxQueryTerms; {
		start := strings.IndexFunc(text[i:], isWord)
		if start < 0 {
			break
		}
		start += i
		end := strings.IndexFunc(text[start:], func(r rune) bool { return !isWord(r) })
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		i = end
		w := strings.ToLower(text[start:end])
		if seen[w] || stopWords[w] {
			continue
		}
		seen[w] = true
		terms = append(terms, w)
	}
	return terms
}

// ftsQuery is the FTS5 query of the terms worth searching (see termBudget), any of
// them matching; "" when none is.
func (s *Service) ftsQuery(ctx context.Context, text string) (match string, newest bool, err error) {
	terms := queryTerms(text)
	counts, err := s.terms.get(ctx, s.now(), terms, termBudget+1, s.st.MemoryTermCounts)
	if err != nil {
		return "", false, err
	}
	terms = slices.DeleteFunc(terms, func(t string) bool { return counts[t] == 0 })
	if len(terms) > 0 && !slices.ContainsFunc(terms, func(t string) bool { return counts[t] <= termBudget }) {
		// Every word is over the budget: count them further, for the rarest.
		if counts, err = s.terms.get(ctx, s.now(), terms, commonTerm+1, s.st.MemoryTermCounts); err != nil {
			return "", false, err
		}
	}
	slices.SortStableFunc(terms, func(a, b string) int { return counts[a] - counts[b] })
	var b strings.Builder
	spent := 0
	for i, t := range terms {
		n := counts[t]
		if (i > 0 && spent+n > termBudget) || n > commonTerm {
			break
		}
		spent += n
		if b.Len() > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(`"` + t + `"`)
	}
	return b.String(), spent > termBudget, nil
}

// stopWords are the English words too common to tell memories apart: a query's
// "the" would otherwise find every memory that has one, and the best of those
// would score 1.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about after all also am an and any are as at be been before but by can
		could did do does doing done for from had has have he her here him his how i if in into is it its
		just let me more most my no not now of on or our out over she so some than that the their them then
		there these they this those to too up us very was we were what when where which who whom why will
		with would you your s t d ll m re ve`) {
		m[w] = true
	}
	return m
}()

// Search scores the memories of agent and owner (every owner's when owner is "")
// against query and returns the best limit with a score above 0, best first.
//
// The keyword score is the memory's BM25 over that of the best keyword match (so
// the best is 1). With embeddings on, the vector score is the cosine similarity of
// the query's and the memory's embeddings (negative counts as 0), and a memory's
// score is 0.7 vector + 0.3 keyword; without them, or when the query cannot be
// embedded, it is the keyword score. Either way it is multiplied by
// 0.5^(age / half_life_days), age counted from the memory's last update.
func (s *Service) Search(ctx context.Context, agent, owner, query string, limit int) ([]Scored, error) {
	cfg := s.conf().Memory
	type cand struct {
		m       store.Memory
		kw, vec float64
	}
	cands := map[string]*cand{}
	match, newest, err := s.ftsQuery(ctx, query)
	if err != nil {
		return nil, err
	}
	if match != "" {
		hits, err := s.st.SearchMemories(ctx, agent, owner, match, max(4*limit, keywordCandidates), newest)
		if err != nil {
			return nil, err
		}
		best := 0.0
		for _, h := range hits {
			best = max(best, h.BM25)
		}
		for _, h := range hits {
			kw := 1.0
			if best > 0 {
				kw = h.BM25 / best
			}
			cands[h.ID] = &cand{m: h.Memory, kw: kw}
		}
	}
	vectors := false
	if e := s.embedder(); e != nil && strings.TrimSpace(query) != "" {
		q, err := s.embed(ctx, e, []string{query})
		if err != nil {
			s.log.Warn("embedding a memory query failed; searching by keyword only", "agent", agent, "err", err)
		} else {
			near, err := s.vectors.nearest(ctx, s, scope{agent: agent, owner: owner, model: e.model}, q[0], max(4*limit, keywordCandidates))
			if err != nil {
				return nil, err
			}
			vectors = true
			for _, n := range near {
				if c, ok := cands[n.m.ID]; ok {
					c.vec = n.sim
				} else {
					cands[n.m.ID] = &cand{m: n.m, vec: n.sim}
				}
			}
		}
	}
	now := s.now()
	halfLife := float64(cfg.HalfLife()) * 24 * float64(time.Hour)
	out := make([]Scored, 0, len(cands))
	for _, c := range cands {
		score := c.kw
		if vectors {
			score = VectorWeight*c.vec + KeywordWeight*c.kw
		}
		if age := now.Sub(c.m.Updated); age > 0 {
			score *= math.Exp2(-float64(age) / halfLife)
		}
		if score <= 0 {
			continue
		}
		m := fromStore(c.m)
		m.Embedded = m.Embedded || (vectors && c.vec != 0)
		out = append(out, Scored{Memory: m, Score: math.Min(score, 1)})
	}
	slices.SortFunc(out, func(a, b Scored) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Entry is one recalled memory as the memory_recalled update names it.
type Entry = protocol.RecalledMemory

// Recalled is what a turn recalled: the entries and the block put in front of the
// user message in the provider request ("" when nothing was recalled).
type Recalled struct {
	Entries []Entry
	Prefix  string
}

// Recall is the recall of one turn: the memories of agent and owner matching the
// user's message, at most recall_limit of them scoring at least min_score, each
// cut to RecallEach characters and all to RecallTotal, as the block
//
//	[Memory context]
//	- <key or id>: <content>
//	…
//	[/Memory context]
//
// followed by an empty line. Nothing recalled (or memory off): a zero Recalled.
func (s *Service) Recall(ctx context.Context, agent, owner, message string) (Recalled, error) {
	cfg := s.conf().Memory
	if !cfg.IsEnabled() {
		return Recalled{}, nil
	}
	found, err := s.Search(ctx, agent, owner, message, cfg.Limit())
	if err != nil {
		return Recalled{}, err
	}
	var r Recalled
	var b strings.Builder
	left := RecallTotal
	for _, f := range found {
		if f.Score < cfg.Threshold() || left == 0 {
			break
		}
		text := cut(f.Content, min(RecallEach, left))
		left -= utf8.RuneCountInString(text)
		if b.Len() == 0 {
			b.WriteString("[Memory context]\n")
		}
		label := f.Key
		if label == "" {
			label = f.ID
		}
		b.WriteString("- " + label + ": " + text + "\n")
		r.Entries = append(r.Entries, Entry{ID: f.ID, Key: f.Key, Score: round(f.Score)})
	}
	if len(r.Entries) > 0 {
		b.WriteString("[/Memory context]\n\n")
		r.Prefix = b.String()
	}
	return r, nil
}

// cut returns the first n characters of s.
func cut(s string, n int) string {
	i := 0
	for at := range s {
		if i == n {
			return s[:at]
		}
		i++
	}
	return s
}

// round keeps four decimals of a score, which is all a reader needs.
func round(f float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 4, 64), 64)
	return r
}
