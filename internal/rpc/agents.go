package rpc

import (
	"context"
	"encoding/json/jsontext"
	"sort"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
)

// The agents family (docs/protocol.md, "agents/list"): which agents a caller may open
// sessions with.

func (s *Server) agentMethods() []methodRow {
	return []methodRow{{name: "agents/list", grant: auth.SessionsRead, handler: s.agentsList}}
}

type agentEntry struct {
	Alias    string `json:"alias"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Autonomy string `json:"autonomy"`
}

type agentsResult struct {
	Agents []agentEntry `json:"agents"`
}

// agentsList lists the configured agents the caller may use, by alias. The model is
// the agent's own, else its provider's ("" when neither names one). Params are
// ignored.
func (s *Server) agentsList(ctx context.Context, c *connState, params jsontext.Value) (any, error) {
	cfg := s.cfg.Config.Current()
	authority := authorityFrom(ctx)
	out := make([]agentEntry, 0, len(cfg.Agents))
	for alias, a := range cfg.Agents {
		if !authority.MayUseAgent(alias) {
			continue
		}
		model := a.Model
		if model == "" {
			model = cfg.Providers[a.Provider].Model
		}
		out = append(out, agentEntry{Alias: alias, Provider: a.Provider, Model: model, Autonomy: a.AutonomyLevel()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Alias < out[j].Alias })
	return agentsResult{Agents: out}, nil
}
