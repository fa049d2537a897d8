package memory

import (
	"bytes"
	"context"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
)

// embedder is the embeddings endpoint of [memory] embeddings_provider: an
// OpenAI-compatible POST <base_url>/embeddings.
type embedder struct {
	url, key, model string
}

// defaultOpenAIBase is the base URL of an openai provider that names none.
const defaultOpenAIBase = "https://api.openai.com/v1"

// embedBatch is how many texts one embeddings request carries (reindex).
const embedBatch = 32

// embedder returns the embedder of the configuration in force, nil when memory is
// off or names no embeddings provider.
func (s *Service) embedder() *embedder {
	cfg := s.conf()
	m := cfg.Memory
	if !m.IsEnabled() || m.EmbeddingsProvider == "" {
		return nil
	}
	p, ok := cfg.Providers[m.EmbeddingsProvider]
	if !ok || p.Kind != "openai" {
		return nil
	}
	base := p.BaseURL
	if base == "" {
		base = defaultOpenAIBase
	}
	key := p.APIKey
	if key == "" && p.APIKeyEnv != "" {
		key = s.getenv(p.APIKeyEnv)
	}
	return &embedder{url: strings.TrimRight(base, "/") + "/embeddings", key: key, model: m.Model()}
}

// ErrBadVectors: the embeddings endpoint answered vectors that cannot be used (a
// wrong count, an empty or non-finite vector, or a size other than that of the
// vectors already stored for the model).
var ErrBadVectors = errors.New("memory: the embeddings endpoint answered unusable vectors")

// embed returns the embeddings of texts, one per text, checked.
func (s *Service) embed(ctx context.Context, e *embedder, texts []string) ([][]float32, error) {
	body, err := json.Marshal(map[string]any{"model": e.model, "input": texts})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("memory: embeddings request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.key != "" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("memory: embeddings request: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("memory: reading the embeddings answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("memory: embeddings endpoint answered HTTP %d: %.200s", resp.StatusCode, data)
	}
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("memory: decoding the embeddings answer: %w", err)
	}
	if len(out.Data) != len(texts) {
		return nil, fmt.Errorf("%w: %d vectors for %d texts", ErrBadVectors, len(out.Data), len(texts))
	}
	vecs := make([][]float32, len(texts))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(texts) || vecs[d.Index] != nil {
			return nil, fmt.Errorf("%w: index %d", ErrBadVectors, d.Index)
		}
		vecs[d.Index] = d.Embedding
	}
	want, err := s.dimension(ctx, e.model)
	if err != nil {
		return nil, err
	}
	for i, v := range vecs {
		if len(v) == 0 || (want != 0 && len(v) != want) || (i > 0 && len(v) != len(vecs[0])) {
			return nil, fmt.Errorf("%w: a vector of %d dimensions (want %d)", ErrBadVectors, len(v), max(want, len(vecs[0])))
		}
		for _, f := range v {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return nil, fmt.Errorf("%w: a value that is not a finite number", ErrBadVectors)
			}
		}
	}
	if want == 0 {
		s.dimMu.Lock()
		if s.dims[e.model] == 0 {
			s.dims[e.model] = len(vecs[0])
		}
		s.dimMu.Unlock()
	}
	return vecs, nil
}

// dimension is the size of the vectors of model: that of the ones stored, else of
// the first answer this Service took, else 0 (any).
func (s *Service) dimension(ctx context.Context, model string) (int, error) {
	s.dimMu.Lock()
	n, ok := s.dims[model]
	s.dimMu.Unlock()
	if ok && n > 0 {
		return n, nil
	}
	n, err := s.st.MemoryDimension(ctx, model)
	if err != nil || n == 0 {
		return 0, err
	}
	s.dimMu.Lock()
	s.dims[model] = n
	s.dimMu.Unlock()
	return n, nil
}

// Reindexed is the outcome of a reindex: how many memories it embedded, and how
// many of the agent's still have no embedding (the endpoint failed for them).
type Reindexed struct {
	Embedded int `json:"embedded"`
	Missing  int `json:"missing"`
}

// Reindex embeds every memory of agent (every owner's) that has no embedding of
// the configured model, in batches, telling progress after each batch how many
// it went through of how many there were. A batch the endpoint fails is left as
// it is (counted in Missing); a failed write ends the reindex with its error.
func (s *Service) Reindex(ctx context.Context, agent string, progress func(done, total int)) (Reindexed, error) {
	if err := s.CheckAgent(agent); err != nil {
		return Reindexed{}, err
	}
	e := s.embedder()
	if e == nil {
		return Reindexed{}, &Error{Field: "agentAlias", Reason: "embeddings_off",
			Msg: "invalid params: [memory] embeddings_provider names no openai provider: nothing to reindex with"}
	}
	total, err := s.st.CountMissingEmbeddings(ctx, agent, e.model)
	if err != nil {
		return Reindexed{}, err
	}
	var r Reindexed
	var after int64
	done := 0
	var lastErr error
	for {
		batch, next, err := s.st.MissingEmbeddings(ctx, agent, e.model, after, embedBatch)
		if err != nil {
			return r, err
		}
		if len(batch) == 0 {
			break
		}
		after = next
		texts := make([]string, len(batch))
		for i, m := range batch {
			texts[i] = m.Content
		}
		vecs, err := s.embed(ctx, e, texts)
		if err != nil {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			lastErr = err
		} else {
			for i, m := range batch {
				ok, err := s.st.SetMemoryEmbedding(ctx, m.ID, m.Content, e.model, vecs[i])
				if err != nil {
					return r, err
				}
				if ok {
					m.Embedding, m.EmbeddingModel = vecs[i], e.model
					s.vectors.put(m)
					r.Embedded++
				}
			}
		}
		done += len(batch)
		if progress != nil {
			progress(min(done, max(total, done)), max(total, done))
		}
	}
	if lastErr != nil {
		s.log.Warn("reindex: the embeddings endpoint failed for some memories", "agent", agent, "err", lastErr)
	}
	if r.Missing, err = s.st.CountMissingEmbeddings(ctx, agent, e.model); err != nil {
		return r, err
	}
	return r, nil
}
