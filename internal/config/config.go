// Package config owns the daemon's configuration: the schema (docs/protocol.md,
// "Configuration") with its defaults, loading and validating config.toml, property
// paths (props.go), masking of secrets, and the one staging step every write goes
// through (store.go). It knows nothing of JSON-RPC or of who is asking: callers
// authorize before they write.
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

// Config is the whole configuration. A Config handed out by Live is shared: treat it
// as read-only (Clone before changing it).
type Config struct {
	RPC                RPC                          `toml:"rpc"`
	WSS                WSS                          `toml:"wss"`
	Providers          map[string]Provider          `toml:"providers"`
	Agents             map[string]Agent             `toml:"agents"`
	PermissionProfiles map[string]PermissionProfile `toml:"permission_profiles"`
	Users              map[string]User              `toml:"users"`
	Security           Security                     `toml:"security"`
	MCP                MCP                          `toml:"mcp,omitempty"`
	Metrics            Metrics                      `toml:"metrics,omitempty"`
	Telemetry          Telemetry                    `toml:"telemetry,omitempty"`
	Memory             Memory                       `toml:"memory,omitempty"`
}

// Metrics is the opt-in Prometheus listener (docs/protocol.md, "Metrics and
// traces"). It is read at start: a change applies at the daemon's next start.
type Metrics struct {
	// Listen is host:port of an HTTP listener serving /metrics; empty: none
	// (metrics/scrape still answers). Port 0 picks a free one, which the log tells.
	Listen string `toml:"listen,omitempty"`
}

// Telemetry is the opt-in OpenTelemetry trace export. It is read at start.
type Telemetry struct {
	// OTLPEndpoint is the base URL of an OTLP/HTTP collector, read as
	// OTEL_EXPORTER_OTLP_ENDPOINT is: spans go to <otlp_endpoint>/v1/traces.
	// Empty: no traces.
	OTLPEndpoint string `toml:"otlp_endpoint,omitempty"`
}

// RPC holds the limits of the RPC endpoint (docs/protocol.md, "Limits").
type RPC struct {
	// MaxLocalConnections bounds open local connections; one more is refused with -32004.
	MaxLocalConnections int `toml:"max_local_connections"`
	// UploadIdleSecs is how long a staged upload may sit idle before it is discarded.
	UploadIdleSecs int `toml:"upload_idle_secs"`
	// ReplayEvents is how many session/update events are kept per session for replay.
	ReplayEvents int `toml:"replay_events"`
	// ReplayBytes bounds, per session, what the updates an attached connection has
	// not yet been sent may come to before it is lagged: the replay log keeps them
	// beyond ReplayEvents (docs/protocol.md, "No reader is lost").
	ReplayBytes int `toml:"replay_bytes"`
	// OutboundFrames and OutboundBytes bound the notifications waiting to be written
	// to one connection, whichever fills first (docs/protocol.md, "Delivery").
	OutboundFrames int `toml:"outbound_frames"`
	OutboundBytes  int `toml:"outbound_bytes"`
	// ClientToolTimeoutSecs bounds how long a client tool's tool/call may go
	// unanswered (docs/protocol.md, "tool/call").
	ClientToolTimeoutSecs int `toml:"client_tool_timeout_secs"`
}

// WSS is the TLS WebSocket listener (docs/protocol.md, "Transport and framing").
type WSS struct {
	Enabled        bool     `toml:"enabled"`
	Bind           string   `toml:"bind"`
	Port           int      `toml:"port"`
	CertPath       string   `toml:"cert_path,omitempty"` // empty: a self-signed certificate in the data dir
	KeyPath        string   `toml:"key_path,omitempty"`
	AllowedOrigins []string `toml:"allowed_origins,omitempty"` // browser origins allowed to connect
}

// Provider is one [providers.<name>] entry.
type Provider struct {
	Kind      string `toml:"kind"` // echo, openai, anthropic
	BaseURL   string `toml:"base_url,omitempty"`
	Model     string `toml:"model,omitempty"`
	APIKey    string `toml:"api_key,omitempty" secret:"true"` // never logged or returned
	APIKeyEnv string `toml:"api_key_env,omitempty"`
	// MaxRetries is how often a model call that failed before any output with HTTP
	// 429, 503, 529 or a connection error is tried again (docs/protocol.md,
	// "Remote providers"). A pointer, because 0 (never) is a real choice: unset means
	// DefaultMaxRetries.
	MaxRetries *int `toml:"max_retries,omitempty"`
	// Models are the models session/set may choose for the provider's agents
	// (docs/protocol.md, "models/list"); empty means the provider's own list, else
	// its model.
	Models []string `toml:"models,omitempty"`
	// ContextWindow is the model's context window in tokens, reported in usage
	// updates; 0 means unknown (the echo provider's is EchoContextWindow).
	ContextWindow int `toml:"context_window,omitempty"`
}

// Retries is the entry's max_retries, DefaultMaxRetries when unset.
func (p Provider) Retries() int {
	if p.MaxRetries == nil {
		return DefaultMaxRetries
	}
	return *p.MaxRetries
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
	// CompactAt is the fraction of the context window at which the daemon compacts
	// the context on its own (docs/protocol.md, "Automatic compaction"); nil means
	// DefaultCompactAt, 0 off.
	CompactAt *float64 `toml:"compact_at,omitempty"`
	// MCPServers names the [mcp.servers] the agent uses: nil means every enabled
	// one, an empty list none.
	MCPServers *[]string `toml:"mcp_servers,omitempty"`
}

