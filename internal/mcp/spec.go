package mcp

import (
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
)

// Transports of a server.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http" // Streamable HTTP
	TransportSSE   = "sse"  // the older HTTP+SSE transport (editors' servers)
)

// Spec is one server to run.
type Spec struct {
	Name      string
	Transport string
	// stdio
	Command string
	Args    []string
	Env     map[string]string // added to the daemon's environment
	Dir     string
	// http, sse
	URL     string
	Headers map[string]string

	StartupTimeout time.Duration
	CallTimeout    time.Duration
}

// FromConfig returns the specs of every [mcp.servers] entry of cfg that is enabled.
// A header value "${VAR}" is read from the environment through getenv.
func FromConfig(cfg config.Config, dataDir string, getenv func(string) string) []Spec {
	if getenv == nil {
		getenv = os.Getenv
	}
	var specs []Spec
	for name, s := range cfg.MCP.Servers {
		if !s.IsEnabled() {
			continue
		}
		sp := Spec{
			Name: name, Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Cwd, URL: s.URL,
			StartupTimeout: time.Duration(s.StartupTimeout()) * time.Second,
			CallTimeout:    time.Duration(s.CallTimeout()) * time.Second,
		}
		if s.Command != "" {
			sp.Transport = TransportStdio
			if sp.Dir == "" {
				sp.Dir = dataDir
			}
		} else {
			sp.Transport = TransportHTTP
			sp.Headers = make(map[string]string, len(s.Headers))
			for k, v := range s.Headers {
				if name, ok := strings.CutPrefix(v, "${"); ok && strings.HasSuffix(name, "}") {
					v = getenv(strings.TrimSuffix(name, "}"))
				}
				sp.Headers[k] = v
			}
		}
		specs = append(specs, sp)
	}
	return specs
}

// same reports whether two specs run the same server.
func (s Spec) same(o Spec) bool {
	eqMap := func(a, b map[string]string) bool {
		if len(a) != len(b) {
			return false
		}
		for k, v := range a {
			if bv, ok := b[k]; !ok || bv != v {
				return false
			}
		}
		return true
	}
	return s.Name == o.Name && s.Transport == o.Transport && s.Command == o.Command &&
		strings.Join(s.Args, "\x00") == strings.Join(o.Args, "\x00") && eqMap(s.Env, o.Env) &&
		s.Dir == o.Dir && s.URL == o.URL && eqMap(s.Headers, o.Headers) &&
		s.StartupTimeout == o.StartupTimeout && s.CallTimeout == o.CallTimeout
}

func (s Spec) startupTimeout() time.Duration {
	if s.StartupTimeout > 0 {
		return s.StartupTimeout
	}
	return config.DefaultMCPStartupTimeout * time.Second
}

func (s Spec) callTimeout() time.Duration {
	if s.CallTimeout > 0 {
		return s.CallTimeout
	}
	return config.DefaultMCPCallTimeout * time.Second
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// timeSlack is how much longer than a server's startup timeout a caller waits for
// the start to end by itself (and say why it failed).
const timeSlack = time.Second
