// Package memory owns the agents' memories (docs/protocol.md, "Memory"): what a
// memory may hold, storing and forgetting it, searching by keyword (FTS5 BM25) and,
// with an embeddings provider, by cosine similarity, the recall of each turn, and
// the core of the memory tools. Rows live in the store (internal/store/memory.go);
// this package never writes SQL, and it knows nothing of sessions or JSON-RPC.
//
// A memory belongs to an agent and an owner principal: every call names both, and
// only the RPCs of an admin may pass an empty owner (every owner's).
package memory

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// Limits of docs/protocol.md, "Memory".
const (
	MaxContent    = 8000 // characters of one memory
	MaxKey        = 200  // characters of a key
	MaxTags       = 16
	RecallEach    = 800  // characters of one recalled memory at most
	RecallTotal   = 4000 // characters of all the memories one turn recalls
	MaxListLimit  = 200
	DefaultListed = 50
	// VectorWeight and KeywordWeight mix the two scores when embeddings are on.
	VectorWeight  = 0.7
	KeywordWeight = 0.3
	// keywordCandidates is how many keyword hits, and how many vector hits, a search
	// scores at least (four times the memories it returns when that is more).
	keywordCandidates = 20
)

// validTag reports whether t is 1 to 64 letters, digits or "_.:/-". (Written out:
// the regexp of it, a Unicode class repeated 64 times, compiled to 2.5 MB at start.)
func validTag(t string) bool {
	n := 0
	for _, r := range t {
		n++
		if n > 64 || !unicode.IsLetter(r) && !unicode.IsNumber(r) && !strings.ContainsRune("_.:/-", r) {
			return false
		}
	}
	return n > 0 // an invalid byte reads as U+FFFD, neither letter nor digit
}

// Error is bad input: Field names the parameter, Reason says what is wrong
// (empty, too_long, bad_tag, unknown_agent, not_found).
type Error struct {
	Field, Reason, Msg string
}

func (e *Error) Error() string { return e.Msg }

// ErrNotFound: no such memory, or one the caller may not see (the same answer).
var ErrNotFound = errors.New("memory: not found")

// Options build a Service.
type Options struct {
	Store *store.Store
	// Config returns the configuration in force ([memory], [providers], [agents]).
	Config func() config.Config
	// Getenv reads a provider's api_key_env (nil: none set).
	Getenv func(string) string
	Logger *slog.Logger
	// HTTP is the client of the embeddings requests (nil: one with a 30 s timeout).
	HTTP *http.Client
	// Now is the clock of the decay (nil: time.Now).
	Now func() time.Time
}

// Service is the memories of every agent. It is safe for concurrent use.
type Service struct {
	st     *store.Store
	conf   func() config.Config
	getenv func(string) string
	log    *slog.Logger
	http   *http.Client
	now    func() time.Time

	vectors vectorCache
	terms   termCounts // the words' counts of memories (terms.go)
	dimMu   sync.Mutex
	dims    map[string]int // per embeddings model, the size of its vectors
}

