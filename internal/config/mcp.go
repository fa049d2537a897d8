package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
)

// MCP is the [mcp] section: the MCP servers of the daemon (docs/protocol.md,
// "Tools from MCP servers").
type MCP struct {
	Servers map[string]MCPServer `toml:"servers,omitempty"`
}

// MCPServer is one [mcp.servers.<name>] entry: a stdio server (Command) or a
// Streamable HTTP one (URL), never both.
type MCPServer struct {
	Command string            `toml:"command,omitempty"` // looked up in PATH
	Args    []string          `toml:"args,omitempty"`
	Env     map[string]string `toml:"env,omitempty" secret:"true"` // added to the daemon's environment
	Cwd     string            `toml:"cwd,omitempty"`               // default: the daemon's data dir
	URL     string            `toml:"url,omitempty"`
	// Headers go with every HTTP request; a value "${VAR}" is read from the daemon's
	// environment.
	Headers            map[string]string `toml:"headers,omitempty" secret:"true"`
	Enabled            *bool             `toml:"enabled,omitempty"`              // default true
	StartupTimeoutSecs int               `toml:"startup_timeout_secs,omitempty"` // default 10
	CallTimeoutSecs    int               `toml:"call_timeout_secs,omitempty"`    // default 120
}

// Defaults of an MCP server's timeouts, in seconds.
const (
	DefaultMCPStartupTimeout = 10
	DefaultMCPCallTimeout    = 120
	maxMCPTimeout            = 86400
)

// IsEnabled is the entry's enabled, true when unset.
func (s MCPServer) IsEnabled() bool { return s.Enabled == nil || *s.Enabled }

// StartupTimeout is startup_timeout_secs, the default when unset.
func (s MCPServer) StartupTimeout() int {
	if s.StartupTimeoutSecs > 0 {
		return s.StartupTimeoutSecs
	}
	return DefaultMCPStartupTimeout
}

// CallTimeout is call_timeout_secs, the default when unset.
func (s MCPServer) CallTimeout() int {
	if s.CallTimeoutSecs > 0 {
		return s.CallTimeoutSecs
	}
	return DefaultMCPCallTimeout
}

// MCPServerNames returns the servers agent uses, sorted: those its mcp_servers
// lists, or every enabled one when it lists none. A listed server that is disabled
// is left out.
func (c Config) MCPServerNames(alias string) []string {
	a, ok := c.Agents[alias]
	if !ok {
		return nil
	}
	var names []string
	if a.MCPServers == nil {
		for _, n := range sortedKeys(c.MCP.Servers) {
			if c.MCP.Servers[n].IsEnabled() {
				names = append(names, n)
			}
		}
		return names
	}
	for _, n := range *a.MCPServers {
		if s, ok := c.MCP.Servers[n]; ok && s.IsEnabled() {
			names = append(names, n)
		}
	}
	return names
}

// MCPNamePattern is what an MCP server's name must look like: it becomes the prefix
// of its tools' names.
var MCPNamePattern = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// headerPattern is an HTTP header name (a token).
var headerPattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func (c Config) validateMCP() *ValidationError {
	for _, name := range sortedKeys(c.MCP.Servers) {
		if !MCPNamePattern.MatchString(name) {
			return &ValidationError{Key: "mcp.servers", Msg: fmt.Sprintf(
				"mcp.servers: the name %q must be 1-32 lowercase letters, digits, '_' or '-'", name)}
		}
		s := c.MCP.Servers[name]
		key := "mcp.servers." + name
		switch {
		case s.Command == "" && s.URL == "":
			return invalid(key, "needs command (a stdio server) or url (a Streamable HTTP server)")
		case s.Command != "" && s.URL != "":
			return &ValidationError{Key: key + ".command", Also: []string{key + ".url"},
				Msg: key + " has both command and url: a server is either stdio (command) or HTTP (url)"}
		}
		if s.URL != "" {
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return invalid(key+".url", "is not an http:// or https:// URL")
			}
			if len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" {
				return invalid(key, "has url: args, env and cwd are for a stdio server (command)")
			}
			for h := range s.Headers {
				if !headerPattern.MatchString(h) {
					return invalid(key+".headers", "has %q: not an HTTP header name", h)
				}
			}
		}
		if s.Command != "" {
			if len(s.Headers) > 0 {
				return invalid(key+".headers", "is for an HTTP server (url), not a stdio one")
			}
			if s.Cwd != "" && !filepath.IsAbs(s.Cwd) {
				return invalid(key+".cwd", "= %q: must be an absolute path", s.Cwd)
			}
			for _, k := range sortedKeys(s.Env) {
				if !envPattern.MatchString(k) {
					return invalid(key+".env", "has %q: want an environment variable name", k)
				}
			}
		}
		if err := between(key+".startup_timeout_secs", s.StartupTimeout(), 1, maxMCPTimeout); err != nil {
			return err
		}
		if err := between(key+".call_timeout_secs", s.CallTimeout(), 1, maxMCPTimeout); err != nil {
			return err
		}
		if s.StartupTimeoutSecs < 0 || s.CallTimeoutSecs < 0 {
			return invalid(key, "has a negative timeout")
		}
	}
	for _, alias := range sortedKeys(c.Agents) {
		a := c.Agents[alias]
		if a.MCPServers == nil {
			continue
		}
		seen := map[string]bool{}
		for _, n := range *a.MCPServers {
			if _, ok := c.MCP.Servers[n]; !ok {
				return invalid("agents."+alias+".mcp_servers", "has %q: no [mcp.servers.%s]", n, n)
			}
			if seen[n] {
				return invalid("agents."+alias+".mcp_servers", "lists %q twice", n)
			}
			seen[n] = true
		}
	}
	return nil
}
