package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/version"
)

// States of a server (mcp/status).
const (
	StateStopped  = "stopped"
	StateStarting = "starting"
	StateRunning  = "running"
	StateFailed   = "failed"
)

// RestartInterval is the least time between two restarts of a server that died.
const RestartInterval = 5 * time.Second

// stopGrace is how long a stdio server has to exit after its stdin closed.
const stopGrace = 2 * time.Second

// server is one MCP server and its connection, shared by every session.
type server struct {
	spec Spec
	log  *slog.Logger
	sp   *spawner
	life context.Context
	// restartInterval is RestartInterval (tests lengthen it, so that "too soon"
	// does not depend on how fast a busy machine restarts a server).
	restartInterval time.Duration
	runs            *sync.WaitGroup // the Manager's: every start, until its watcher ends

	mu          sync.Mutex
	state       string
	err         string // why it failed
	gen         int    // counts starts; callbacks of an older start are ignored
	cs          *sdk.ClientSession
	proc        *process
	tools       []*Tool
	ready       chan struct{} // while starting: closed when the attempt ends
	lastRestart time.Time     // the last start that followed a failure
	closed      bool
	progress    map[string]func(tool.Progress)
	nextToken   int
}

func newServer(spec Spec, sp *spawner, life context.Context, log *slog.Logger, runs *sync.WaitGroup) *server {
	return &server{spec: spec, sp: sp, life: life, log: log, state: StateStopped, progress: map[string]func(tool.Progress){},
		restartInterval: RestartInterval, runs: runs}
}

// ensure returns the running session, starting the server if it is stopped, or if
// it failed and restart allows it (at most once per RestartInterval). It waits for
// a start under way, up to ctx.
func (s *server) ensure(ctx context.Context, restart bool) (*sdk.ClientSession, error) {
	cs, _, _, err := s.ensureGen(ctx, restart)
	return cs, err
}

// ensureGen is ensure, also returning which start the session belongs to and its
// process (stdio).
func (s *server) ensureGen(ctx context.Context, restart bool) (*sdk.ClientSession, int, *process, error) {
	s.mu.Lock()
	for {
		switch {
		case s.closed:
			s.mu.Unlock()
			return nil, 0, nil, errors.New("stopped")
		case s.state == StateRunning:
			cs, gen, proc := s.cs, s.gen, s.proc
			s.mu.Unlock()
			return cs, gen, proc, nil
		case s.ready != nil:
			ch := s.ready
			s.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, 0, nil, ctx.Err()
			}
			s.mu.Lock()
			if s.state == StateFailed {
				err := errors.New(s.err)
				s.mu.Unlock()
				return nil, 0, nil, err
			}
			continue
		case s.state == StateFailed:
			if !restart {
				err := errors.New(s.err)
				s.mu.Unlock()
				return nil, 0, nil, err
			}
			if wait := s.restartInterval - time.Since(s.lastRestart); wait > 0 {
				err := fmt.Errorf("%s (restarting again in %d s at the earliest)", s.err, int(wait/time.Second)+1)
				s.mu.Unlock()
				return nil, 0, nil, err
			}
			s.lastRestart = time.Now()
			s.startLocked()
		default: // stopped
			s.startLocked()
		}
	}
}

func (s *server) startLocked() {
	s.gen++
	s.state, s.err = StateStarting, ""
	s.ready = make(chan struct{})
	gen, ready := s.gen, s.ready
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		s.run(gen, ready)
	}()
}

// run is one start: connect and initialize, list the tools, then watch the
// connection until it ends.
func (s *server) run(gen int, ready chan struct{}) {
	timeout := s.spec.startupTimeout()
	ctx, cancel := context.WithTimeout(s.life, timeout)
	defer cancel()
	cs, proc, err := s.connect(ctx, gen)
	var tools []*Tool
	if err == nil {
		tools, err = s.listTools(ctx, cs)
	}
	if err != nil {
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			err = fmt.Errorf("did not finish initialize within %s", secs(timeout))
		case proc != nil && exited(proc, time.Second):
			err = errors.New(proc.status)
		}
	}
	s.mu.Lock()
	stale := s.gen != gen || s.closed
	switch {
	case stale:
	case err != nil:
		s.state, s.err = StateFailed, err.Error()
	default:
		s.state, s.cs, s.proc, s.tools = StateRunning, cs, proc, tools
	}
	close(ready)
	if s.ready == ready {
		s.ready = nil
	}
	s.mu.Unlock()
	if err != nil || stale {
		s.log.Warn("mcp server did not start", "server", s.spec.Name, "err", err)
		shut(cs, proc)
		return
	}
	s.log.Info("mcp server running", "server", s.spec.Name, "transport", s.spec.Transport, "tools", len(tools), "pid", pidOf(proc))
	werr := cs.Wait()
	reason := "connection closed"
	if werr != nil {
		reason = "connection lost: " + werr.Error()
	}
	if proc != nil && exited(proc, time.Second) {
		reason = proc.status
	}
	if s.died(gen, reason) {
		s.log.Warn("mcp server died", "server", s.spec.Name, "reason", reason)
	} else {
		s.log.Info("mcp server stopped", "server", s.spec.Name)
	}
	shut(cs, proc)
}

