package client

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// Reconnect configures WithReconnect.
type Reconnect struct {
	// Notify, when set, is told when the connection is lost, when it is back, and
	// when the client gives up. It runs on a goroutine of the client, one event at a
	// time; it must not wait for calls of the client. Every ConnectionLost is
	// followed by Reconnected or GaveUp; a connection that drops right after its
	// Reconnected is one more loss, told as such.
	Notify func(ConnectionEvent)
	// GiveUp bounds how long the client keeps trying after a loss; zero means five
	// minutes. Then the client is over (Done) and calls fail with ErrClosed.
	GiveUp time.Duration
}

// ConnectionEvent kinds.
const (
	ConnectionLost = "lost"        // the connection dropped; the client is reconnecting
	Reconnected    = "reconnected" // connected again; sessions re-attached; told before waiting calls go on
	GaveUp         = "gave_up"     // no daemon answered within Reconnect.GiveUp
)

// ConnectionEvent says what became of the client's connection (WithReconnect).
type ConnectionEvent struct {
	Kind string
	// Restarted (Reconnected): the daemon is another start than before (a new
	// instanceId): turns that ran at the loss were interrupted, and the daemon
	// recovered their sessions.
	Restarted bool
	// InFlight: a Prompt was waiting for its answer when the connection was lost.
	InFlight bool
	Err      error // GaveUp: the last dial error
}

// WithReconnect makes the client survive a lost connection (docs/protocol.md,
// "Reconnecting safely"): it dials the endpoint again (starting an ephemeral daemon
// again, at most once per loss, when Dial had started the one that went away),
// repeats Initialize, re-attaches every session it follows (NewSession, Attach,
// Prompt) with afterSeq = LastSeq, and only then lets calls through again. A Prompt
// in flight is sent again with the same operationId, so the daemon answers the turn
// it already runs (or ran, or recovered) instead of starting a second one, and every
// update of the turn reaches the callback exactly once. A Cancel asked for while
// disconnected is sent once connected again, and again at the first live update of
// the session if no turn was running yet. Other calls wait while the client
// reconnects; one whose connection drops before its answer fails with ErrClosed.
func WithReconnect(r Reconnect) Option { return func(o *options) { o.reconnect = &r } }

// resumeState is what a reconnect needs to put the client back where it was.
type resumeState struct {
	initialized bool
	instanceID  string
	restarts    uint64            // reconnections that found another daemon start
	follow      map[string]bool   // sessions to re-attach
	inFlight    map[string]int    // prompts waiting for their answer, per session
	cancel      map[string]bool   // a cancel asked for while disconnected
	liveAfter   map[string]uint64 // since the last re-attach: the session's lastSeq then
}

func (r *resumeState) init() {
	if r.follow == nil {
		r.follow, r.inFlight = make(map[string]bool), make(map[string]int)
		r.cancel, r.liveAfter = make(map[string]bool), make(map[string]uint64)
	}
}

func newOperationID() string { return "op_" + rand.Text() }

// follow records a session to re-attach after a reconnect.
func (c *Client) follow(sessionID string, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resume.init()
	if on {
		c.resume.follow[sessionID] = true
	} else {
		delete(c.resume.follow, sessionID)
	}
}

// initialized records a successful Initialize and the daemon start it reached.
func (c *Client) initialized(r *InitializeResult) {
	c.mu.Lock()
	c.resume.initialized, c.resume.instanceID = true, r.InstanceID
	c.mu.Unlock()
}

// promptBegins counts a prompt in flight and returns the restart count to compare
// with at its end.
func (c *Client) promptBegins(sessionID string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resume.init()
	c.resume.follow[sessionID] = true
	c.resume.inFlight[sessionID]++
	return c.resume.restarts
}

// promptEnds ends what promptBegins counted and reports whether the daemon restarted
// since then (since is what promptBegins returned).
func (c *Client) promptEnds(sessionID string, since uint64) (restarted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resume.inFlight[sessionID]--; c.resume.inFlight[sessionID] <= 0 {
		delete(c.resume.inFlight, sessionID)
		delete(c.resume.cancel, sessionID) // the turn is over: nothing left to cancel
	}
	return c.resume.restarts != since
}

