// Package session owns live sessions: creating, attaching and closing them, one turn
// at a time per session with a bounded queue, cancellation, approvals, elicitation,
// and the fan-out of every update to every attached connection in seq order. It
// knows nothing of JSON-RPC framing: connections reach it as Subscribers.
package session

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/agent"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/feed"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// Limits (docs/protocol.md, "Limits").
const (
	MaxSessions     = 64
	MaxQueued       = 32
	QueueWait       = 30 * time.Second
	ApprovalTimeout = 120 * time.Second
	ElicitTimeout   = 300 * time.Second
)

// Options tune a Manager; zero values mean the limits above.
type Options struct {
	MaxSessions     int
	MaxQueued       int
	QueueWait       time.Duration
	ApprovalTimeout time.Duration
	ElicitTimeout   time.Duration
	// LagAfter is how long a connection may take no update of a session it is
	// behind on before it is detached as lagged (docs/protocol.md,
	// "A daemon that runs for months"); zero means LagAfter.
	LagAfter time.Duration
	Logger   *slog.Logger
	// Store keeps sessions durably (docs/protocol.md, "Durable sessions"):
	// transcripts, model context, checkpoints, the replay log. Required.
	Store *store.Store
	// MCP runs the MCP servers agents use (docs/protocol.md,
	// "Tools from MCP servers"); nil: none.
	MCP MCPTools
	// Memory is the agents' memories (memory.go); nil: none.
	Memory Memory
	// ClientToolTimeout gives rpc.client_tool_timeout_secs; nil: ClientToolTimeout.
	ClientToolTimeout func() time.Duration
	// SeqBlock is how many update seqs one durable reservation covers; zero means
	// SeqBlock. Tests make it small, to reach a reservation in the middle of a turn.
	SeqBlock uint64
	// ReplayBytes is rpc.replay_bytes: what a reading connection's backlog of one
	// session may come to before it is lagged; zero means feed.ReplayBytes.
	ReplayBytes int64
	// RecoverFor is how long a lagged connection can re-attach from its notice's
	// afterSeq and get everything after it; zero means feed.RecoverFor.
	RecoverFor time.Duration
	// Telemetry observes every turn (metrics and traces); nil: none.
	Telemetry agent.Telemetry
	// OnLagged is told of each connection detached as lagged from any session
	// (feed.Options.OnLagged: it must not block); nil: nothing is told.
	OnLagged func()
}

// Manager holds the live sessions.
type Manager struct {
	// life is the daemon's lifetime, for the storage work the sessions owe whatever
	// any caller does: turns run under it, the replay log writes under it.
	life    context.Context
	opts    Options
	log     *slog.Logger
	catalog atomic.Pointer[Catalog]

	st     *store.Store
	feeds  *feed.Hub  // the replay log's writer and what every session's feed shares
	models modelCache // the providers' own model lists (controls.go)

	mu       sync.Mutex
	sessions map[string]*Session
	live     atomic.Int64   // len(sessions), for the metrics without the lock (telemetry.go)
	turns    sync.WaitGroup // running turns
}

// NewManager returns a Manager serving the agents of catalog.
func NewManager(catalog *Catalog, opts Options) *Manager {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = MaxSessions
	}
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = MaxQueued
	}
	if opts.QueueWait <= 0 {
		opts.QueueWait = QueueWait
	}
	if opts.ApprovalTimeout <= 0 {
		opts.ApprovalTimeout = ApprovalTimeout
	}
	if opts.ElicitTimeout <= 0 {
		opts.ElicitTimeout = ElicitTimeout
	}
	if opts.LagAfter <= 0 {
		opts.LagAfter = LagAfter
	}
	if opts.SeqBlock == 0 {
		opts.SeqBlock = SeqBlock
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Store == nil {
		panic("session.NewManager: Options.Store is required")
	}
	m := &Manager{life: context.Background(), opts: opts, log: opts.Logger, st: opts.Store, sessions: make(map[string]*Session)}
	m.feeds = feed.NewHub(m.life, feed.Options{Store: opts.Store, Logger: opts.Logger, LagAfter: opts.LagAfter,
		SeqBlock: opts.SeqBlock, ReplayBytes: opts.ReplayBytes, RecoverFor: opts.RecoverFor,
		OnLagged: opts.OnLagged})
	m.catalog.Store(catalog)
	return m
}

