package provider

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestNewBuildsEachKind(t *testing.T) {
	for kind, want := range map[string]string{"echo": "provider.Echo", "openai": "*provider.openAI", "anthropic": "*provider.anthropicProvider"} {
		p, err := New(Config{Name: "x", Kind: kind, APIKey: "k"}, nil)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if got := typeName(p); got != want {
			t.Errorf("kind %s built %s", kind, got)
		}
	}
}

func typeName(v any) string {
	switch v.(type) {
	case Echo:
		return "provider.Echo"
	case *openAI:
		return "*provider.openAI"
	case *anthropicProvider:
		return "*provider.anthropicProvider"
	}
	return "?"
}

func TestNewRefusesAnUnknownKind(t *testing.T) {
	for _, kind := range []string{"", "gemini", "OpenAI"} {
		_, err := New(Config{Name: "mine", Kind: kind}, nil)
		if !errors.Is(err, ErrUnknownKind) || !strings.Contains(err.Error(), "providers.mine.kind") {
			t.Errorf("kind %q: err = %v", kind, err)
		}
	}
}

func TestNewNeedsAKeyForAnthropicOnly(t *testing.T) {
	noEnv := func(string) string { return "" }
	if _, err := New(Config{Name: "local", Kind: "openai", BaseURL: "http://localhost:11434/v1"}, noEnv); err != nil {
		t.Errorf("openai without a key: %v", err)
	}

	_, err := New(Config{Name: "claude", Kind: "anthropic"}, noEnv)
	if !errors.Is(err, ErrMissingKey) || !strings.Contains(err.Error(), "providers.claude.api_key") {
		t.Errorf("err = %v", err)
	}
	_, err = New(Config{Name: "claude", Kind: "anthropic", APIKeyEnv: "MY_CLAUDE_KEY"}, noEnv)
	if !errors.Is(err, ErrMissingKey) || !strings.Contains(err.Error(), "$MY_CLAUDE_KEY") ||
		!strings.Contains(err.Error(), "providers.claude") {
		t.Errorf("err = %v", err)
	}
}

func TestNewReadsTheKeyFromTheNamedVariable(t *testing.T) {
	var header http.Header
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		header = r.Header.Clone()
		s := newSSE(w)
		s.data(chunk(`{"content":"ok"}`, "stop"))
		s.data("[DONE]")
	})
	getenv := func(name string) string {
		if name == "OA_KEY" {
			return "sk-from-var"
		}
		return ""
	}
	p, err := New(Config{Name: "oa", Kind: "openai", BaseURL: srv.URL, Model: "m", APIKeyEnv: "OA_KEY", HTTPClient: testClient(t)}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {}); err != nil {
		t.Fatal(err)
	}
	if got := header.Get("Authorization"); got != "Bearer sk-from-var" {
		t.Errorf("Authorization = %q", got)
	}

	// api_key wins over api_key_env.
	p, err = New(Config{Name: "oa", Kind: "openai", BaseURL: srv.URL, Model: "m", APIKey: "sk-inline", APIKeyEnv: "OA_KEY",
		HTTPClient: testClient(t)}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {}); err != nil {
		t.Fatal(err)
	}
	if got := header.Get("Authorization"); got != "Bearer sk-inline" {
		t.Errorf("Authorization = %q", got)
	}
}

func TestNewRefusesABaseURLThatIsNotHTTP(t *testing.T) {
	for _, u := range []string{"localhost:11434", "ftp://example.com", "http://", "://x"} {
		if _, err := New(Config{Name: "oa", Kind: "openai", BaseURL: u}, nil); err == nil ||
			!strings.Contains(err.Error(), "providers.oa.base_url") {
			t.Errorf("base URL %q: err = %v", u, err)
		}
	}
	_, err := New(Config{Name: "oa", Kind: "openai", BaseURL: "ftp://user:secret@example.com"}, nil)
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("err = %v", err)
	}
}

func TestACallWithoutAModelSaysWhereToSetOne(t *testing.T) {
	for _, kind := range []string{"openai", "anthropic"} {
		p, err := New(Config{Name: "x", Kind: kind, APIKey: "k", HTTPClient: &http.Client{Transport: roundTripFunc(
			func(*http.Request) (*http.Response, error) { t.Error("request sent"); return nil, errors.New("no") })}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Stream(context.Background(), Request{Messages: []Message{user("hi")}}, func(Delta) {})
		if pe := asError(t, err); !strings.Contains(pe.Message, "providers.x.model") {
			t.Errorf("%s: %q", kind, pe.Message)
		}
	}
}
