package rpc

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/version"
	"io"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/auth"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/memory"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/metrics"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/upload"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// Protocol and server versions announced by initialize and status.
const (
	ProtocolVersion = 1
	ServerVersion   = version.Version
)

// HandshakeTimeout is how long a connection may stay without a successful initialize.
const HandshakeTimeout = 30 * time.Second

// Peer is what a transport knows of the other end of a connection.
type Peer struct {
	Label string // for logs: "unix:pid=…,uid=…", "unix:unknown", "pipe:local", "wss:ip:port"
	UID   int    // -1 when unknown
	PID   int    // -1 when unknown
	// Remote marks a connection from the network (WSS): the chunked upload methods
	// are served on local connections only (docs/protocol.md, "Authorization").
	Remote bool
}

// ClientTracker is told when a client connects and disconnects; the daemon's
// ephemeral mode uses it. Calls come from many goroutines.
type ClientTracker interface {
	Connected()
	Disconnected()
}

// Config builds a Server. Zero values work except where noted.
type Config struct {
	DataDir  string // reported by status
	Endpoint string // reported by status
	// MaxConnections bounds open connections; one more gets -32004 and is closed.
	// Zero means 512.
	MaxConnections int
	// HandshakeTimeout is HandshakeTimeout when zero.
	HandshakeTimeout time.Duration
	// FrameTimeout and WriteTimeout override the NDJSON framer's limits
	// (jsonrpc.FrameTimeout, jsonrpc.WriteStallTimeout) when non-zero.
	FrameTimeout, WriteTimeout time.Duration
	DaemonUID                  int
	Clients                    ClientTracker // may be nil
	Sessions                   *session.Manager
	Logger                     *slog.Logger // nil means slog.Default()
	// Config is the live configuration: the roster and permission profiles every
	// call is authorized against, and what config/get and config/set serve. nil
	// means the defaults, in memory only.
	Config *config.Live
	// Pairings are the pairing tokens (pairing/*). nil means none, in memory only.
	Pairings *auth.Pairings
	// Fingerprint is the SHA-256 fingerprint of the WSS certificate, which
	// pairing/create hands out for clients to pin; empty when WSS is off.
	Fingerprint string

	// OutboundFrames and OutboundBytes bound the notifications queued for one
	// connection (docs/protocol.md, "Delivery", rpc.outbound_frames and
	// rpc.outbound_bytes); zero means jsonrpc.OutboundFrames and
	// jsonrpc.OutboundBytes.
	OutboundFrames, OutboundBytes int

	// Store is the durable store the sessions live in; the upload index is kept
	// there beside them. The file methods need it.
	Store *store.Store

	// MCP reports the daemon's MCP servers (mcp/status); nil: none.
	MCP MCPStatus

	// Memory is the agents' memories (memory/*); nil: the methods answer memory_off.
	Memory *memory.Service

	// Metrics counts calls and connections, and serves metrics/scrape
	// (metrics.go); nil: nothing is counted and metrics/scrape answers -32603.
	Metrics *metrics.Metrics
}

// Server serves JSON-RPC connections with the daemon's method table.
type Server struct {
	cfg     Config
	log     *slog.Logger
	started time.Time
	pid     int
	methods map[string]*methodRow  // the one method table, built from each family's rows
	uploads *upload.Stage[binding] // staged chunked uploads (files.go)
	names   []string               // sorted method names, for initialize

	instanceID  string      // random per Server, so per daemon start (initialize.go)
	statusParts statusCache // the constant bytes of status answers (status_json.go)
	// unknownMethod counts the calls of methods the table lacks, under one label.
	unknownMethod *metrics.Method
	shards        atomic.Uint32 // the last shard handed to a connection

	mu     sync.Mutex
	conns  map[*connState]struct{}
	nconns atomic.Int64 // len(conns), for status without the lock
	closed bool
	active sync.WaitGroup

	// testPrepared, when set, runs in each commit once its temporary file (if it
	// needs one) is written and synced, before any lock is taken (commit.go).
	testPrepared func()
}

// method serves one method for an initialized connection.
type method func(ctx context.Context, c *connState, params jsontext.Value) (any, error)