// died marks start gen of the server as ended for reason, unless that is already
// known (or a newer start replaced it, or it was stopped). It reports whether the
// server was still that start's: false when it was stopped or replaced on purpose.
func (s *server) died(gen int, reason string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen || s.closed {
		return false
	}
	if s.state == StateRunning {
		s.state, s.err, s.cs, s.proc = StateFailed, reason, nil, nil
	}
	return true
}

// exited reports whether proc ended, waiting up to d for it.
func exited(proc *process, d time.Duration) bool {
	if d <= 0 {
		select {
		case <-proc.done:
			return true
		default:
			return false
		}
	}
	select {
	case <-proc.done:
		return true
	case <-time.After(d):
		return false
	}
}

func pidOf(p *process) int {
	if p == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func secs(d time.Duration) string { return fmt.Sprintf("%d s", int(d/time.Second)) }

// shut closes a session and ends its process.
func shut(cs *sdk.ClientSession, proc *process) {
	if cs != nil {
		cs.Close()
	}
	if proc != nil {
		proc.terminate(stopGrace)
	}
}

func (s *server) connect(ctx context.Context, gen int) (*sdk.ClientSession, *process, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: "zeroclaw", Version: version.Version}, &sdk.ClientOptions{
		Logger:       slog.New(slog.DiscardHandler),
		Capabilities: &sdk.ClientCapabilities{}, // no roots, sampling or elicitation
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			go s.refresh(gen)
		},
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			s.onProgress(r.Params)
		},
	})
	var transport sdk.Transport
	var proc *process
	switch s.spec.Transport {
	case TransportStdio:
		p, err := startProcess(s.sp, s.spec, s.log)
		if err != nil {
			return nil, nil, err
		}
		proc = p
		transport = &sdk.IOTransport{Reader: p.stdout, Writer: p.stdin, MaxLineLength: maxFrame}
	case TransportHTTP, TransportSSE:
		hc := &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: s.spec.Headers}}
		if s.spec.Transport == TransportSSE {
			transport = &sdk.SSEClientTransport{Endpoint: s.spec.URL, HTTPClient: hc}
		} else {
			transport = &sdk.StreamableClientTransport{Endpoint: s.spec.URL, HTTPClient: hc}
		}
	default:
		return nil, nil, fmt.Errorf("unknown transport %q", s.spec.Transport)
	}
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, proc, err
	}
	return cs, proc, nil
}

// listTools lists the server's tools under their model names. A tool whose input
// schema is not a JSON object is left out and logged.
func (s *server) listTools(ctx context.Context, cs *sdk.ClientSession) ([]*Tool, error) {
	var tools []*Tool
	n := newNamer(s.spec.Name)
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list failed: %w", err)
		}
		mt, err := newTool(s, n, t)
		if err != nil {
			s.log.Warn("mcp tool left out", "server", s.spec.Name, "tool", t.Name, "err", err)
			continue
		}
		tools = append(tools, mt)
	}
	return tools, nil
}

// refresh lists the tools again after notifications/tools/list_changed.
func (s *server) refresh(gen int) {
	s.mu.Lock()
	cs := s.cs
	ok := s.gen == gen && s.state == StateRunning
	s.mu.Unlock()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(s.life, s.spec.callTimeout())
	defer cancel()
	tools, err := s.listTools(ctx, cs)
	if err != nil {
		s.log.Warn("mcp tools/list after list_changed failed", "server", s.spec.Name, "err", err)
		return
	}
	s.mu.Lock()
	if s.gen == gen {
		s.tools = tools
	}
	s.mu.Unlock()
	s.log.Info("mcp tools changed", "server", s.spec.Name, "tools", len(tools))
}

// currentTools is the latest tool list: also that of a server that died since, so
// that a call of one restarts it.
func (s *server) currentTools() []*Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

// Status is one server as mcp/status shows it.
type Status struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	State     string `json:"state"`
	Tools     int    `json:"tools"`
	Error     string `json:"error,omitempty"`
	PID       int    `json:"pid,omitempty"`
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Name: s.spec.Name, Transport: s.spec.Transport, State: s.state, Tools: len(s.tools), Error: s.err}
	if st.Transport == TransportSSE {
		st.Transport = TransportHTTP
	}
	if s.state == StateRunning {
		st.PID = pidOf(s.proc)
	}
	return st
}

// close stops the server for good.
func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	s.gen++
	cs, proc := s.cs, s.proc
	s.cs, s.proc, s.state = nil, nil, StateStopped
	s.mu.Unlock()
	shut(cs, proc)
}

func (s *server) onProgress(p *sdk.ProgressNotificationParams) {
	key := fmt.Sprint(p.ProgressToken)
	s.mu.Lock()
	f := s.progress[key]
	s.mu.Unlock()
	if f == nil {
		return
	}
	pr := tool.Progress{Progress: p.Progress, Message: p.Message}
	if p.Total != 0 {
		total := p.Total
		pr.Total = &total
	}
	f(pr)
}

// watchProgress registers f for a new progress token, and returns the token and
// the function that unregisters it.
func (s *server) watchProgress(f func(tool.Progress)) (string, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextToken++
	token := fmt.Sprintf("zc-%d", s.nextToken)
	if f != nil {
		s.progress[token] = f
	}
	return token, func() {
		s.mu.Lock()
		delete(s.progress, token)
		s.mu.Unlock()
	}
}
