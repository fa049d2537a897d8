package acp

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// ProtocolVersion is the ACP version the bridge speaks.
const ProtocolVersion = 1

// MaxLine bounds one ACP frame from the editor. Editors send images and files
// inline, base64-encoded, so it is above the daemon's 8 MiB: a 10 MiB file (the
// daemon's per-file limit) takes about 14 MiB as base64.
const MaxLine = 32 << 20

// The bridge's queue of daemon updates waiting for the editor holds a whole replay
// (rpc.replay_events, 10,000 by default) and more: the editor reads at its own
// pace, and a session/load or a re-attach replays as fast as the daemon sends.
const (
	QueueFrames = 20000
	QueueBytes  = 64 << 20
)

// dialAttempts bounds the dials of one reconnect whose connection closes at once.
const dialAttempts = 5

// Options configure a Bridge.
type Options struct {
	// Agent is the agent alias of the sessions session/new opens; "" means "default".
	Agent string
	// Endpoint is the daemon's endpoint; "" means the default one (client.Dial).
	Endpoint string
	// AutoStart, when not nil, starts an ephemeral daemon when none answers.
	AutoStart *client.AutoStart
	// Version is announced in agentInfo.
	Version string
	// Logger receives the bridge's log (never frame contents); nil discards it.
	Logger *slog.Logger
}

// Bridge is one editor's connection: ACP on the editor's side, one daemon connection
// (replaced when it ends) on the other.
type Bridge struct {
	opts   Options
	log    *slog.Logger
	editor *jsonrpc.Conn
	input  *stdio          // the editor's side of editor, for catchUp
	ctx    context.Context // ends when the editor is gone
	stop   context.CancelFunc
	// Tests: beforeCancel runs before each daemon cancel is sent, awaitingCancels
	// when a prompt waits for those of its session.
	beforeCancel, awaitingCancels func()

	dialMu sync.Mutex // one dial at a time
	// ctlMu orders what the editor is told of a session's controls: held while they
	// are compared and the change is sent (applyControls).
	ctlMu sync.Mutex

	mu       sync.Mutex
	elicit   bool           // the editor declared form elicitation
	thoughts bool           // the editor asked for thoughts (ThoughtsMeta, memory.go)
	d        *client.Client // nil before the first request and after it ended
	stale    bool           // d lagged behind: the next request dials a new connection
	retired  []*client.Client
	attached map[string]bool
	sessions map[string]*sessionState
	requests map[string]*request       // the editor's requests in flight, by id
	mcp      map[string]*editorServers // the editor's MCP servers, by session (mcp.go)
}

// sessionState is what the bridge keeps of a session the editor used.
type sessionState struct {
	lastSeq uint64                        // the last update forwarded
	turn    *request                      // the editor's prompt in flight, if any
	asks    map[string]context.CancelFunc // daemon request id -> withdraw it from the editor
	asking  sync.WaitGroup                // questions put to the editor, until answered or withdrawn
	catchUp chan struct{}                 // closed when a re-attach after lagged is done
	ctl     controls                      // the session's mode, model, title (controls.go)
	// cancels counts the daemon cancels of the session in flight (cancelOnDaemon),
	// and cancelsDone is closed when it drops to 0.
	cancels     int
	cancelsDone chan struct{}
}

// request is one of the editor's requests in flight.
type request struct {
	method    string
	sessionID string // session/prompt
	ctx       context.Context
	cancel    context.CancelFunc
	cancelled atomic.Bool // the editor cancelled it (session/cancel, $/cancel_request)
	echo      string      // the prompt sent, whose user_message the editor already shows
	begun     bool        // the daemon's turn has started (its user_message arrived); b.mu
	turnID    string      // b.mu
}

func newRequest(parent context.Context, method string) *request {
	ctx, cancel := context.WithCancel(parent)
	return &request{method: method, ctx: ctx, cancel: cancel}
}