// retryable reports whether a call that failed with err on l should be sent again
// on the next connection, and waits until l is no longer the current one.
func (c *Client) retryable(l *link, err error) bool {
	if !errors.Is(err, ErrClosed) || c.opts.reconnect == nil {
		return false
	}
	select {
	case <-c.quit:
		return false
	case <-l.done: // lost has run: current waits for the next connection
		return true
	}
}

// callAgain sends a call that is safe to repeat, again on the next connection when
// its connection drops before the answer.
func (c *Client) callAgain(ctx context.Context, method string, params, result any, onLoss func()) error {
	for {
		l, err := c.current(ctx)
		if err != nil {
			return err
		}
		err = convert(l.conn.Call(ctx, method, params, result))
		if !c.retryable(l, err) {
			return err
		}
		if onLoss != nil {
			onLoss()
		}
	}
}

// wantCancel keeps a cancel of the session for the next connection when the client
// is disconnected and a prompt of the session is in flight.
func (c *Client) wantCancel(sessionID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resume.init()
	if c.cur == nil && c.resume.inFlight[sessionID] > 0 {
		c.resume.cancel[sessionID] = true
	}
}

// cancelAnswered: a cancel that stopped a turn is done; one that found none stays
// pending for the turn the re-sent prompt starts (see dispatch).
func (c *Client) cancelAnswered(sessionID string, cancelled bool) {
	if cancelled {
		c.mu.Lock()
		delete(c.resume.cancel, sessionID)
		c.mu.Unlock()
	}
}

// pendingCancel reports (once) whether u, a live update after a re-attach, should
// carry a cancel asked for while disconnected to the session's running turn. The
// caller holds c.mu.
func (c *Client) pendingCancel(u Update) bool {
	after, live := c.resume.liveAfter[u.SessionID]
	if !c.resume.cancel[u.SessionID] || !live || u.Seq == 0 || u.Seq <= after {
		return false
	}
	delete(c.resume.cancel, u.SessionID)
	return true
}

// lost is told that l's connection ended. It detaches l and returns what to do next
// (after l.done is closed): nothing for a connection that was not the current one,
// else reconnect or finish.
func (c *Client) lost(l *link) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != l {
		// Not installed (reconnect): install refuses it, and what resumeOn
		// learned on it is void.
		l.ended = true
		clear(c.resume.liveAfter)
		if c.opts.endedEarly != nil {
			c.opts.endedEarly()
		}
		return func() {}
	}
	c.cur, c.ready = nil, make(chan struct{})
	c.resume.init()
	clear(c.resume.liveAfter)
	inFlight := len(c.resume.inFlight) > 0
	finish := func() {
		if l.framerDone != nil { // the client is over once its WebSocket has closed
			<-l.framerDone
		}
		c.finish()
	}
	select {
	case <-c.quit:
		return finish
	default:
	}
	if c.opts.reconnect == nil {
		return finish
	}
	return func() { c.reconnect(inFlight) }
}

func (c *Client) event(e ConnectionEvent) {
	if f := c.opts.reconnect.Notify; f != nil {
		f(e)
	}
}

// reconnect dials until a daemon answers, puts the client back (resumeOn) and
// installs the new connection; or gives up. A connection that ends before it is
// installed (right after Reconnected was told) is a new loss: told as one, and
// reconnected from the start.
func (c *Client) reconnect(inFlight bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		c.event(ConnectionEvent{Kind: ConnectionLost, InFlight: inFlight})
		l := c.redialUntilResumed(ctx, inFlight)
		if l == nil {
			return // gave up, or Close
		}
		if c.install(l) {
			select {
			case <-c.quit: // Close came meanwhile: it saw no connection to close
				l.conn.Close()
			default:
			}
			return
		}
		c.mu.Lock()
		inFlight = len(c.resume.inFlight) > 0
		c.mu.Unlock()
	}
}

