package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// errNoSuchSession: neither live nor stored.
var errNoSuchSession = errors.New("no such session")

// obtain returns the live session id or restores it from the store (docs/protocol.md,
// "Durable sessions"): an interrupted turn is recovered first, the model context is
// rebuilt from the latest snapshot and later checkpoints, and seq continues after its
// durable mark. forNew selects the answers of session/new (session_id_taken) over
// those of the other methods (not found). errNoSuchSession when the id is unknown
// everywhere.
func (m *Manager) obtain(ctx context.Context, id string, c Caller, forNew bool) (*Session, error) {
	foreign := func() error {
		if forNew {
			return errTaken(id)
		}
		return errNotFound(id)
	}
	m.mu.Lock()
	if s, ok := m.sessions[id]; ok {
		m.mu.Unlock()
		if !c.owns(s) {
			return nil, foreign()
		}
		return s, nil
	}
	m.mu.Unlock()

	row, err := m.st.Session(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errNoSuchSession
	case err != nil:
		m.log.Error("reading a session row", "session", id, "err", err)
		return nil, errStorage(err)
	case !c.Admin && row.Owner != c.Principal:
		return nil, foreign()
	case row.KilledAt != nil:
		return nil, errKilled(id)
	case row.Surface != store.SurfaceRPC:
		// Another interaction surface's row: left untouched for its own recovery.
		return nil, foreign()
	}
	agent, ok := m.catalog.Load().Agent(row.Agent)
	if !ok {
		return nil, &Error{Kind: Invalid,
			Msg:     fmt.Sprintf("session %s belongs to agent %q, which is no longer configured", id, row.Agent),
			Details: map[string]any{"reason": "unknown_agent", "agentAlias": row.Agent}}
	}
	recovered, err := m.st.Recover(ctx, id)
	if err != nil {
		m.log.Error("recovering a session", "session", id, "err", err)
		return nil, errStorage(err)
	}
	history, historyIDs, err := m.st.ContextIDs(ctx, id)
	if err != nil {
		m.log.Error("rebuilding a session's model context", "session", id, "err", err)
		return nil, errStorage(err)
	}
	mark, err := m.st.SeqMark(ctx, id)
	if err != nil {
		m.log.Error("reading a session's seq mark", "session", id, "err", err)
		return nil, errStorage(err)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[id]; ok { // restored by a racing call meanwhile
		return s, nil
	}
	if len(m.sessions) >= m.opts.MaxSessions {
		return nil, errLimit(m.opts.MaxSessions)
	}
	s := newSession(m, id, row.Owner, agent, row.Workspace, mark) // nothing of before the restart waits for the replay log
	s.context, s.contextIDs = history, historyIDs
	s.ctl = row.Controls
	m.sessions[id] = s
	m.countLocked()
	m.log.Info("session restored", "session", id, "agent", row.Agent, "recoveredTurns", recovered,
		"contextMessages", len(history))
	return s, nil
}

// Kill tombstones a session (docs/protocol.md, "Durable sessions"): its history
// stays, it is never restored again.
func (m *Manager) Kill(ctx context.Context, id string, c Caller) error {
	return m.retire(ctx, id, c, store.OpKill, func(ctx context.Context) error {
		return m.st.Kill(ctx, id, time.Now())
	})
}

// Delete removes a session's durable row and checkpoints, then the live session.
func (m *Manager) Delete(ctx context.Context, id string, c Caller) error {
	return m.retire(ctx, id, c, store.OpDelete, func(ctx context.Context) error {
		return m.st.Delete(ctx, id)
	})
}

// retire is kill and delete: cancellation is signalled before the fallible SQLite
// step (the seed's order). An idle live session stays as it was when that step
// fails; a running one was already removed by hard cancellation, and its durable
// row and checkpoint remain for a later recovery.
func (m *Manager) retire(ctx context.Context, id string, c Caller, op string, step func(context.Context) error) error {
	m.mu.Lock()
	live, isLive := m.sessions[id]
	if isLive && !c.owns(live) {
		m.mu.Unlock()
		return errNotFound(id)
	}
	running := isLive && !live.idle()
	if running {
		delete(m.sessions, id)
		m.countLocked()
	}
	m.mu.Unlock()

	if running {
		live.shutdown(fmt.Errorf("session/%s", op))
	} else if !isLive {
		row, err := m.st.Session(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return errNotFound(id)
		case err != nil:
			m.log.Error("reading a session row", "session", id, "err", err)
			return errStorage(err)
		case !c.Admin && row.Owner != c.Principal:
			return errNotFound(id)
		}
	}
	if err := step(ctx); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errNotFound(id)
		}
		m.log.Error("session "+op+" failed in storage", "session", id, "err", err, "liveKept", isLive && !running)
		return errStorage(err)
	}
	if isLive && !running {
		m.mu.Lock()
		if m.sessions[id] == live {
			delete(m.sessions, id)
			m.countLocked()
		}
		m.mu.Unlock()
		live.shutdown(fmt.Errorf("session/%s", op))
	}
	return nil
}

