package config

import "math"

// Memory is the [memory] section: what the agents remember between sessions (the
// "Memory" section of docs/protocol.md). Zero values mean the defaults below.
type Memory struct {
	Enabled *bool `toml:"enabled,omitempty"` // default true
	// EmbeddingsProvider names an openai-kind [providers.<name>] whose
	// /v1/embeddings embeds memories and queries; empty: keyword search only.
	EmbeddingsProvider string `toml:"embeddings_provider,omitempty"`
	// EmbeddingsModel is the embeddings model (default DefaultEmbeddingsModel).
	EmbeddingsModel string `toml:"embeddings_model,omitempty"`
	// RecallLimit is how many memories a turn recalls at most (default 5).
	RecallLimit int `toml:"recall_limit,omitempty"`
	// MinScore is the least score a recalled memory has (default 0.2); a pointer,
	// because 0 (recall whatever matches) is a real choice.
	MinScore *float64 `toml:"min_score,omitempty"`
	// HalfLifeDays is the half-life of a memory's score since its last update
	// (default 7).
	HalfLifeDays int `toml:"half_life_days,omitempty"`
}

// Defaults of [memory].
const (
	DefaultRecallLimit     = 5
	DefaultMinScore        = 0.2
	DefaultHalfLifeDays    = 7
	DefaultEmbeddingsModel = "text-embedding-3-small"
	maxRecallLimit         = 100
	maxHalfLifeDays        = 36500
)

// IsEnabled is enabled, true when unset.
func (m Memory) IsEnabled() bool { return m.Enabled == nil || *m.Enabled }

// Limit is recall_limit with its default.
func (m Memory) Limit() int {
	if m.RecallLimit > 0 {
		return m.RecallLimit
	}
	return DefaultRecallLimit
}

// Threshold is min_score with its default.
func (m Memory) Threshold() float64 {
	if m.MinScore == nil {
		return DefaultMinScore
	}
	return *m.MinScore
}

// HalfLife is half_life_days with its default.
func (m Memory) HalfLife() int {
	if m.HalfLifeDays > 0 {
		return m.HalfLifeDays
	}
	return DefaultHalfLifeDays
}

// Model is embeddings_model with its default.
func (m Memory) Model() string {
	if m.EmbeddingsModel != "" {
		return m.EmbeddingsModel
	}
	return DefaultEmbeddingsModel
}

func (c Config) validateMemory() *ValidationError {
	m := c.Memory
	if m.EmbeddingsProvider != "" {
		p, ok := c.Providers[m.EmbeddingsProvider]
		switch {
		case !ok:
			return invalid("memory.embeddings_provider", "= %q: no such provider", m.EmbeddingsProvider)
		case p.Kind != "openai":
			return invalid("memory.embeddings_provider", "= %q: the provider's kind is %q, want openai", m.EmbeddingsProvider, p.Kind)
		}
	}
	if len(m.EmbeddingsModel) > 256 {
		return invalid("memory.embeddings_model", "is longer than 256 bytes")
	}
	if err := between("memory.recall_limit", m.RecallLimit, 0, maxRecallLimit); err != nil {
		return err
	}
	if m.MinScore != nil && (math.IsNaN(*m.MinScore) || *m.MinScore < 0 || *m.MinScore > 1) {
		return invalid("memory.min_score", "= %v: must be between 0 and 1", *m.MinScore)
	}
	return between("memory.half_life_days", m.HalfLifeDays, 0, maxHalfLifeDays)
}
