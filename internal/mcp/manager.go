package mcp

import (
	"context"
	"encoding/json/jsontext"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// Manager holds the MCP servers of one configuration (the daemon's, or an ACP
// session's editor-given ones).
type Manager struct {
	log    *slog.Logger
	life   context.Context
	cancel context.CancelFunc
	sp     *spawner

	mu      sync.Mutex
	servers map[string]*server
	closed  bool
	wg      sync.WaitGroup // servers being stopped
	runs    sync.WaitGroup // servers' starts and watchers (server.run)
}

// NewManager returns a Manager with no servers; Configure gives it some.
func NewManager(log *slog.Logger) *Manager {
	if log == nil {
		log = slog.Default()
	}
	life, cancel := context.WithCancel(context.Background())
	return &Manager{log: log, life: life, cancel: cancel, sp: newSpawner(), servers: map[string]*server{}}
}

// Configure makes specs the servers: a new one is added (stopped, it starts when
// needed), one whose spec changed is stopped and replaced, one that is gone is
// stopped.
func (m *Manager) Configure(specs []Spec) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	want := make(map[string]Spec, len(specs))
	for _, sp := range specs {
		want[sp.Name] = sp
	}
	for name, s := range m.servers {
		if sp, ok := want[name]; !ok || !sp.same(s.spec) {
			delete(m.servers, name)
			m.stopLater(s)
		}
	}
	for name, sp := range want {
		if _, ok := m.servers[name]; !ok {
			m.servers[name] = newServer(sp, m.sp, m.life, m.log, &m.runs)
		}
	}
}

func (m *Manager) stopLater(s *server) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		s.close()
	}()
}

func (m *Manager) pick(names []string) []*server {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*server
	for _, n := range names {
		if s, ok := m.servers[n]; ok {
			out = append(out, s)
		}
	}
	return out
}

// Names returns the names of the servers, sorted.
func (m *Manager) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.servers))
	for n := range m.servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Tools returns the tools of the named servers, starting those that never ran and
// waiting for them (each up to its startup timeout, all at once). A server that
// failed is not retried here (a call of one of its tools retries it); its last
// known tools are included, so that such a call can happen.
func (m *Manager) Tools(ctx context.Context, names []string) map[string]tool.Tool {
	servers := m.pick(names)
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, s.spec.startupTimeout()+timeSlack)
			defer cancel()
			s.ensure(sctx, false)
		})
	}
	wg.Wait()
	return m.Current(names)
}

// Current returns the tools the named servers have now, starting nothing.
func (m *Manager) Current(names []string) map[string]tool.Tool {
	out := map[string]tool.Tool{}
	for _, s := range m.pick(names) {
		for _, t := range s.currentTools() {
			out[t.spec.Name] = t
		}
	}
	return out
}

// Fallback returns a tool for a call of name that no listed tool has, when its
// prefix names one of the servers (one that failed before it listed tools): the
// call then (re)starts the server and either runs the tool or fails naming the
// server and why. Otherwise nil.
func (m *Manager) Fallback(names []string, name string) tool.Tool {
	prefix, ok := ServerOf(name)
	if !ok {
		return nil
	}
	for _, s := range m.pick(names) {
		if sanitize(s.spec.Name) == prefix || (len(prefix) == 32 && strings.HasPrefix(sanitize(s.spec.Name), prefix)) {
			return &pending{srv: s, name: name}
		}
	}
	return nil
}

// Status returns every server's state, sorted by name.
func (m *Manager) Status() []Status {
	m.mu.Lock()
	servers := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		servers = append(servers, s)
	}
	m.mu.Unlock()
	out := make([]Status, 0, len(servers))
	for _, s := range servers {
		out = append(out, s.status())
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Close stops every server and waits for them to exit.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.wg.Wait()
		return
	}
	m.closed = true
	for name, s := range m.servers {
		delete(m.servers, name)
		m.stopLater(s)
	}
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	m.runs.Wait() // every server is closed: no start can begin any more
	m.sp.stop()
}

// pending stands for a tool of a server whose tools are not known (yet).
type pending struct {
	srv  *server
	name string
}

func (p *pending) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: p.name, Parameters: []byte(`{"type":"object"}`)}
}

func (p *pending) Mutates() bool { return true }

func (p *pending) Run(ctx context.Context, env tool.Env, args jsontext.Value) tool.Result {
	sctx, cancel := context.WithTimeout(ctx, p.srv.spec.startupTimeout()+timeSlack)
	_, err := p.srv.ensure(sctx, true)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{Output: "cancelled", IsError: true}
		}
		return p.srv.fail("%v", err)
	}
	for _, t := range p.srv.currentTools() {
		if t.spec.Name == p.name {
			return t.Run(ctx, env, args)
		}
	}
	return p.srv.fail("has no tool %s", p.name)
}