// SetCatalog installs the agents of a new configuration for sessions created after.
func (m *Manager) SetCatalog(c *Catalog) { m.catalog.Store(c) }

// SetReplayBytes applies rpc.replay_bytes to every session's stream.
func (m *Manager) SetReplayBytes(n int64) { m.feeds.SetReplayBytes(n) }

// Caller is who asks: the connection's principal.
type Caller struct {
	Principal string
	Admin     bool
}

func (c Caller) owns(s *Session) bool { return c.Admin || s.Owner == c.Principal }

// NewParams are the params of session/new.
type NewParams struct {
	Caller       Caller
	Subscriber   Subscriber // attached to the session; may be nil
	AgentAlias   string
	Cwd          string
	SessionID    string
	KeepSiblings bool
}

var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// New creates a session or, for a live id the caller owns, attaches the caller to it
// (resumed). Unless KeepSiblings, the caller's other idle sessions of the same agent
// are closed first.
func (m *Manager) New(ctx context.Context, p NewParams) (s *Session, resumed bool, err error) {
	if p.AgentAlias == "" {
		return nil, false, errParam("agentAlias", "", "invalid params: agentAlias is required")
	}
	agent, ok := m.catalog.Load().Agent(p.AgentAlias)
	if !ok {
		return nil, false, errParam("agentAlias", "unknown_agent", fmt.Sprintf("unknown agent %q", p.AgentAlias))
	}
	if p.SessionID != "" && !sessionIDPattern.MatchString(p.SessionID) {
		return nil, false, errParam("sessionId", "",
			"invalid params: sessionId must be 1-128 characters of letters, digits, '.', '_', ':' and '-'")
	}
	workspace, err := workspaceFor(agent, p)
	if err != nil {
		return nil, false, err
	}

	if p.SessionID != "" {
		live, err := m.obtain(ctx, p.SessionID, p.Caller, true)
		switch {
		case err == nil:
			if p.Subscriber != nil {
				live.Attach(p.Subscriber)
			}
			return live, true, nil
		case !errors.Is(err, errNoSuchSession):
			return nil, false, err
		}
	}

	m.mu.Lock()
	var evicted []*Session
	if !p.KeepSiblings {
		for _, s := range m.sessions {
			if s.Owner == p.Caller.Principal && s.Agent.Alias == p.AgentAlias && s.idle() {
				evicted = append(evicted, s)
				delete(m.sessions, s.ID)
			}
		}
		m.countLocked()
	}
	if len(m.sessions) >= m.opts.MaxSessions {
		for _, s := range evicted { // nothing evicted when nothing was created
			m.sessions[s.ID] = s
		}
		m.countLocked()
		m.mu.Unlock()
		return nil, false, errLimit(m.opts.MaxSessions)
	}
	id := p.SessionID
	if id == "" {
		id = newUUID()
	}
	if _, taken := m.sessions[id]; taken { // created by a racing session/new
		m.mu.Unlock()
		return m.New(ctx, p)
	}
	s = newSession(m, id, p.Caller.Principal, agent, workspace, 0)
	m.sessions[id] = s
	m.countLocked()
	m.mu.Unlock()
	err = m.st.CreateSession(ctx, store.Session{
		ID: id, Owner: p.Caller.Principal, Agent: agent.Alias, Workspace: workspace, Surface: store.SurfaceRPC,
	})
	if err != nil {
		m.mu.Lock()
		delete(m.sessions, id)
		m.countLocked()
		m.mu.Unlock()
		if errors.Is(err, store.ErrExists) { // a durable id created meanwhile
			return m.New(ctx, p)
		}
		m.log.Error("creating a session row", "session", id, "err", err)
		return nil, false, errStorage(err)
	}

	for _, e := range evicted {
		e.shutdown(errSessionClosed)
		m.log.Info("closed idle sibling session", "session", e.ID, "agent", e.Agent.Alias, "for", id)
	}
	if p.Subscriber != nil {
		s.Attach(p.Subscriber)
	}
	return s, false, nil
}

