package config

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ValidationError is a configuration that breaks a rule. Key is the property at
// fault; Also lists other properties involved (the other uid of a duplicate).
// Messages never carry the value of a secret, nor of a URL (it may hold credentials).
type ValidationError struct {
	Key  string
	Also []string
	Msg  string
}

func (e *ValidationError) Error() string { return e.Msg }

// Keys returns Key and Also.
func (e *ValidationError) Keys() []string { return append([]string{e.Key}, e.Also...) }

func invalid(key, format string, args ...any) *ValidationError {
	return &ValidationError{Key: key, Msg: key + " " + fmt.Sprintf(format, args...)}
}

// namePattern is what a map key (provider, agent, profile, user) must look like, so
// that it sits inline in a property path and in a principal id ("user:<name>").
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

var envPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// MaxUID bounds uids: 2^31-1, the largest a POSIX uid_t holds portably.
const MaxUID = 1<<31 - 1

// Validate checks the whole configuration: types the decoder cannot see, ranges,
// names, references between sections (an agent's provider, a user's profiles, a
// profile's agents), unique uids, grant strings and write paths. The first problem,
// in a fixed order, is returned as a *ValidationError.
func (c Config) Validate() error {
	for _, check := range []func() *ValidationError{
		c.validateRPC, c.validateWSS, c.validateNames, c.validateProviders,
		c.validateAgents, c.validateProfiles, c.validateUsers, c.validateMCP, c.validateMemory,
		c.validateTelemetry,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func between(key string, v, lo, hi int) *ValidationError {
	if v < lo || v > hi {
		return invalid(key, "= %d: must be between %d and %d", v, lo, hi)
	}
	return nil
}

func (c Config) validateRPC() *ValidationError {
	if err := between("rpc.max_local_connections", c.RPC.MaxLocalConnections, 1, 65536); err != nil {
		return err
	}
	if err := between("rpc.upload_idle_secs", c.RPC.UploadIdleSecs, 1, 86400); err != nil {
		return err
	}
	if err := between("rpc.outbound_frames", c.RPC.OutboundFrames, 1, 1<<20); err != nil {
		return err
	}
	if err := between("rpc.outbound_bytes", c.RPC.OutboundBytes, 1, 1<<30); err != nil {
		return err
	}
	if err := between("rpc.client_tool_timeout_secs", c.RPC.ClientToolTimeoutSecs, 1, 86400); err != nil {
		return err
	}
	if err := between("rpc.replay_bytes", c.RPC.ReplayBytes, 64<<10, 16<<30); err != nil {
		return err
	}
	return between("rpc.replay_events", c.RPC.ReplayEvents, 1, 10_000_000)
}

func (c Config) validateWSS() *ValidationError {
	w := c.WSS
	if err := between("wss.port", w.Port, 1, 65535); err != nil {
		return err
	}
	if w.Bind != "localhost" && net.ParseIP(w.Bind) == nil {
		return invalid("wss.bind", "= %q: want an IP address (127.0.0.1, ::1, 0.0.0.0) or localhost", w.Bind)
	}
	for _, p := range []struct{ key, path string }{{"wss.cert_path", w.CertPath}, {"wss.key_path", w.KeyPath}} {
		if p.path != "" && !filepath.IsAbs(p.path) {
			return invalid(p.key, "= %q: must be an absolute path", p.path)
		}
	}
	if (w.CertPath == "") != (w.KeyPath == "") {
		return &ValidationError{Key: "wss.cert_path", Also: []string{"wss.key_path"},
			Msg: "wss.cert_path and wss.key_path must be set together"}
	}
	for i, o := range w.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return invalid("wss.allowed_origins", "[%d] = %q: want an origin such as https://app.example.com", i, o)
		}
	}
	return nil
}

// validateNames checks every map key, so that property paths stay unambiguous.
func (c Config) validateNames() *ValidationError {
	sections := []struct {
		name string
		keys []string
	}{
		{"providers", sortedKeys(c.Providers)},
		{"agents", sortedKeys(c.Agents)},
		{"permission_profiles", sortedKeys(c.PermissionProfiles)},
		{"users", sortedKeys(c.Users)},
	}
	for _, s := range sections {
		for _, k := range s.keys {
			if !namePattern.MatchString(k) {
				return &ValidationError{Key: s.name, Msg: fmt.Sprintf(
					"%s: the name %q must be 1-64 letters, digits, '_' or '-'", s.name, k)}
			}
		}
	}
	return nil
}

func (c Config) validateProviders() *ValidationError {
	for _, name := range sortedKeys(c.Providers) {
		p := c.Providers[name]
		key := "providers." + name
		switch p.Kind {
		case "echo", "openai", "anthropic":
		case "":
			return invalid(key+".kind", "is missing: want echo, openai or anthropic")
		default:
			return invalid(key+".kind", "= %q: want echo, openai or anthropic", p.Kind)
		}
		if p.BaseURL != "" {
			u, err := url.Parse(p.BaseURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return invalid(key+".base_url", "is not an http:// or https:// URL")
			}
		}
		if p.APIKeyEnv != "" && !envPattern.MatchString(p.APIKeyEnv) {
			return invalid(key+".api_key_env", "= %q: want an environment variable name", p.APIKeyEnv)
		}
		if p.MaxRetries != nil {
			if err := between(key+".max_retries", *p.MaxRetries, 0, MaxMaxRetries); err != nil {
				return err
			}
		}
		if p.ContextWindow < 0 {
			return invalid(key+".context_window", "= %d: must not be negative", p.ContextWindow)
		}
		for i, m := range p.Models {
			if m == "" || len(m) > 256 {
				return invalid(key+".models", "[%d] must be a model name of 1 to 256 bytes", i)
			}
		}
	}
	return nil
}