// ListEntry is one session of session/list.
type ListEntry struct {
	SessionID    string `json:"sessionId"`
	AgentAlias   string `json:"agentAlias"`
	CreatedAt    string `json:"createdAt"`
	LastActivity string `json:"lastActivity"`
	MessageCount int    `json:"messageCount"`
	State        string `json:"state"` // running, idle (live), closed (durable only), killed
	WorkspaceDir string `json:"workspaceDir"`
	Title        string `json:"title"` // docs/protocol.md, "session/list": see Title; the one session/set chose
	Usage        Usage  `json:"usage"` // the session's totals (docs/protocol.md, "session/list")
}

// TitleMax is the most characters a session's title has.
const TitleMax = 80

// Title is the first line of a session's first user message, at most TitleMax
// characters ("" before any).
func Title(firstPrompt string) string {
	line, _, _ := strings.Cut(firstPrompt, "\n")
	line = strings.TrimSpace(line)
	if r := []rune(line); len(r) > TitleMax {
		line = string(r[:TitleMax])
	}
	return line
}

// ListDurable pages through the sessions the caller may see, live and durable.
func (m *Manager) ListDurable(ctx context.Context, c Caller, limit int, cursor string) ([]ListEntry, string, error) {
	owner := c.Principal
	if c.Admin {
		owner = ""
	}
	rows, next, err := m.st.ListSessions(ctx, owner, limit, cursor)
	if errors.Is(err, store.ErrBadCursor) {
		return nil, "", errParam("cursor", "", "invalid params: unknown cursor")
	}
	if err != nil {
		m.log.Error("listing sessions", "err", err)
		return nil, "", errStorage(err)
	}
	out := make([]ListEntry, 0, len(rows))
	for _, r := range rows {
		e := ListEntry{
			SessionID: r.ID, AgentAlias: r.Agent, MessageCount: r.MessageCount,
			CreatedAt: stamp(r.CreatedAt), LastActivity: stamp(r.LastActivity), State: "closed",
			WorkspaceDir: r.Workspace, Title: Title(r.FirstPrompt),
			Usage: Usage{InputTokens: r.Totals.InputTokens, OutputTokens: r.Totals.OutputTokens},
		}
		if r.Controls.Title != "" {
			e.Title = r.Controls.Title
		}
		m.mu.Lock()
		live, ok := m.sessions[r.ID]
		m.mu.Unlock()
		switch {
		case r.KilledAt != nil:
			e.State = "killed"
		case ok:
			e.State = live.State()
		}
		out = append(out, e)
	}
	return out, next, nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Message is one row of session/messages.
type Message struct {
	Index       int    `json:"index"`
	Role        string `json:"role"`
	Text        string `json:"text"`
	ToolCallID  string `json:"toolCallId,omitzero"`
	Name        string `json:"name,omitzero"`
	IsError     bool   `json:"isError,omitzero"`
	Interrupted bool   `json:"interrupted,omitzero"`
}

// Messages returns the visible transcript rows with index < before, the last limit
// of them, ascending, and the total. before < 0 means all.
func (m *Manager) Messages(ctx context.Context, id string, c Caller, limit, before int) ([]Message, int, error) {
	if err := m.visible(ctx, id, c); err != nil {
		return nil, 0, err
	}
	if before < 0 {
		before = int(^uint(0) >> 1)
	}
	rows, total, err := m.st.Messages(ctx, id, limit, before)
	if err != nil {
		m.log.Error("reading a transcript", "session", id, "err", err)
		return nil, 0, errStorage(err)
	}
	out := make([]Message, len(rows))
	for i, r := range rows {
		out[i] = Message{Index: r.Index, Role: r.Role, Text: r.Text, ToolCallID: r.ToolCallID,
			Name: r.Name, IsError: r.IsError, Interrupted: r.Interrupted}
	}
	return out, total, nil
}

// visible checks that the session exists, live or stored, for the caller; killed
// sessions keep their history visible.
func (m *Manager) visible(ctx context.Context, id string, c Caller) error {
	m.mu.Lock()
	s, ok := m.sessions[id]
	m.mu.Unlock()
	if ok {
		if !c.owns(s) {
			return errNotFound(id)
		}
		return nil
	}
	row, err := m.st.Session(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errNotFound(id)
	case err != nil:
		m.log.Error("reading a session row", "session", id, "err", err)
		return errStorage(err)
	case !c.Admin && row.Owner != c.Principal:
		return errNotFound(id)
	}
	return nil
}
