package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
)

// Session controls (docs/protocol.md, "Session controls"): the mode, model and title
// session/set chooses, durable, applied from the next model call.

// Modes are the autonomy levels (docs/protocol.md, "Turns and session/update"), least
// permissive first.
var Modes = []string{config.ReadOnly, config.Supervised, config.Full}

// TitleMaxSet is the most characters a title set by session/set has.
const TitleMaxSet = 200

// SetParams are the params of session/set; nil leaves a control as it is.
type SetParams struct {
	Mode  *string
	Model *string
	Title *string
}

// ControlsResult is what session/set answers: the session's controls now.
type ControlsResult struct {
	SessionID string `json:"sessionId"`
	Mode      string `json:"mode"`
	Model     string `json:"model"`
	Title     string `json:"title"`
}

// Mode is the session's mode: the one session/set chose, else the agent's autonomy.
func (s *Session) Mode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modeLocked()
}

func (s *Session) modeLocked() string {
	if s.ctl.Mode != "" {
		return s.ctl.Mode
	}
	return s.Agent.Autonomy
}

// Model is the session's model: the one session/set chose, else the agent's.
func (s *Session) Model() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modelLocked()
}

func (s *Session) modelLocked() string {
	if s.ctl.Model != "" {
		return s.ctl.Model
	}
	return s.Agent.Model
}

// controls are the model and autonomy of the next model call (agent.Turn.Controls).
func (s *Session) controls() (model, autonomy string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modelLocked(), s.modeLocked()
}

// Title is the session's title: the one session/set chose, else the first line of
// its first user message (docs/protocol.md, "session/list").
func (s *Session) Title(ctx context.Context) string {
	s.mu.Lock()
	title := s.ctl.Title
	s.mu.Unlock()
	if title != "" {
		return title
	}
	rows, _, err := s.mgr.st.Messages(ctx, s.ID, 1, 1)
	if err != nil || len(rows) == 0 || rows[0].Role != string(llm.RoleUser) {
		return ""
	}
	return Title(rows[0].Text)
}

// Set applies session/set to the session id, restoring it when it is not live.
func (m *Manager) Set(ctx context.Context, id string, c Caller, p SetParams) (ControlsResult, error) {
	s, err := m.Obtain(ctx, id, c)
	if err != nil {
		return ControlsResult{}, err
	}
	return s.set(ctx, c, p)
}

func (s *Session) set(ctx context.Context, c Caller, p SetParams) (ControlsResult, error) {
	if p.Mode != nil {
		rank := slices.Index(Modes, *p.Mode)
		if rank < 0 {
			return ControlsResult{}, errParam("mode", "",
				fmt.Sprintf("invalid params: mode %q: want readonly, supervised or full", *p.Mode))
		}
		if !c.Admin && rank > slices.Index(Modes, s.Agent.Autonomy) {
			return ControlsResult{}, &Error{Kind: Forbidden,
				Msg: fmt.Sprintf("forbidden: mode %s is more permissive than agent %s's autonomy, %s; only an admin may choose it",
					*p.Mode, s.Agent.Alias, s.Agent.Autonomy),
				Details: map[string]any{"reason": "mode_not_allowed", "mode": *p.Mode, "autonomy": s.Agent.Autonomy}}
		}
	}
	if p.Model != nil {
		models, _ := s.mgr.Models(ctx, s.Agent)
		if !slices.Contains(models, *p.Model) {
			return ControlsResult{}, &Error{Kind: Invalid,
				Msg:     fmt.Sprintf("invalid params: model %q is not one of agent %s's models", *p.Model, s.Agent.Alias),
				Details: map[string]any{"param": "model", "models": models}}
		}
	}
	if p.Title != nil {
		if err := checkTitle(*p.Title); err != nil {
			return ControlsResult{}, err
		}
	}

	s.ctlMu.Lock()
	defer s.ctlMu.Unlock()
	s.mu.Lock()
	prev := s.ctl
	s.mu.Unlock()
	next := prev
	if p.Mode != nil {
		next.Mode = *p.Mode
	}
	if p.Model != nil {
		next.Model = *p.Model
	}
	if p.Title != nil {
		next.Title = *p.Title
	}
	if next != prev {
		if err := s.mgr.st.SetControls(ctx, s.ID, next); err != nil {
			s.mgr.log.Error("storing session controls", "session", s.ID, "err", err)
			return ControlsResult{}, errStorage(err)
		}
	}
	s.mu.Lock()
	before := [2]string{s.modeLocked(), s.modelLocked()}
	s.ctl = next
	after := [2]string{s.modeLocked(), s.modelLocked()}
	s.mu.Unlock()
	res := ControlsResult{SessionID: s.ID, Mode: after[0], Model: after[1], Title: s.Title(ctx)}
	if before != after || prev.Title != next.Title {
		s.publish(&Update{Type: SessionInfo, Mode: res.Mode, Model: res.Model, Title: res.Title})
	}
	return res, nil
}

