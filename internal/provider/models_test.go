package provider

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeanthropic"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

func TestListModelsOfBothKinds(t *testing.T) {
	oa := fakeopenai.New(t).SetModels(0, "gpt-a", "gpt-b")
	an := fakeanthropic.New(t).SetModels(0, "claude-x")
	for _, tc := range []struct {
		kind, url string
		want      []string
	}{
		{"openai", oa.URL(), []string{"gpt-a", "gpt-b"}},
		{"anthropic", an.URL(), []string{"claude-x"}},
	} {
		p, err := New(Config{Name: "p", Kind: tc.kind, BaseURL: tc.url, APIKey: "sk-secret", HTTPClient: testClient(t)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.(Lister).ListModels(t.Context())
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: ListModels = %v, %v; want %v", tc.kind, got, err, tc.want)
		}
	}
	if _, ok := Provider(Echo{}).(Lister); ok {
		t.Error("echo lists models; its one model is EchoModel")
	}
}

func TestListModelsFailureIsAProviderErrorWithoutTheKey(t *testing.T) {
	oa := fakeopenai.New(t).SetModels(http.StatusInternalServerError)
	p, err := New(Config{Name: "p", Kind: "openai", BaseURL: oa.URL(), APIKey: "sk-secret", HTTPClient: testClient(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.(Lister).ListModels(t.Context())
	var pe *Error
	if !errors.As(err, &pe) || pe.Status != http.StatusInternalServerError || strings.Contains(err.Error(), "sk-secret") {
		t.Errorf("ListModels error = %v, want a *Error with status 500 and no key", err)
	}
}