// redialUntilResumed dials until a connection is resumed (resumeOn), tells
// Reconnected and returns it, not yet installed; or it gives up or the client is
// closed, finishes the client and returns nil.
func (c *Client) redialUntilResumed(ctx context.Context, inFlight bool) *link {
	wait := c.opts.reconnect.GiveUp
	if wait <= 0 {
		wait = 5 * time.Minute
	}
	giveUp := time.NewTimer(wait)
	defer giveUp.Stop()
	startedAgain := false
	backoff := 20 * time.Millisecond
	for {
		l, err := c.redial(ctx, &startedAgain)
		if err == nil {
			var restarted bool
			if restarted, err = c.resumeOn(ctx, l); err == nil {
				// Told before the calls waiting for a connection go through: the
				// prompt in flight is sent again, and answered, only after it, so
				// that whoever reports both (zeroclaw chat) says that the daemon
				// restarted before it reports the turn's end (and exits). Told
				// after, it raced the answer and lost under load.
				c.event(ConnectionEvent{Kind: Reconnected, Restarted: restarted, InFlight: inFlight})
				return l
			}
			l.conn.Close()
			<-l.done
		}
		c.opts.logger.Debug("reconnecting", "endpoint", c.endpoint, "err", err)
		retry := time.NewTimer(backoff)
		select {
		case <-c.quit:
			retry.Stop()
			c.finish()
			return nil
		case <-giveUp.C:
			retry.Stop()
			c.event(ConnectionEvent{Kind: GaveUp, Err: err})
			c.finish()
			return nil
		case <-retry.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// redial opens a new connection to the endpoint. When nothing answers and Dial had
// started the daemon, it starts one again, once per loss.
func (c *Client) redial(ctx context.Context, startedAgain *bool) (*link, error) {
	if strings.HasPrefix(c.endpoint, "wss://") {
		f, err := wssFramer(ctx, c.endpoint, c.opts)
		if err != nil {
			return nil, err
		}
		return c.newLink(f, f.Done()), nil
	}
	nc, err := endpoint.Dial(ctx, c.endpoint)
	if err != nil && noDaemon(err) {
		c.mu.Lock()
		had := c.started != nil
		c.mu.Unlock()
		if had && !*startedAgain && c.opts.autoStart != nil {
			*startedAgain = true
			var d *startedDaemon
			if nc, d, err = c.opts.autoStart.start(ctx, c.endpoint, c.dirs); err == nil && d != nil {
				c.mu.Lock()
				c.started = d
				c.mu.Unlock()
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return c.newLink(jsonrpc.NewNDJSON(nc), nil), nil
}

// resumeOn repeats Initialize on l and re-attaches the followed sessions after the
// last update queued (those still queued for a callback are delivered in order before
// the replayed ones). It never waits for a callback: one may be waiting for a call
// that waits for this reconnect. It reports whether the daemon restarted.
func (c *Client) resumeOn(ctx context.Context, l *link) (bool, error) {
	c.mu.Lock()
	initialized, prev := c.resume.initialized, c.resume.instanceID
	after := make(map[string]uint64)
	for sid := range c.resume.follow {
		after[sid] = c.queue.resumeFrom(sid)
	}
	c.mu.Unlock()
	if !initialized {
		return false, nil
	}
	var r InitializeResult
	if err := convert(l.conn.Call(ctx, "initialize", c.initializeParams(), &r)); err != nil {
		return false, err
	}
	for sid, seq := range after {
		var a AttachResult
		err := convert(l.conn.Call(ctx, "session/attach", c.attachParams(sid, seq), &a))
		if errors.Is(err, ErrClosed) || ctx.Err() != nil {
			return false, errors.Join(err, ctx.Err())
		}
		if err != nil { // gone meanwhile (deleted, killed): nothing to follow
			c.opts.logger.Warn("re-attaching a session after a reconnect failed", "session", sid, "err", err)
			continue
		}
		c.mu.Lock()
		c.resume.liveAfter[sid] = a.LastSeq
		c.mu.Unlock()
	}
	restarted := prev != "" && r.InstanceID != prev
	c.mu.Lock()
	c.resume.instanceID = r.InstanceID
	if restarted {
		c.resume.restarts++
	}
	c.mu.Unlock()
	return restarted, nil
}

// resumeFrom returns the seq of the session's last queued update, the afterSeq a
// new connection re-attaches with, and ends the session's lag if it had one: the
// new connection delivers every update after it (see LaggedError).
func (q *updateQueue) resumeFrom(sessionID string) uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.lagged, sessionID)
	return q.last[sessionID]
}