// PermissionProfile is one [permission_profiles.<name>] entry: what a user holding it
// may do. A user's profiles merge: grants, paths and agents add up, and one admin
// profile makes the user an admin.
type PermissionProfile struct {
	// Admin grants everything: every grant, every config path, every agent, every
	// session, and the admin-only methods (pairing).
	Admin bool `toml:"admin,omitempty"`
	// Grants are "<resource>:<verb>" strings from KnownGrants.
	Grants []string `toml:"grants,omitempty"`
	// ConfigWritePaths are the properties config/set may change with config:update:
	// "*" for all, "p.*" for every property under p (as "users.*"), a bare path for
	// that one property. Empty: none.
	ConfigWritePaths []string `toml:"config_write_paths,omitempty"`
	// Agents are the aliases the user may start sessions with; "*" for all. Empty: none.
	Agents []string `toml:"agents,omitempty"`
}

// User is one [users.<name>] entry: a local account other than the daemon's own.
type User struct {
	// UID is the account's numeric user id. It is a pointer because 0 (root) is a
	// real uid: an entry without uid is an error, never root by accident.
	UID                *int     `toml:"uid,omitempty"`
	PermissionProfiles []string `toml:"permission_profiles,omitempty"`
}

// Security holds the trust decisions.
type Security struct {
	// TrustDaemonUID makes a local peer with the daemon's own uid the admin operator.
	// When false, that uid needs a [users] entry like any other. Defaults to true;
	// files are decoded over the defaults, so an explicit false sticks.
	TrustDaemonUID bool `toml:"trust_daemon_uid"`
}

// Autonomy levels of an agent.
const (
	Supervised = "supervised"
	Full       = "full"
	ReadOnly   = "readonly"
)

// Grants a permission profile may list (docs/protocol.md, "Authorization"). "*" is
// not one: admin = true is the single way to grant everything.
const (
	GrantConfigRead      = "config:read"
	GrantConfigUpdate    = "config:update"
	GrantFilesCreate     = "files:create"
	GrantSessionsExecute = "sessions:execute"
	GrantSessionsRead    = "sessions:read"
	GrantSystemRead      = "system:read"
	GrantMemoryRead      = "memory:read"
	GrantMemoryWrite     = "memory:write"
)

// KnownGrants lists every valid grant string, sorted.
var KnownGrants = []string{
	GrantConfigRead, GrantConfigUpdate, GrantFilesCreate, GrantMemoryRead, GrantMemoryWrite,
	GrantSessionsExecute, GrantSessionsRead, GrantSystemRead,
}

// Defaults of the optional fields.
const (
	DefaultMaxSteps            = 25
	DefaultMaxRetries          = 2
	MaxMaxRetries              = 10
	DefaultMaxContextMessages  = 200
	DefaultMaxLocalConnections = 512
	DefaultUploadIdleSecs      = 300
	DefaultReplayEvents        = 10000
	DefaultReplayBytes         = 256 << 20
	DefaultOutboundFrames      = 2048
	DefaultOutboundBytes       = 4 << 20
	DefaultWSSBind             = "127.0.0.1"
	DefaultWSSPort             = 9781
	DefaultClientToolTimeout   = 120
)

// Workspace returns the agent's workspace directory.
func (a Agent) Workspace(alias, dataDir string) string {
	if a.WorkspaceDir != "" {
		return a.WorkspaceDir
	}
	return filepath.Join(dataDir, "workspaces", alias)
}

// DefaultCompactAt is agents.<alias>.compact_at when unset.
const DefaultCompactAt = 0.8

// CompactFraction returns the agent's compact_at, DefaultCompactAt when unset.
func (a Agent) CompactFraction() float64 {
	if a.CompactAt == nil {
		return DefaultCompactAt
	}
	return *a.CompactAt
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

// Default returns the embedded defaults: what the daemon runs on with no file.
// The built-in provider "echo" and agent "default" are present unless the file
// overrides them.
func Default() Config {
	return Config{
		RPC: RPC{
			MaxLocalConnections: DefaultMaxLocalConnections,
			UploadIdleSecs:      DefaultUploadIdleSecs,
			ReplayEvents:        DefaultReplayEvents,
			ReplayBytes:         DefaultReplayBytes,
			OutboundFrames:      DefaultOutboundFrames,
			OutboundBytes:       DefaultOutboundBytes,

			ClientToolTimeoutSecs: DefaultClientToolTimeout,
		},
		WSS:       WSS{Bind: DefaultWSSBind, Port: DefaultWSSPort},
		Providers: map[string]Provider{"echo": {Kind: "echo"}},
		Agents:    map[string]Agent{"default": {Provider: "echo", Autonomy: Supervised}},
		Security:  Security{TrustDaemonUID: true},
	}
}

// Load reads <configDir>/config.toml over the defaults and validates the result.
// Errors name the file and the key, and the line where it can be found.
func Load(configDir string) (Config, error) {
	path := filepath.Join(configDir, FileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return Default(), fmt.Errorf("reading config: %w", err)
	}
	cfg, err := parse(data)
	if err != nil {
		return cfg, describe(path, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, describeInvalid(path, data, err)
	}
	return cfg, nil
}

// parse decodes a config file over the defaults: map entries merge field by field
// with the built-in ones, and unknown keys are errors (a misspelt security setting
// must not be silently ignored).
func parse(data []byte) (Config, error) {
	cfg := Default()
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&cfg)
	return cfg, err
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
		return fmt.Errorf("%s: unknown key: %s", path, sme.String())
	}
	return fmt.Errorf("%s: %w", path, err)
}

// describeInvalid names the file, and the line of the offending key when the file
// spells it out.
func describeInvalid(path string, data []byte, err error) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		if line := lineOf(data, ve.Key); line > 0 {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
	return fmt.Errorf("%s: %w", path, err)
}