func (c Config) validateAgents() *ValidationError {
	for _, alias := range sortedKeys(c.Agents) {
		a := c.Agents[alias]
		key := "agents." + alias
		if a.Provider == "" {
			return invalid(key+".provider", "is missing")
		}
		if _, ok := c.Providers[a.Provider]; !ok {
			return invalid(key+".provider", "= %q: no [providers.%s]", a.Provider, a.Provider)
		}
		switch a.AutonomyLevel() {
		case Supervised, Full, ReadOnly:
		default:
			return invalid(key+".autonomy", "= %q: want supervised, full or readonly", a.Autonomy)
		}
		if a.MaxSteps < 0 || a.MaxSteps > 1000 {
			return invalid(key+".max_steps", "= %d: must be between 1 and 1000", a.MaxSteps)
		}
		if a.MaxContextMessages < 0 || a.MaxContextMessages > 1_000_000 {
			return invalid(key+".max_context_messages", "= %d: must be between 1 and 1000000", a.MaxContextMessages)
		}
		if f := a.CompactFraction(); !(f >= 0 && f <= 1) {
			return invalid(key+".compact_at", "= %v: must be between 0 (off) and 1", f)
		}
		if a.WorkspaceDir != "" && !filepath.IsAbs(a.WorkspaceDir) {
			return invalid(key+".workspace_dir", "= %q: must be an absolute path", a.WorkspaceDir)
		}
	}
	return nil
}

func (c Config) validateProfiles() *ValidationError {
	for _, name := range sortedKeys(c.PermissionProfiles) {
		p := c.PermissionProfiles[name]
		key := "permission_profiles." + name
		for _, g := range p.Grants {
			if !slices.Contains(KnownGrants, g) {
				return invalid(key+".grants", "has %q: want <resource>:<verb>, one of %s (admin = true grants everything)",
					g, strings.Join(KnownGrants, ", "))
			}
		}
		for _, w := range p.ConfigWritePaths {
			if err := CheckWritePath(w); err != nil {
				return invalid(key+".config_write_paths", "has %q: %v", w, err)
			}
		}
		for _, a := range p.Agents {
			if a == "*" {
				continue
			}
			if _, ok := c.Agents[a]; !ok {
				return invalid(key+".agents", "has %q: no [agents.%s] (\"*\" means every agent)", a, a)
			}
		}
	}
	return nil
}

func (c Config) validateUsers() *ValidationError {
	owner := make(map[int]string, len(c.Users))
	for _, name := range sortedKeys(c.Users) {
		u := c.Users[name]
		key := "users." + name
		if u.UID == nil {
			return invalid(key+".uid", "is missing")
		}
		if err := between(key+".uid", *u.UID, 0, MaxUID); err != nil {
			return err
		}
		if prev, dup := owner[*u.UID]; dup {
			return &ValidationError{Key: key + ".uid", Also: []string{"users." + prev + ".uid"},
				Msg: fmt.Sprintf("%s.uid = %d: users.%s has the same uid; uids must be unique", key, *u.UID, prev)}
		}
		owner[*u.UID] = name
		for _, p := range u.PermissionProfiles {
			if _, ok := c.PermissionProfiles[p]; !ok {
				return invalid(key+".permission_profiles", "has %q: no [permission_profiles.%s]", p, p)
			}
		}
	}
	return nil
}

// lineOf finds the 1-based line of a.b.c in a TOML file written in the usual shapes:
// "c = …" under a [a.b] header, "b.c = …" under [a], or a [a.b] header itself. A key
// the file does not spell out (a missing one) is placed at its table's header. It
// returns 0 when it cannot tell.
func lineOf(data []byte, key string) int {
	var table string
	headers := map[string]int{}
	s := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if strings.HasPrefix(line, "[") {
			table = strings.ReplaceAll(strings.Trim(line, "[] "), " ", "")
			if _, seen := headers[table]; !seen {
				headers[table] = n
			}
			if table == key {
				return n
			}
			continue
		}
		name, _, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		full := strings.ReplaceAll(strings.TrimSpace(name), " ", "")
		if table != "" {
			full = table + "." + full
		}
		if full == key {
			return n
		}
	}
	for k := key; ; {
		i := strings.LastIndex(k, ".")
		if i < 0 {
			return 0
		}
		k = k[:i]
		if n, ok := headers[k]; ok {
			return n
		}
	}
}

// validateTelemetry checks [metrics] listen (an IP address or localhost, and a
// port) and [telemetry] otlp_endpoint (an http or https base URL, which the
// message never repeats: it may hold credentials).
func (c Config) validateTelemetry() *ValidationError {
	if l := c.Metrics.Listen; l != "" {
		host, port, err := net.SplitHostPort(l)
		n, perr := strconv.Atoi(port)
		switch {
		case err != nil || perr != nil || n < 0 || n > 65535:
			return invalid("metrics.listen", "= %q: want host:port, such as 127.0.0.1:9464", l)
		case host != "localhost" && net.ParseIP(host) == nil:
			return invalid("metrics.listen", "= %q: want an IP address (127.0.0.1, ::1, 0.0.0.0) or localhost before the port", l)
		}
	}
	if e := c.Telemetry.OTLPEndpoint; e != "" {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return invalid("telemetry.otlp_endpoint", "is not an http:// or https:// base URL such as http://127.0.0.1:4318")
		}
	}
	return nil
}
