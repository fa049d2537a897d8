package provider

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"
)

// Config is one [providers.<name>] entry.
type Config struct {
	Name      string        // the entry's name, for errors
	Kind      string        // "echo", "openai", "anthropic"
	BaseURL   string        // "" means the kind's public endpoint
	Model     string        // default model for agents that name none
	APIKey    string        // secret: never logged, never in an error
	APIKeyEnv string        // name of an env var holding the key; used when APIKey is empty
	Timeout   time.Duration // whole-request timeout; 0 means 300s
	// MaxRetries is how many times a call that failed before any output with HTTP
	// 429, 503, 529 or a connection error is tried again (docs/protocol.md,
	// "Remote providers"); 0: never.
	MaxRetries int

	// HTTPClient sends the requests of the openai and anthropic kinds. nil means a
	// client of the provider's own, on a clone of http.DefaultTransport. Its Timeout,
	// if any, applies on top of Timeout.
	HTTPClient *http.Client
}

// Default endpoints and limits.
const (
	DefaultTimeout          = 300 * time.Second
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com/"
	DefaultMaxTokens        = 4096 // anthropic's max_tokens when the request names none
)

// ErrMissingKey is wrapped by New when an anthropic entry has no API key.
var ErrMissingKey = errors.New("missing API key")

// New builds a Provider. getenv resolves APIKeyEnv (os.Getenv in production; nil
// means os.Getenv). An unknown kind wraps ErrUnknownKind. A missing key for openai
// is allowed (Ollama needs none); for anthropic it is an error naming the entry and
// the variable. A base URL that is not an absolute http(s) URL is an error.
func New(cfg Config, getenv func(string) string) (Provider, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch cfg.Kind {
	case "echo":
		return Echo{}, nil
	case "openai", "anthropic":
	case "":
		return nil, fmt.Errorf("providers.%s.kind is missing: want echo, openai or anthropic: %w", cfg.Name, ErrUnknownKind)
	default:
		return nil, fmt.Errorf("providers.%s.kind = %q: want echo, openai or anthropic: %w", cfg.Name, cfg.Kind, ErrUnknownKind)
	}

	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, &Error{Provider: cfg.Name, Message: fmt.Sprintf(
				"providers.%s.base_url = %q is not an http:// or https:// URL", cfg.Name, redactURL(cfg.BaseURL))}
		}
	}
	key := cfg.APIKey
	if key == "" && cfg.APIKeyEnv != "" {
		key = getenv(cfg.APIKeyEnv)
	}
	r := newRemote(cfg, key)

	if cfg.Kind == "openai" {
		return newOpenAI(r), nil
	}
	if key == "" {
		msg := fmt.Sprintf("no API key: set providers.%s.api_key or providers.%s.api_key_env", cfg.Name, cfg.Name)
		if cfg.APIKeyEnv != "" {
			msg = fmt.Sprintf("no API key: $%s (named by providers.%s.api_key_env) is empty or unset", cfg.APIKeyEnv, cfg.Name)
		}
		return nil, &Error{Provider: cfg.Name, Message: msg, Err: ErrMissingKey}
	}
	return newAnthropic(r), nil
}