// methodRow declares one method. Each family's file lists its rows; NewServer builds
// the one table from them, and the gate (connState.Handle) serves every call by it.
type methodRow struct {
	name  string
	grant auth.Grant // what the caller needs (docs/protocol.md, "Authorization"); initialize alone has none
	// schedule is how a connection serves the method's calls once the handshake
	// is done (Spawn when zero):
	//   - InPlace for methods that never wait (no I/O, no lock held for long): the
	//     reader serves them itself, in order, since a goroutine per call would cost
	//     more than the call. Their handlers keep nothing of their ctx past their
	//     return, nor of their params: the reader serves them from its buffer.
	//   - Priority for methods that never wait for an in-flight slot
	//     (docs/protocol.md, "Delivery"): a client whose slots are all held by
	//     running prompts can still see, approve and cancel them.
	//   - Recycle, added, for a handler that keeps nothing of its frame once
	//     answered: the frame's buffer reads the next one.
	schedule jsonrpc.Schedule
	// localOnly methods are refused to remote (WSS) peers with -32012.
	localOnly bool
	handler   method
	metrics   *metrics.Method // its collectors, resolved once (metrics.go)
}

// NewServer returns a Server ready to serve connections.
func NewServer(cfg Config) *Server {
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = 512
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = HandshakeTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		started: time.Now(),
		pid:     os.Getpid(),
		conns:   make(map[*connState]struct{}),
	}
	s.instanceID = newInstanceID()
	s.unknownMethod = cfg.Metrics.Method("unknown")
	families := [][]methodRow{
		{
			{name: "initialize", handler: s.initialize, schedule: jsonrpc.Priority},
			// status reads counters under short locks: cheaper served than scheduled.
			{name: "status", grant: auth.SystemRead, schedule: jsonrpc.InPlace, handler: s.status},
		},
		s.sessionMethods(),
		s.configMethods(),
		s.pairingMethods(),
		s.fileMethods(), // after configMethods: it reads the live config
		s.agentMethods(),
		s.controlMethods(),
		s.steerMethods(),
		s.toolMethods(),
		s.memoryMethods(),
		s.metricsMethods(),
	}
	s.methods = make(map[string]*methodRow)
	for _, rows := range families {
		for i := range rows {
			row := &rows[i]
			if _, dup := s.methods[row.name]; dup {
				panic("rpc: method " + row.name + " declared twice")
			}
			if row.grant == "" && row.name != "initialize" {
				panic("rpc: method " + row.name + " declares no grant")
			}
			row.metrics = cfg.Metrics.Method(row.name)
			s.methods[row.name] = row
			s.names = append(s.names, row.name)
		}
	}
	sort.Strings(s.names)
	return s
}

// ServeStream serves one local stream (a Unix socket or named pipe connection) with
// NDJSON framing until it closes.
func (s *Server) ServeStream(rwc io.ReadWriteCloser, peer Peer) {
	f := jsonrpc.NewNDJSON(rwc)
	if s.cfg.FrameTimeout > 0 {
		f.LineTimeout = s.cfg.FrameTimeout
	}
	if s.cfg.WriteTimeout > 0 {
		f.WriteTimeout = s.cfg.WriteTimeout
	}
	s.Serve(f, peer)
}

// Serve serves one connection until it closes. A connection beyond the limit gets
// one -32004 error and is closed.
func (s *Server) Serve(f jsonrpc.Framer, peer Peer) {
	log := s.log.With("peer", peer.Label)
	c := &connState{srv: s, peer: peer, log: log, shard: s.shards.Add(1)}
	c.conn = jsonrpc.NewConn(f, c, jsonrpc.Options{
		// Until the handshake succeeds, frames are served in order, so a client may
		// pipeline initialize and its first calls; the handshake runs deep, and
		// served on a goroutine of its own (in order all the same) it leaves the
		// reader's stack, which an idle connection keeps, small. After it, each
		// method's row says.
		Schedule: func(r *jsonrpc.Request) jsonrpc.Schedule {
			if !c.initialized.Load() {
				return jsonrpc.Ordered
			}
			return s.schedule(r)
		},
		OutboundFrames: s.cfg.OutboundFrames,
		OutboundBytes:  s.cfg.OutboundBytes,
		Logger:         log,
	})
	if err := s.admit(c); err != nil {
		log.Warn("connection refused", "reason", err.Message)
		f.WriteFrame(jsonrpc.AppendError(make([]byte, 0, 128), jsonrpc.NullID, err))
		f.Close()
		return
	}
	defer s.release(c)

	gate := time.AfterFunc(s.cfg.HandshakeTimeout, func() {
		if !c.initialized.Load() {
			log.Info("closing connection: no initialize", "after", s.cfg.HandshakeTimeout)
			c.conn.Close()
		}
	})
	defer gate.Stop()

	start := time.Now()
	onFreshStack(func() { log.Info("connection opened", "pid", peer.PID, "uid", peer.UID) })
	err := c.conn.Run()
	c.untrack()
	s.cfg.Sessions.Detach(c)
	s.uploads.Discard(c)
	attrs := []any{"duration", time.Since(start).Round(time.Millisecond)}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	log.Info("connection closed", attrs...)
}

