package client

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/version"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// Option configures Dial.
type Option func(*options)

type options struct {
	autoStart    *AutoStart
	clientName   string
	clientVer    string
	logger       *slog.Logger
	elicit       ElicitationHandler
	onUpdate     func(Update)
	chunkTimeout time.Duration
	queueFrames  int        // WithUpdateQueue; 0: DefaultQueueFrames
	queueBytes   int        // WithUpdateQueue; 0: DefaultQueueBytes
	reconnect    *Reconnect // WithReconnect
	token        string     // WithToken
	fingerprint  string     // WithFingerprint: lowercase hex, no colons
	// endedEarly, when set (tests), is called, holding the client's mu, when a
	// connection ends before it was installed.
	endedEarly func()
}

// WithAutoStart makes Dial start `zeroclaw daemon --ephemeral` when no daemon answers
// on a local endpoint, and wait for it to serve. The daemon it starts exits about a
// second after its last client leaves.
func WithAutoStart(a AutoStart) Option { return func(o *options) { o.autoStart = &a } }

// WithClientInfo sets the clientInfo sent by Initialize (default "zeroclaw-go-client").
func WithClientInfo(name, version string) Option {
	return func(o *options) { o.clientName, o.clientVer = name, version }
}

// WithLogger sets where connection events go (never frame contents). Default: discarded.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithElicitationHandler is SetElicitationHandler at dial time.
func WithElicitationHandler(h ElicitationHandler) Option { return func(o *options) { o.elicit = h } }

// WithUpdateHandler is SetUpdateHandler at dial time.
func WithUpdateHandler(f func(Update)) Option { return func(o *options) { o.onUpdate = f } }

// WithUpdateQueue bounds the updates waiting for their callback: at most frames
// updates or bytes bytes (0: DefaultQueueFrames, DefaultQueueBytes). An update that
// does not fit is not dropped silently: see LaggedError.
func WithUpdateQueue(frames, bytes int) Option {
	return func(o *options) { o.queueFrames, o.queueBytes = frames, bytes }
}

// Client is one connection to the daemon; with WithReconnect, one connection at a
// time, for as long as the client lives. Its methods are safe for concurrent use.
type Client struct {
	endpoint string
	opts     options
	dirs     endpoint.Dirs // where an auto-started daemon's log goes
	queue    *updateQueue
	quit     chan struct{} // closed by Close
	done     chan struct{} // closed when the client is over (Done)
	quitOnce sync.Once
	doneOnce sync.Once

	mu      sync.Mutex
	cur     *link          // the connection calls go to; nil while reconnecting
	ready   chan struct{}  // closed when cur is set again after a loss
	started *startedDaemon // the daemon Dial (or a reconnect) started; nil if none
	elicit  ElicitationHandler
	global  func(Update)
	prompts map[string]*promptSub // by session id: the callback of the prompt in flight
	lastSeq map[string]uint64
	resume  resumeState // reconnect.go
	tools   toolCalls   // tools.go
}

type promptSub struct {
	fn   func(Update)
	refs int
}

// Dial connects to the daemon at endpoint: a Unix socket path or a Windows named pipe
// (\\.\pipe\…). An empty endpoint means the default one, resolved as the daemon does
// (ZEROCLAW_SOCKET, else the data dir's daemon.sock or pipe), or a daemon's WSS
// endpoint, wss://host:port (see WithToken and WithFingerprint). When nothing answers, the error is a *NoDaemonError, unless
// WithAutoStart is given: then a daemon is started and Dial connects to it.
//
// Dial does not initialize the connection: call Initialize next (the daemon closes a
// connection that has not initialized within 30 s).
func Dial(ctx context.Context, addr string, opts ...Option) (*Client, error) {
	o := options{clientName: "zeroclaw-go-client", clientVer: version.Version}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if strings.HasPrefix(addr, "wss://") {
		return dialWSS(ctx, addr, o)
	}
	if strings.HasPrefix(addr, "ws://") {
		return nil, fmt.Errorf("dialing %s: the daemon serves WebSockets over TLS only; use wss://", addr)
	}
	var dirs endpoint.Dirs
	if addr == "" || o.autoStart != nil {
		var err error
		configDir := ""
		if o.autoStart != nil {
			configDir = o.autoStart.ConfigDir
		}
		if dirs, err = endpoint.ResolveDirs(configDir, nil); err != nil {
			return nil, err
		}
		if addr == "" {
			addr = endpoint.Address(dirs, nil)
		}
	}
	nc, err := endpoint.Dial(ctx, addr)
	var started *startedDaemon
	if err != nil {
		if !noDaemon(err) {
			return nil, fmt.Errorf("connecting to the daemon at %s: %w", addr, err)
		}
		if o.autoStart == nil {
			return nil, &NoDaemonError{Endpoint: addr, Err: err}
		}
		if nc, started, err = o.autoStart.start(ctx, addr, dirs); err != nil {
			return nil, err
		}
	}
	c := newClient(addr, o, started)
	c.dirs = dirs
	c.firstLink(jsonrpc.NewNDJSON(nc), nil)
	return c, nil
}