// New returns the Service over opts.Store.
func New(opts Options) *Service {
	s := &Service{st: opts.Store, conf: opts.Config, getenv: opts.Getenv, log: opts.Logger, http: opts.HTTP, now: opts.Now,
		dims: map[string]int{}}
	if s.getenv == nil {
		s.getenv = func(string) string { return "" }
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.http == nil {
		s.http = &http.Client{Timeout: 30 * time.Second}
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.vectors.scopes = map[scope]*vectorScope{}
	return s
}

// Start checks the full-text index, making or rebuilding it when it is missing or
// damaged; the daemon calls it once, before serving.
func (s *Service) Start(ctx context.Context) error {
	did, err := s.st.EnsureMemoryIndex(ctx)
	if err != nil {
		return err
	}
	if did != "" {
		s.log.Info("memory index "+did, "index", "memories_fts")
	}
	return nil
}

// Enabled reports whether [memory] is on.
func (s *Service) Enabled() bool { return s.conf().Memory.IsEnabled() }

// Memory is one memory as clients see it.
type Memory struct {
	ID       string    `json:"id"`
	Agent    string    `json:"agent"`
	Owner    string    `json:"owner"`
	Key      string    `json:"key,omitzero"`
	Content  string    `json:"content"`
	Tags     []string  `json:"tags"`
	Score    *float64  `json:"score,omitzero"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	Embedded bool      `json:"embedded"`
}

func fromStore(m store.Memory) Memory {
	return Memory{ID: m.ID, Agent: m.Agent, Owner: m.Owner, Key: m.Key, Content: m.Content, Tags: m.Tags,
		Created: m.Created, Updated: m.Updated, Embedded: m.EmbeddingModel != ""}
}

// PutParams are a memory to store.
type PutParams struct {
	Agent, Owner string
	Content      string
	Key          string
	Tags         []string
}

// CheckAgent fails with an unknown_agent Error for an agent the configuration lacks.
func (s *Service) CheckAgent(alias string) error {
	if _, ok := s.conf().Agents[alias]; !ok {
		return &Error{Field: "agentAlias", Reason: "unknown_agent", Msg: fmt.Sprintf("invalid params: unknown agent %q", alias)}
	}
	return nil
}

func (p *PutParams) check() error {
	p.Content = strings.TrimSpace(p.Content)
	switch n := utf8.RuneCountInString(p.Content); {
	case n == 0:
		return &Error{Field: "content", Reason: "empty", Msg: "invalid params: content is empty"}
	case n > MaxContent:
		return &Error{Field: "content", Reason: "too_long", Msg: fmt.Sprintf("invalid params: content has %d characters, at most %d", n, MaxContent)}
	case !utf8.ValidString(p.Content):
		return &Error{Field: "content", Reason: "bad_text", Msg: "invalid params: content is not valid UTF-8"}
	}
	if strings.TrimSpace(p.Key) != p.Key || utf8.RuneCountInString(p.Key) > MaxKey || strings.ContainsAny(p.Key, "\n\r") {
		return &Error{Field: "key", Reason: "bad_key", Msg: fmt.Sprintf("invalid params: a key has at most %d characters, on one line, without surrounding spaces", MaxKey)}
	}
	if len(p.Tags) > MaxTags {
		return &Error{Field: "tags", Reason: "too_many", Msg: fmt.Sprintf("invalid params: at most %d tags", MaxTags)}
	}
	seen := map[string]bool{}
	tags := make([]string, 0, len(p.Tags))
	for i, t := range p.Tags {
		if !validTag(t) {
			return &Error{Field: "tags", Reason: "bad_tag", Msg: fmt.Sprintf("invalid params: tags[%d] = %q: a tag is 1 to 64 letters, digits or _ . : / -", i, t)}
		}
		if !seen[t] {
			seen[t] = true
			tags = append(tags, t)
		}
	}
	p.Tags = tags
	return nil
}

// Put stores a memory (replacing the one of the same key, if any) and returns it.
// With embeddings on, its content is embedded first; when that fails the memory
// is stored all the same, searchable by keyword, and a reindex embeds it later.
// A failed write is an error: nothing was stored.
func (s *Service) Put(ctx context.Context, p PutParams) (Memory, error) {
	if err := s.CheckAgent(p.Agent); err != nil {
		return Memory{}, err
	}
	if err := p.check(); err != nil {
		return Memory{}, err
	}
	m := store.Memory{ID: newID(), Agent: p.Agent, Owner: p.Owner, Key: p.Key, Content: p.Content, Tags: p.Tags}
	if e := s.embedder(); e != nil {
		vecs, err := s.embed(ctx, e, []string{p.Content})
		if err != nil {
			s.log.Warn("embedding a memory failed; it is stored for keyword search only", "agent", p.Agent, "err", err)
		} else {
			m.Embedding, m.EmbeddingModel = vecs[0], e.model
		}
	}
	s.terms.wrote()
	out, _, err := s.st.PutMemory(ctx, m)
	s.terms.wrote()
	if err != nil {
		return Memory{}, err
	}
	s.vectors.put(out)
	return fromStore(out), nil
}

// Delete forgets the memory id of owner (any owner's when admin). A memory of
// another owner answers like a missing one.
func (s *Service) Delete(ctx context.Context, id, owner string, admin bool) error {
	if id == "" {
		return &Error{Field: "id", Reason: "empty", Msg: "invalid params: id is required"}
	}
	if admin {
		owner = ""
	}
	s.terms.wrote()
	m, err := s.st.DeleteMemory(ctx, id, owner)
	s.terms.wrote()
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return err
	}
	s.vectors.remove(m)
	return nil
}

// ListParams select memories: with Query, the best matches by score; without,
// the newest first, by pages.
type ListParams struct {
	Agent, Owner string
	Admin        bool // every owner's
	Query        string
	Limit        int
	Cursor       string
}

// List lists memories by p; it returns the cursor of the next page ("" for none).
func (s *Service) List(ctx context.Context, p ListParams) ([]Memory, string, error) {
	if p.Agent != "" || p.Query != "" {
		if err := s.CheckAgent(p.Agent); err != nil {
			return nil, "", err
		}
	}
	switch {
	case p.Limit < 0 || p.Limit > MaxListLimit:
		return nil, "", &Error{Field: "limit", Reason: "out_of_range", Msg: fmt.Sprintf("invalid params: limit must be between 1 and %d", MaxListLimit)}
	case p.Limit == 0:
		p.Limit = DefaultListed
	}
	owner := p.Owner
	if p.Admin {
		owner = ""
	}
	if strings.TrimSpace(p.Query) != "" {
		if p.Cursor != "" {
			return nil, "", &Error{Field: "cursor", Reason: "bad_cursor", Msg: "invalid params: a search has no pages"}
		}
		found, err := s.Search(ctx, p.Agent, owner, p.Query, p.Limit)
		if err != nil {
			return nil, "", err
		}
		out := make([]Memory, len(found))
		for i, f := range found {
			out[i] = f.Memory
			score := f.Score
			out[i].Score = &score
		}
		return out, "", nil
	}
	rows, next, err := s.st.ListMemories(ctx, store.MemoryFilter{Agent: p.Agent, Owner: owner, Cursor: p.Cursor, Limit: p.Limit})
	if errors.Is(err, store.ErrBadCursor) {
		return nil, "", &Error{Field: "cursor", Reason: "bad_cursor", Msg: "invalid params: cursor is not one a listing gave"}
	}
	if err != nil {
		return nil, "", err
	}
	out := make([]Memory, len(rows))
	for i, m := range rows {
		out[i] = fromStore(m)
	}
	return out, next, nil
}

// Get returns the memory id if owner (or an admin) may see it.
func (s *Service) Get(ctx context.Context, id, owner string, admin bool) (Memory, error) {
	m, err := s.st.GetMemory(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !admin && m.Owner != owner) {
		return Memory{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Memory{}, err
	}
	return fromStore(m), nil
}

func newID() string { return "mem_" + strings.ToLower(rand.Text()[:16]) }