func (s *Server) admit(c *connState) *jsonrpc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return jsonrpc.NewError(protocol.CodeConnectionLimit, "daemon is shutting down", map[string]any{"reason": "shutting_down"})
	}
	if len(s.conns) >= s.cfg.MaxConnections {
		return jsonrpc.NewError(protocol.CodeConnectionLimit, "connection limit reached",
			map[string]any{"reason": "connection_limit", "limit": s.cfg.MaxConnections})
	}
	s.conns[c] = struct{}{}
	s.nconns.Store(int64(len(s.conns)))
	c.disconnected = s.cfg.Metrics.Connected(transportOf(c.peer))
	s.active.Add(1)
	if s.cfg.Clients != nil {
		s.cfg.Clients.Connected()
	}
	return nil
}

func (s *Server) release(c *connState) {
	s.mu.Lock()
	delete(s.conns, c)
	s.nconns.Store(int64(len(s.conns)))
	s.mu.Unlock()
	c.disconnected()
	if s.cfg.Clients != nil {
		s.cfg.Clients.Disconnected()
	}
	s.active.Done()
}

// Connections returns the number of open connections.
func (s *Server) Connections() int { return int(s.nconns.Load()) }

// Shutdown refuses new connections and stops reading the open ones: requests in
// flight are answered, then each connection closes. When ctx ends first, the
// remaining connections are closed at once.
func (s *Server) Shutdown(ctx context.Context) error {
	if n, charged := s.uploads.Staged(); n > 0 {
		// Staged uploads live in memory with their connections: say what is dropped.
		s.log.Info("shutting down with uploads staged; they are discarded with their connections",
			"uploads", n, "bytes", charged)
	}
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.conn.Shutdown()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.active.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for c := range s.conns {
		c.conn.Close()
	}
	s.mu.Unlock()
	<-done
	return ctx.Err()
}

// onFreshStack runs f on a goroutine of its own and waits for it. Logging runs
// deep; run by the connection's goroutine, which becomes its reader and keeps its
// stack for as long as the connection idles, it would leave every idle connection
// with an 8 KiB stack instead of 4.
func onFreshStack(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

// connState is one connection's view of the server: its handshake and principal.
type connState struct {
	srv  *Server
	conn *jsonrpc.Conn
	peer Peer
	log  *slog.Logger

	initialized atomic.Bool
	inlineAuth  authorized // the context of inline calls (authorize); the reader's alone
	session     atomic.Pointer[handshake]

	// tracking is the registration of a remote connection with its pairing token, so
	// that revoking the token closes it (auth.Pairings.Track); nil until then.
	trackMu  sync.Mutex
	tracking func()

	disconnected func()        // counts the connection closed in the metrics (admit)
	shard        uint32        // where its calls are counted (metrics.Method.Done)
	inlineCalls  atomic.Uint32 // inline calls so far, one in metrics.SampleEvery timed
}

// handshake is what a successful initialize fixed for the connection.
type handshake struct {
	principal    auth.Principal
	pairing      string // hash of the pairing token a remote peer presented
	client       ClientInfo
	capabilities ClientCapabilities
}

// Handle is the gate (docs/protocol.md, "Handshake") in front of the method table.
func (c *connState) Handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	row, known := c.srv.methods[req.Method]
	if !c.initialized.Load() {
		switch {
		case req.IsNotification():
			// Dropped, initialize included: a handshake nobody hears back from
			// would leave the client unsure whether it took effect.
			return nil, nil
		case known && req.Method != "initialize":
			return nil, jsonrpc.Errorf(protocol.CodeUnauthenticated, "first call must be initialize")
		}
	}
	if !known {
		c.srv.unknownMethod.Done(c.shard, time.Now(), jsonrpc.CodeMethodNotFound)
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "method not found: "+req.Method,
			map[string]any{"method": req.Method})
	}
	start := c.clock(row)
	if req.Method != "initialize" {
		// The grant (docs/protocol.md, "Authorization"), against the caller's current
		// authority (grants.go).
		var err error
		if ctx, err = c.authorize(ctx, row); err != nil {
			row.metrics.Done(c.shard, start, wireCode(err))
			return nil, err
		}
	}
	result, err := row.handler(ctx, c, req.Params)
	err = toWire(err)
	row.metrics.Done(c.shard, start, wireCode(err))
	return result, err
}