// New returns a bridge; Serve runs it.
func New(opts Options) *Bridge {
	if opts.Agent == "" {
		opts.Agent = "default"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Bridge{
		opts: opts, log: log,
		attached: make(map[string]bool),
		sessions: make(map[string]*sessionState),
		requests: make(map[string]*request),
		mcp:      make(map[string]*editorServers),
	}
}

// Serve speaks ACP on in and out until in ends, then returns nil once the requests
// in flight are answered; turns the editor started and left running are cancelled
// first. Only ACP frames are written to out.
func (b *Bridge) Serve(in io.Reader, out io.Writer) error {
	b.ctx, b.stop = context.WithCancel(context.Background())
	defer b.stop()
	rw := &stdio{in: in, out: out, eof: b.editorGone}
	b.input = rw
	f := jsonrpc.NewNDJSON(rw)
	f.MaxLine, f.LineTimeout, f.WriteTimeout = MaxLine, 0, 0
	b.editor = jsonrpc.NewConn(f, jsonrpc.HandlerFunc(b.handle), jsonrpc.Options{
		Logger:   b.log,
		Schedule: b.schedule,
	})
	err := b.editor.Run()
	b.stop()
	defer b.closeServers() // after the daemon connections: no tool/call comes then
	b.mu.Lock()
	conns := append(b.retired, b.d)
	b.d, b.retired = nil, nil
	b.mu.Unlock()
	for _, d := range conns {
		if d != nil {
			d.Close()
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		b.log.Info("editor connection ended", "err", err)
	}
	return nil
}

// editorGone runs when the editor's input ends: the turns it started are cancelled
// (their prompts answer, as every request in flight does, before Serve returns).
func (b *Bridge) editorGone() {
	b.mu.Lock()
	var prompts []*request
	for _, r := range b.requests {
		if r.method == "session/prompt" {
			prompts = append(prompts, r)
		}
	}
	b.mu.Unlock()
	for _, r := range prompts {
		b.cancelTurn(r)
	}
}

// schedule runs on the editor connection's reader, in the order frames arrive:
// notifications (cancels) are served there, so that a cancel never overtakes the
// prompt it cancels, and each request is registered before the next frame is read,
// so that a cancel that follows it finds it.
func (b *Bridge) schedule(req *jsonrpc.Request) jsonrpc.Schedule {
	if req.IsNotification() {
		return jsonrpc.Inline
	}
	r := newRequest(b.ctx, req.Method)
	if req.Method == "session/prompt" {
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if jsonrpc.DecodeParams(req.Params, &p) == nil {
			r.sessionID = p.SessionID
		}
	}
	b.mu.Lock()
	b.requests[string(req.ID)] = r
	b.mu.Unlock()
	return jsonrpc.Spawn
}

type handlerFunc func(ctx context.Context, r *request, params jsontext.Value) (any, error)

func (b *Bridge) methods() map[string]handlerFunc {
	return map[string]handlerFunc{
		"initialize":     b.initialize,
		"authenticate":   func(context.Context, *request, jsontext.Value) (any, error) { return empty{}, nil },
		"session/new":    b.sessionNew,
		"session/load":   b.sessionLoad,
		"session/resume": b.sessionResume,
		"session/list":   b.sessionList,
		"session/close":  b.sessionClose,
		"session/delete": b.sessionDelete,
		"session/prompt": b.prompt,

		"session/set_mode":          b.setMode,
		"session/set_config_option": b.setConfigOption,
	}
}

func (b *Bridge) handle(_ context.Context, req *jsonrpc.Request) (any, error) {
	if req.IsNotification() {
		switch req.Method {
		case "session/cancel":
			b.cancelNotification(req.Params)
		case "$/cancel_request":
			b.cancelRequest(req.Params)
		default:
			b.log.Debug("ignored notification", "method", req.Method)
		}
		return nil, nil
	}
	key := string(req.ID)
	b.mu.Lock()
	r := b.requests[key]
	b.mu.Unlock()
	if r == nil { // inline registers every request; this is only a safety net
		r = newRequest(b.ctx, req.Method)
	}
	defer func() {
		r.cancel()
		b.mu.Lock()
		delete(b.requests, key)
		b.mu.Unlock()
	}()
	h, ok := b.methods()[req.Method]
	if !ok {
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "method not found: "+req.Method, map[string]any{"method": req.Method})
	}
	ctx := r.ctx
	if r.cancelled.Load() && req.Method != "session/prompt" {
		return nil, errCancelled
	}
	res, err := h(ctx, r, req.Params)
	if errors.Is(err, client.ErrClosed) {
		// The daemon went away: the next request dials again (and may start one),
		// even while this connection is still winding down.
		b.mu.Lock()
		if b.d != nil {
			b.stale = true
		}
		b.mu.Unlock()
	}
	if err != nil {
		if ctx.Err() != nil && req.Method != "session/prompt" {
			return nil, errCancelled
		}
		return nil, acpError(err)
	}
	return res, nil
}

var errCancelled = jsonrpc.NewError(-32800, "request cancelled", nil)

// daemon returns the connection to the daemon, dialing (and, with AutoStart,
// starting an ephemeral daemon) when there is none or the last one ended.
func (b *Bridge) daemon(ctx context.Context) (*client.Client, error) {
	if d := b.live(); d != nil {
		return d, nil
	}
	b.dialMu.Lock()
	defer b.dialMu.Unlock()
	if d := b.live(); d != nil {
		return d, nil
	}
	b.mu.Lock()
	elicit := b.elicit
	b.mu.Unlock()
	var conn atomic.Pointer[client.Client] // the connection being dialed, for its updates
	opts := []client.Option{
		client.WithLogger(b.log), client.WithClientInfo("zeroclaw-acp", b.opts.Version),
		client.WithUpdateHandler(func(u client.Update) { b.forward(conn.Load(), u) }),
		client.WithUpdateQueue(QueueFrames, QueueBytes),
	}
	if b.opts.AutoStart != nil {
		opts = append(opts, client.WithAutoStart(*b.opts.AutoStart))
	}
	if elicit {
		opts = append(opts, client.WithElicitationHandler(b.elicitation))
	}
	var d *client.Client
	for attempt := 1; ; attempt++ {
		var err error
		if d, err = client.Dial(ctx, b.opts.Endpoint, opts...); err != nil {
			return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "cannot reach the zeroclaw daemon: "+err.Error(), nil)
		}
		d.SetToolHandler(b.serveTool)
		conn.Store(d)
		_, err = d.Initialize(ctx)
		if err == nil {
			break
		}
		d.Close()
		// A daemon that was just killed can still take a connection into its
		// listener's backlog, then drop it: dial again (which starts a new daemon
		// once the endpoint refuses).
		if !errors.Is(err, client.ErrClosed) || attempt == dialAttempts {
			return nil, err
		}
		b.log.Info("the daemon closed the connection at initialize; dialing again", "attempt", attempt)
	}
	b.mu.Lock()
	old, stale := b.d, b.stale
	b.d, b.stale = d, false
	clear(b.attached)
	if old != nil && stale {
		// Requests may still be waiting on it; it closes when the bridge does.
		b.retired = append(b.retired, old)
		old = nil
	}
	b.mu.Unlock()
	if old != nil {
		old.Close()
	}
	if pid, ok := d.StartedDaemon(); ok {
		b.log.Info("started an ephemeral daemon", "endpoint", d.Endpoint(), "pid", pid)
	} else {
		b.log.Info("connected to the daemon", "endpoint", d.Endpoint())
	}
	return d, nil
}