// workspaceFor picks the session's workspace: cwd when given (an existing absolute
// directory; inside the agent's workspace, links resolved, unless the caller is an
// admin), else the agent's workspace, created 0700 when missing.
func workspaceFor(a *Agent, p NewParams) (string, error) {
	if p.Cwd == "" {
		if err := os.MkdirAll(a.Workspace, 0o700); err != nil {
			return "", fmt.Errorf("creating the workspace of agent %s: %w", a.Alias, err)
		}
		return a.Workspace, nil
	}
	bad := func(why string) error {
		return errParam("cwd", "", "invalid params: cwd "+why)
	}
	if !filepath.IsAbs(p.Cwd) {
		return "", bad("must be an absolute path")
	}
	fi, err := os.Stat(p.Cwd)
	if err != nil || !fi.IsDir() {
		return "", bad("is not an existing directory")
	}
	if p.Caller.Admin {
		return p.Cwd, nil
	}
	// The tools resolve links, so the check must too: a link inside the agent's
	// workspace that points outside would otherwise widen the session's root. The
	// session keeps the resolved path, so a link swapped later changes nothing.
	real, err := filepath.EvalSymlinks(p.Cwd)
	if err != nil {
		return "", bad("is not an existing directory")
	}
	root, err := filepath.EvalSymlinks(a.Workspace)
	if err != nil || !within(root, real) {
		return "", bad("must lie inside the agent's workspace")
	}
	return real, nil
}

// Get returns the live session id if the caller may see it.
func (m *Manager) Get(id string, c Caller) (*Session, error) {
	m.mu.Lock()
	s, ok := m.sessions[id]
	m.mu.Unlock()
	if !ok || !c.owns(s) {
		return nil, errNotFound(id)
	}
	return s, nil
}

// Obtain returns the session id, restoring it from the store when it is not live.
func (m *Manager) Obtain(ctx context.Context, id string, c Caller) (*Session, error) {
	s, err := m.obtain(ctx, id, c, false)
	if errors.Is(err, errNoSuchSession) {
		return nil, errNotFound(id)
	}
	return s, err
}

// Close ends a live session: a running turn is cancelled, attached connections are
// detached, queued prompts fail.
func (m *Manager) Close(id string, c Caller) error {
	m.mu.Lock()
	s, ok := m.sessions[id]
	if !ok || !c.owns(s) {
		m.mu.Unlock()
		return errNotFound(id)
	}
	delete(m.sessions, id)
	m.countLocked()
	m.mu.Unlock()
	s.shutdown(errSessionClosed)
	return nil
}

// Info describes a live session for status.
type Info = protocol.LiveSession

// List returns the live sessions the caller may see, by id.
func (m *Manager) List(c Caller) []Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Info, 0, len(m.sessions))
	for _, s := range m.sessions {
		if c.owns(s) {
			out = append(out, Info{SessionID: s.ID, AgentAlias: s.Agent.Alias, State: s.State()})
		}
	}
	if len(out) > 1 { // status polls this: no sort (nor its allocation) for one
		slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.SessionID, b.SessionID) })
	}
	return out
}

// Detach removes sub from every session, when its connection closes.
func (m *Manager) Detach(sub Subscriber) {
	m.mu.Lock()
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	for _, s := range all {
		s.Detach(sub)
		s.dropClientTools(sub)
	}
}

// Shutdown cancels every running turn (cause: daemon shutdown), closes every
// session, and waits for the turns to end or ctx.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	all := m.sessions
	m.sessions = make(map[string]*Session)
	m.countLocked()
	m.mu.Unlock()
	for _, s := range all {
		s.shutdown(errDaemonShutdown)
	}
	done := make(chan struct{})
	go func() {
		m.turns.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	m.feeds.Close() // what storage owes: the queued replay log
	return nil
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func randomID(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s%x", prefix, b)
}
