package session

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// Agent is the runtime view of one [agents.<alias>] entry: its provider built, its
// tools selected, its defaults applied.
type Agent struct {
	Alias              string
	Provider           provider.Provider
	Model              string
	System             string
	Workspace          string
	Autonomy           string
	Tools              map[string]tool.Tool
	MaxSteps           int
	MaxContextMessages int
	// ProviderName is the agent's [providers.<name>]; Models its models list (`models`,
	// empty: ask the provider), ContextWindow its context window in tokens (0:
	// unknown) (docs/protocol.md, "models/list").
	ProviderName  string
	Models        []string
	ContextWindow int
	// MCPServers are the [mcp.servers] the agent uses (docs/protocol.md,
	// "Tools from MCP servers"), sorted.
	MCPServers []string
	// MemoryTools are the memory tools its `tools` list names (nil: every one, as
	// for a list that names no tool at all; memory.go).
	MemoryTools map[string]bool
}

// Catalog is every agent of one configuration. It is immutable once built, so a
// config change swaps in a new Catalog while turns keep the one they started with.
type Catalog struct {
	agents map[string]*Agent
}

// BuildCatalog prepares the agent views of cfg. Nothing touches the network.
func BuildCatalog(cfg config.Config, dataDir string, getenv func(string) string) (*Catalog, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	providers := make(map[string]provider.Provider, len(cfg.Providers))
	for name, p := range cfg.Providers {
		pv, err := provider.New(provider.Config{
			Name: name, Kind: p.Kind, BaseURL: p.BaseURL, Model: p.Model,
			APIKey: p.APIKey, APIKeyEnv: p.APIKeyEnv, Timeout: 5 * time.Minute, MaxRetries: p.Retries(),
		}, getenv)
		if err != nil {
			return nil, fmt.Errorf("providers.%s: %w", name, err)
		}
		providers[name] = pv
	}
	c := &Catalog{agents: make(map[string]*Agent, len(cfg.Agents))}
	for alias, a := range cfg.Agents {
		pv, ok := providers[a.Provider]
		if !ok {
			return nil, fmt.Errorf("agents.%s.provider = %q: no such provider", alias, a.Provider)
		}
		names, memoryTools := splitMemoryTools(a.Tools)
		tools, err := selectTools(a.Tools, names)
		if err != nil {
			return nil, fmt.Errorf("agents.%s.tools: %w", alias, err)
		}
		byName := make(map[string]tool.Tool, len(tools))
		for _, t := range tools {
			byName[t.Spec().Name] = t
		}
		pc := cfg.Providers[a.Provider]
		model := a.Model
		if model == "" {
			model = pc.Model
		}
		window := pc.ContextWindow
		if pc.Kind == "echo" {
			if model == "" {
				model = provider.EchoModel
			}
			if window == 0 {
				window = provider.EchoContextWindow
			}
		}
		maxCtx := a.MaxContextMessages
		if maxCtx == 0 {
			maxCtx = config.DefaultMaxContextMessages
		}
		c.agents[alias] = &Agent{
			Alias: alias, Provider: pv, Model: model, System: a.SystemPrompt,
			Workspace: a.Workspace(alias, dataDir), Autonomy: a.AutonomyLevel(),
			Tools: byName, MaxSteps: a.Steps(), MaxContextMessages: maxCtx,
			ProviderName: a.Provider, Models: slices.Clone(pc.Models), ContextWindow: window,
			MCPServers: cfg.MCPServerNames(alias), MemoryTools: memoryTools,
		}
	}
	return c, nil
}

// Agent returns the view of alias.
func (c *Catalog) Agent(alias string) (*Agent, bool) {
	a, ok := c.agents[alias]
	return a, ok
}
