package session

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
)

// lister is a provider that lists models; fail makes the listing fail.
type lister struct {
	provider.Echo
	models []string
	fail   bool
	calls  int
}

func (l *lister) ListModels(context.Context) ([]string, error) {
	l.calls++
	if l.fail {
		return nil, errors.New("unreachable")
	}
	return l.models, nil
}

func TestProviderModelsAreCachedForTenMinutesAndFailuresForOne(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	m := &Manager{log: slog.New(slog.DiscardHandler)}
	m.models.now = func() time.Time { return now }
	l := &lister{models: []string{"a", "b"}}
	a := &Agent{Alias: "x", Provider: l, Model: "a"}
	for range 2 {
		if got, src := m.Models(t.Context(), a); !slices.Equal(got, []string{"a", "b"}) || src != SourceProvider {
			t.Fatalf("Models = %v %s", got, src)
		}
	}
	if l.calls != 1 {
		t.Errorf("listed %d times within the TTL, want 1", l.calls)
	}
	now = now.Add(ModelsCacheTTL)
	l.models = []string{"c"}
	if got, _ := m.Models(t.Context(), a); !slices.Equal(got, []string{"a", "c"}) || l.calls != 2 {
		t.Errorf("after the TTL: %v after %d listings, want [a c] (the agent's own first) after 2", got, l.calls)
	}

	f := &lister{fail: true}
	b := &Agent{Alias: "y", Provider: f, Model: "solo"}
	for range 3 {
		if got, src := m.Models(t.Context(), b); !slices.Equal(got, []string{"solo"}) || src != SourceDefault {
			t.Fatalf("a failing provider: %v %s", got, src)
		}
	}
	if f.calls != 1 {
		t.Errorf("a failing provider was asked %d times within a minute, want 1", f.calls)
	}
	now = now.Add(time.Minute)
	m.Models(t.Context(), b)
	if f.calls != 2 {
		t.Errorf("a failing provider was not asked again after a minute (%d calls)", f.calls)
	}
}