// checkTitle accepts a title of 1 to TitleMaxSet characters on one line.
func checkTitle(title string) error {
	n := utf8.RuneCountInString(title)
	if strings.TrimSpace(title) == "" || n > TitleMaxSet || !utf8.ValidString(title) ||
		strings.ContainsFunc(title, unicode.IsControl) {
		return errParam("title", "", fmt.Sprintf("invalid params: title must be 1 to %d characters on one line", TitleMaxSet))
	}
	return nil
}

// Where a models list came from (models/list's source).
const (
	SourceConfig   = "config"
	SourceProvider = "provider"
	SourceDefault  = "default"
)

// How long a provider's own models list is used before it is asked again, and
// how long a failure to list is remembered (so that a provider that does not
// answer is not waited for by every call).
const (
	ModelsCacheTTL = 10 * time.Minute
	modelsFailTTL  = time.Minute
)

// modelCache holds the providers' own model lists.
type modelCache struct {
	mu  sync.Mutex
	by  map[provider.Provider]cachedModels
	now func() time.Time
}

type cachedModels struct {
	models []string // nil: the listing failed
	until  time.Time
}

// Models are the models a's sessions may choose and where the list came from:
// providers.<name>.models when set, else the provider's own list when it answers
// (cached ModelsCacheTTL), else the agent's model. The agent's own model is always
// among them (first when a list lacked it), so a session can go back to it.
func (m *Manager) Models(ctx context.Context, a *Agent) ([]string, string) {
	withOwn := func(models []string) []string {
		if a.Model != "" && !slices.Contains(models, a.Model) {
			models = append([]string{a.Model}, models...)
		}
		return models
	}
	if len(a.Models) > 0 {
		return withOwn(slices.Clone(a.Models)), SourceConfig
	}
	if l, ok := a.Provider.(provider.Lister); ok {
		if models := m.providerModels(ctx, a, l); len(models) > 0 {
			return withOwn(models), SourceProvider
		}
	}
	return withOwn([]string{}), SourceDefault
}

func (m *Manager) providerModels(ctx context.Context, a *Agent, l provider.Lister) []string {
	c := &m.models
	c.mu.Lock()
	if c.by == nil {
		c.by = make(map[provider.Provider]cachedModels)
	}
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	if e, ok := c.by[a.Provider]; ok && now().Before(e.until) {
		c.mu.Unlock()
		return slices.Clone(e.models)
	}
	c.mu.Unlock()
	models, err := l.ListModels(ctx)
	e := cachedModels{models: models, until: now().Add(ModelsCacheTTL)}
	if err != nil || len(models) == 0 {
		m.log.Warn("the provider did not list its models; using the agent's model", "provider", a.ProviderName, "err", err)
		if ctx.Err() != nil {
			return nil // the caller went away: nothing learnt about the provider
		}
		e = cachedModels{until: now().Add(modelsFailTTL)}
	}
	c.mu.Lock()
	for p, old := range c.by { // providers of an earlier configuration go once expired
		if !now().Before(old.until) {
			delete(c.by, p)
		}
	}
	c.by[a.Provider] = e
	c.mu.Unlock()
	return slices.Clone(e.models)
}

// ModelEntry is one model of models/list; Current marks the session's model (the
// agent's, when listed by agent).
type ModelEntry struct {
	ID      string `json:"id"`
	Current bool   `json:"current"`
}

// ListModels answers models/list for an agent (sessionID "") or a session.
func (m *Manager) ListModels(ctx context.Context, c Caller, alias, sessionID string) ([]ModelEntry, string, error) {
	var a *Agent
	current := ""
	if sessionID != "" {
		s, err := m.Obtain(ctx, sessionID, c)
		if err != nil {
			return nil, "", err
		}
		a, current = s.Agent, s.Model()
	} else {
		var ok bool
		if a, ok = m.catalog.Load().Agent(alias); !ok {
			return nil, "", errParam("agentAlias", "unknown_agent", fmt.Sprintf("unknown agent %q", alias))
		}
		current = a.Model
	}
	models, source := m.Models(ctx, a)
	out := make([]ModelEntry, len(models))
	for i, id := range models {
		out[i] = ModelEntry{ID: id, Current: id == current}
	}
	return out, source, nil
}