// schedule is how a connection past its handshake serves r: its method row's
// schedule, Spawn for a method there is none of (it is refused on a goroutine).
func (s *Server) schedule(r *jsonrpc.Request) jsonrpc.Schedule {
	if row := s.methods[r.Method]; row != nil {
		return row.schedule
	}
	return jsonrpc.Spawn
}

// onReader reports whether the connection's reader serves the row's calls itself.
func (r *methodRow) onReader() bool {
	m := r.schedule.Mode()
	return m == jsonrpc.Inline || m == jsonrpc.InPlace
}

// caller is the connection's principal as the session layer sees it.
func (c *connState) caller() session.Caller {
	h := c.session.Load()
	return session.Caller{Principal: h.principal.ID, Admin: h.principal.Admin}
}

// Deliver queues session/update notifications while the connection's window for
// them has room (session.Subscriber): the session's cursor paces the stream to the
// client's reading (docs/protocol.md, "A daemon that runs for months").
func (c *connState) Deliver(updates []jsontext.Value, frames [][]byte) (int, error) {
	if frames != nil && c.conn.FramesNDJSON() {
		return c.conn.NotifyPacedFrames(frames) // no copy: written from the tail
	}
	return c.conn.NotifyPacedBatch("session/update", updates)
}

// PacedBytes tells how far the connection has written the frames Deliver handed
// it from the session's memory, which the session writes again after that.
func (c *connState) PacedBytes() (queued, released uint64) { return c.conn.PacedBytes() }

// Want has the connection's writer pull from p once Deliver has room
// (session.Subscriber): the cursor has no goroutine of its own.
func (c *connState) Want(p session.Puller) error { return c.conn.Want(p) }

// Lagged tells the client it fell behind sessionID (docs/protocol.md, "Delivery" and
// "A client that falls behind"): one session/update {sessionId, type: "lagged",
// afterSeq}, queued right behind the last update it was sent and before any later
// response (the prompt's answer among them), so the client learns of the gap before
// it learns the turn ended.
func (c *connState) Lagged(sessionID string, afterSeq uint64) {
	err := c.conn.NotifyUnbounded("session/update", laggedUpdate{SessionID: sessionID, Type: protocol.Lagged, AfterSeq: afterSeq})
	if err != nil {
		c.log.Info("the connection closed before it could be told it lagged", "session", sessionID)
	}
}

type laggedUpdate struct {
	SessionID string `json:"sessionId"`
	Type      string `json:"type"`
	AfterSeq  uint64 `json:"afterSeq"`
}

// CanElicit reports whether the client declared form elicitation.
func (c *connState) CanElicit() bool {
	h := c.session.Load()
	return h != nil && h.capabilities.Elicitation != nil && h.capabilities.Elicitation.Form != nil
}

// Elicit sends elicitation/create and waits for the client's answer. An error
// object is an answer that fails the question (session.ElicitError).
func (c *connState) Elicit(ctx context.Context, p session.ElicitParams) (session.ElicitResult, error) {
	var r session.ElicitResult
	err := c.conn.Call(ctx, "elicitation/create", p, &r)
	if je, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return r, &session.ElicitError{Message: je.Message}
	}
	return r, err
}