// live is the daemon connection when it is still open.
func (b *Bridge) live() *client.Client {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.d == nil || b.stale {
		return nil
	}
	select {
	case <-b.d.Done():
		return nil
	default:
		return b.d
	}
}

// session returns the daemon connection with the session attached to it: after a
// reconnect, the session is attached again and the updates the bridge missed are
// replayed (and forwarded) first.
func (b *Bridge) session(ctx context.Context, sid string) (*client.Client, error) {
	d, err := b.daemon(ctx)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	s, known := b.sessions[sid]
	attached := b.attached[sid]
	var after uint64
	if known {
		after = s.lastSeq
	}
	b.mu.Unlock()
	if !known || attached {
		return d, nil
	}
	if tools := b.clientTools(sid); tools != nil { // a new connection serves them again
		d.SetSessionTools(sid, tools)
	}
	if _, err := d.Attach(ctx, sid, after, nil); err != nil {
		var e *client.Error
		var lag *client.LaggedError
		switch {
		case errors.As(err, &lag):
			b.retire(d) // attached, but behind again: the next request dials anew
		case !errors.As(err, &e) || e.Reason() != "replay_truncated":
			return nil, err
		default:
			b.log.Warn("the daemon no longer keeps every update the editor missed; some are lost",
				"session", sid, "afterSeq", after, "err", err)
			if err := d.Call(ctx, "session/attach", map[string]any{"sessionId": sid}, nil); err != nil {
				return nil, err
			}
		}
	}
	b.mu.Lock()
	if b.d == d {
		b.attached[sid] = true
	}
	b.mu.Unlock()
	return d, nil
}

// retire marks d as behind (lagged): the daemon, or the client's bounded queue,
// dropped updates of a session on it. The next request dials a new connection,
// which attaches each session again after the last update forwarded, so the missed
// ones are replayed; updates that still arrive on d are forwarded only when new
// (forward deduplicates by seq).
func (b *Bridge) retire(d *client.Client) {
	b.mu.Lock()
	if b.d == d {
		b.stale = true
	}
	b.mu.Unlock()
	b.log.Warn("the daemon connection fell behind; reconnecting to replay what was missed")
}

// track records that the editor uses sid, attached on d, having seen updates up to
// lastSeq.
func (b *Bridge) track(d *client.Client, sid string, lastSeq uint64) *sessionState {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.state(sid)
	if lastSeq > s.lastSeq {
		s.lastSeq = lastSeq
	}
	if b.d == d {
		b.attached[sid] = true
	}
	return s
}

// state returns the session's state, creating it; b.mu is held.
func (b *Bridge) state(sid string) *sessionState {
	s := b.sessions[sid]
	if s == nil {
		s = &sessionState{asks: make(map[string]context.CancelFunc)}
		b.sessions[sid] = s
	}
	return s
}

// notify sends a session/update to the editor.
func (b *Bridge) notify(sid string, update any) {
	b.send("session/update", sessionNotification{SessionID: sid, Update: update})
}

// send sends a notification to the editor, waiting while the editor's queue is
// full: the editor reads at its own pace, and nothing it is owed is dropped.
func (b *Bridge) send(method string, params any) {
	for {
		err := b.editor.Notify(method, params)
		if !errors.Is(err, jsonrpc.ErrQueueFull) {
			if err != nil {
				b.log.Debug("the editor is gone; notification not sent", "method", method, "err", err)
			}
			return
		}
		select {
		case <-b.editor.Room():
		case <-b.editor.Done():
			return
		}
	}
}