// noDaemon reports whether a dial error means that nothing serves the endpoint.
func noDaemon(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED)
}

func newClient(addr string, o options, started *startedDaemon) *Client {
	c := &Client{
		endpoint: addr,
		opts:     o,
		started:  started,
		queue:    newUpdateQueue(o.queueFrames, o.queueBytes, o.logger),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		ready:    make(chan struct{}),
		elicit:   o.elicit,
		global:   o.onUpdate,
		prompts:  make(map[string]*promptSub),
		lastSeq:  make(map[string]uint64),
	}
	go c.queue.run(c.dispatch)
	return c
}

// link is one connection of a Client.
type link struct {
	conn *jsonrpc.Conn
	done chan struct{} // closed once conn.Run has returned
	// framerDone, when set, is closed once the framer has finished closing (a
	// WebSocket's closing handshake runs in the background).
	framerDone <-chan struct{}
	// ended: conn ended before the link was installed (lost found it not current);
	// guarded by the client's mu. install refuses such a link.
	ended bool
}

// newLink starts serving a connection; when it ends, lost decides what next.
// Not yet installed, it is the connection a reconnect resumes (resumeOn).
func (c *Client) newLink(f jsonrpc.Framer, framerDone <-chan struct{}) *link {
	l := c.makeLink(f, framerDone)
	go c.serve(l)
	return l
}

// firstLink is newLink of the connection Dial opened, installed before it is
// served: should it end at once, lost sees it as the current one.
func (c *Client) firstLink(f jsonrpc.Framer, framerDone <-chan struct{}) {
	l := c.makeLink(f, framerDone)
	c.install(l)
	go c.serve(l)
}

func (c *Client) makeLink(f jsonrpc.Framer, framerDone <-chan struct{}) *link {
	l := &link{done: make(chan struct{}), framerDone: framerDone}
	l.conn = jsonrpc.NewConn(f, jsonrpc.HandlerFunc(c.handle), jsonrpc.Options{
		// session/update is served on the reader, so updates keep the daemon's order and
		// are queued before the answer that follows them is read (see Prompt).
		Schedule: func(r *jsonrpc.Request) jsonrpc.Schedule {
			if r.Method == "session/update" {
				return jsonrpc.Inline
			}
			return jsonrpc.Spawn
		},
		Logger: c.opts.logger,
	})
	return l
}

// serve runs l's connection; when it ends, lost decides what next.
func (c *Client) serve(l *link) {
	l.conn.Run()
	next := c.lost(l)
	close(l.done)
	next()
}

// install makes l the connection calls go to, unless its connection has ended
// already (the daemon or the network dropped it right after it was set up): then
// it reports false, and the client is still disconnected.
func (c *Client) install(l *link) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.ended {
		return false
	}
	c.cur = l
	close(c.ready)
	return true
}

