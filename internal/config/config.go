// Package config owns the daemon's configuration: the schema with its defaults, and
// loading config.toml from the config dir. A missing file means all defaults.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/pelletier/go-toml/v2"
)

// FileName is the config file inside the config dir.
const FileName = "config.toml"

// Config is the whole configuration.
type Config struct {
	RPC       RPC                 `toml:"rpc"`
	Providers map[string]Provider `toml:"providers"`
	Agents    map[string]Agent    `toml:"agents"`
}

// Provider is one [providers.<name>] entry.
type Provider struct {
	Kind      string `toml:"kind"` // echo, openai, anthropic
	BaseURL   string `toml:"base_url,omitempty"`
	Model     string `toml:"model,omitempty"`
	APIKey    string `toml:"api_key,omitempty"` // secret: never logged or returned
	APIKeyEnv string `toml:"api_key_env,omitempty"`
}

// Agent is one [agents.<alias>] entry. Zero values mean the defaults.
type Agent struct {
	Provider           string   `toml:"provider"`
	Model              string   `toml:"model,omitempty"`
	SystemPrompt       string   `toml:"system_prompt,omitempty"`
	WorkspaceDir       string   `toml:"workspace_dir,omitempty"` // default <data dir>/workspaces/<alias>
	Autonomy           string   `toml:"autonomy,omitempty"`      // supervised (default), full, readonly
	Tools              []string `toml:"tools,omitempty"`         // default: every tool
	MaxSteps           int      `toml:"max_steps,omitempty"`     // default 25
	MaxContextMessages int      `toml:"max_context_messages,omitempty"`
}

// Autonomy levels of an agent.
const (
	Supervised = "supervised"
	Full       = "full"
	ReadOnly   = "readonly"
)

// Defaults of an agent's optional fields.
const (
	DefaultMaxSteps           = 25
	DefaultMaxContextMessages = 200
)

// Workspace returns the agent's workspace directory.
func (a Agent) Workspace(alias, dataDir string) string {
	if a.WorkspaceDir != "" {
		return a.WorkspaceDir
	}
	return filepath.Join(dataDir, "workspaces", alias)
}

// Steps returns the agent's step limit.
func (a Agent) Steps() int {
	if a.MaxSteps > 0 {
		return a.MaxSteps
	}
	return DefaultMaxSteps
}

// AutonomyLevel returns the agent's autonomy, supervised when unset.
func (a Agent) AutonomyLevel() string {
	if a.Autonomy == "" {
		return Supervised
	}
	return a.Autonomy
}

// RPC holds the limits of the RPC endpoint (SPEC §2).
type RPC struct {
	// MaxLocalConnections bounds open local connections; one more is refused with -32004.
	MaxLocalConnections int `toml:"max_local_connections"`
}

// Default returns the embedded defaults: what the daemon runs on with no file.
// The built-in provider "echo" and agent "default" are present unless the file
// overrides them.
func Default() Config {
	return Config{
		RPC:       RPC{MaxLocalConnections: 512},
		Providers: map[string]Provider{"echo": {Kind: "echo"}},
		Agents:    map[string]Agent{"default": {Provider: "echo", Autonomy: Supervised}},
	}
}

// Load reads <configDir>/config.toml over the defaults and validates the result.
// Errors name the file and, for syntax and type errors, the line and key.
func Load(configDir string) (Config, error) {
	cfg := Default()
	path := filepath.Join(configDir, FileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("reading config: %w", err)
	}
	dec := toml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&cfg); err != nil {
		return cfg, describe(path, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Validate checks ranges and references across the whole config.
func (c Config) Validate() error {
	if n := c.RPC.MaxLocalConnections; n < 1 || n > 65536 {
		return fmt.Errorf("rpc.max_local_connections = %d: must be between 1 and 65536", n)
	}
	for _, name := range sortedKeys(c.Providers) {
		p := c.Providers[name]
		switch p.Kind {
		case "echo", "openai", "anthropic":
		case "":
			return fmt.Errorf("providers.%s.kind is missing: want echo, openai or anthropic", name)
		default:
			return fmt.Errorf("providers.%s.kind = %q: want echo, openai or anthropic", name, p.Kind)
		}
	}
	for _, alias := range sortedKeys(c.Agents) {
		a := c.Agents[alias]
		if a.Provider == "" {
			return fmt.Errorf("agents.%s.provider is missing", alias)
		}
		if _, ok := c.Providers[a.Provider]; !ok {
			return fmt.Errorf("agents.%s.provider = %q: no [providers.%s]", alias, a.Provider, a.Provider)
		}
		switch a.AutonomyLevel() {
		case Supervised, Full, ReadOnly:
		default:
			return fmt.Errorf("agents.%s.autonomy = %q: want supervised, full or readonly", alias, a.Autonomy)
		}
		if a.MaxSteps < 0 || a.MaxSteps > 1000 {
			return fmt.Errorf("agents.%s.max_steps = %d: must be between 1 and 1000", alias, a.MaxSteps)
		}
		if a.MaxContextMessages < 0 {
			return fmt.Errorf("agents.%s.max_context_messages = %d: must be positive", alias, a.MaxContextMessages)
		}
		if a.WorkspaceDir != "" && !filepath.IsAbs(a.WorkspaceDir) {
			return fmt.Errorf("agents.%s.workspace_dir = %q: must be an absolute path", alias, a.WorkspaceDir)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func describe(path string, err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		if key := de.Key(); len(key) > 0 {
			return fmt.Errorf("%s:%d:%d: key %s: %s", path, row, col, key, de.Error())
		}
		return fmt.Errorf("%s:%d:%d: %s", path, row, col, de.Error())
	}
	var sme *toml.StrictMissingError
	if errors.As(err, &sme) {
		return fmt.Errorf("%s: %s", path, sme.String())
	}
	return fmt.Errorf("%s: %w", path, err)
}