// current returns the connection to call on, waiting while the client reconnects.
func (c *Client) current(ctx context.Context) (*link, error) {
	for {
		c.mu.Lock()
		l, ready := c.cur, c.ready
		c.mu.Unlock()
		if l != nil {
			return l, nil
		}
		select {
		case <-ready:
		case <-c.done:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// finish ends the client: no connection, no reconnecting; queued updates are still
// delivered.
func (c *Client) finish() {
	c.doneOnce.Do(func() {
		c.queue.close()
		close(c.done)
	})
}

// Endpoint returns the endpoint the client is connected to.
func (c *Client) Endpoint() string { return c.endpoint }

// StartedDaemon reports whether Dial started the daemon (WithAutoStart), and its pid.
func (c *Client) StartedDaemon() (pid int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started == nil {
		return 0, false
	}
	return c.started.pid, true
}

// Close closes the connection (and stops reconnecting). Calls in flight fail with
// ErrClosed. An ephemeral daemon started by Dial exits about a second after its
// last client leaves.
func (c *Client) Close() error {
	c.quitOnce.Do(func() { close(c.quit) })
	c.mu.Lock()
	l := c.cur
	c.mu.Unlock()
	if l != nil {
		l.conn.Close()
		<-l.done
	}
	<-c.done
	c.queue.wait()
	if l != nil && l.framerDone != nil {
		<-l.framerDone
	}
	return nil
}

// Done is closed when the client is over: Close, or the connection ended and the
// client does not reconnect (no WithReconnect, or it gave up).
func (c *Client) Done() <-chan struct{} { return c.done }

// Call sends one request and decodes its result into result (when non-nil). params
// is anything encoding/json/v2 marshals (a jsontext.Value goes as is); nil means {}.
// An error answer is returned as *Error.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if params == nil {
		params = jsontext.Value("{}")
	}
	l, err := c.current(ctx)
	if err != nil {
		return err
	}
	return convert(l.conn.Call(ctx, method, params, result))
}

// SetElicitationHandler sets who answers the daemon's elicitation/create requests
// (questions of the ask_user tool). Set it before Initialize: Initialize declares
// the capability only when a handler is set. Without a handler the client answers
// {"action":"decline"}.
func (c *Client) SetElicitationHandler(h ElicitationHandler) {
	c.mu.Lock()
	c.elicit = h
	c.mu.Unlock()
}

// SetUpdateHandler sets the callback for session/update notifications that no Prompt
// in flight on this client takes: updates replayed by Attach, turns started by other
// clients of an attached session. Callbacks run one at a time, in the daemon's order,
// on a goroutine of the client; they may call the client (Approve, Cancel), but must
// not wait for Prompt or Attach.
func (c *Client) SetUpdateHandler(f func(Update)) {
	c.mu.Lock()
	c.global = f
	c.mu.Unlock()
}

// LastSeq returns the highest seq seen in a session/update of the session, 0 when
// none: pass it to Attach to replay what this client missed.
func (c *Client) LastSeq(sessionID string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastSeq[sessionID]
}

// handle serves the daemon's requests and notifications.
func (c *Client) handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	switch req.Method {
	case "session/update":
		var u Update
		if err := json.Unmarshal(req.Params, &u); err != nil {
			c.opts.logger.Warn("unreadable session/update", "err", err)
			return nil, nil
		}
		u.Raw = req.Params
		c.queue.push(u)
		return nil, nil
	case "tool/call":
		return c.serveToolCall(ctx, req)
	case "$/cancel_request":
		c.cancelToolCall(req.Params)
		return nil, nil
	case "elicitation/create":
		var e Elicitation
		if err := json.Unmarshal(req.Params, &e); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %v", err)
		}
		c.mu.Lock()
		h := c.elicit
		c.mu.Unlock()
		if h == nil {
			return ElicitationResult{Action: "decline"}, nil
		}
		r, err := h(ctx, e)
		if err != nil {
			return ElicitationResult{Action: "cancel"}, nil
		}
		return r, nil
	}
	return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "method not found: "+req.Method, map[string]any{"method": req.Method})
}

// dispatch hands one update to its callback; it runs on the queue's goroutine.
func (c *Client) dispatch(u Update) {
	c.mu.Lock()
	if u.Seq > c.lastSeq[u.SessionID] {
		c.lastSeq[u.SessionID] = u.Seq
	}
	fn := c.global
	if p := c.prompts[u.SessionID]; p != nil {
		fn = p.fn
	}
	cancel := c.pendingCancel(u)
	c.mu.Unlock()
	if cancel { // asked for while disconnected, before this turn ran (reconnect.go)
		go func() {
			ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
			defer stop()
			c.Cancel(ctx, u.SessionID)
		}()
	}
	if fn != nil {
		fn(u)
	}
}

// subscribe routes the session's updates to fn until the returned func is called.
func (c *Client) subscribe(sessionID string, fn func(Update)) func() {
	if fn == nil {
		return func() {}
	}
	c.mu.Lock()
	p := c.prompts[sessionID]
	if p == nil {
		p = &promptSub{fn: fn}
		c.prompts[sessionID] = p
	}
	p.refs++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		if p.refs--; p.refs == 0 && c.prompts[sessionID] == p {
			delete(c.prompts, sessionID)
		}
		c.mu.Unlock()
	}
}

// settle waits until every update read before now has been handed to its callback.
// It returns a *LaggedError when updates of the session were discarded.
func (c *Client) settle(ctx context.Context, sessionID string) error {
	c.queue.waitDelivered(ctx, c.queue.pushed())
	if after, lagged := c.queue.laggedAt(sessionID); lagged {
		return &LaggedError{SessionID: sessionID, AfterSeq: after}
	}
	return nil
}

// pollInterval is how often a starting daemon's endpoint is tried.
const pollInterval = 20 * time.Millisecond
