package client

import (
	"context"
)

// Initialize performs the handshake (protocol version 1). It declares form
// elicitation when an elicitation handler is set. Call it first; it may be repeated.
func (c *Client) Initialize(ctx context.Context) (*InitializeResult, error) {
	var r InitializeResult
	if err := c.Call(ctx, "initialize", c.initializeParams(), &r); err != nil {
		return nil, err
	}
	c.initialized(&r)
	return &r, nil
}

func (c *Client) initializeParams() map[string]any {
	params := map[string]any{
		"protocolVersion": 1,
		"clientInfo":      map[string]string{"name": c.opts.clientName, "version": c.opts.clientVer},
	}
	if c.opts.token != "" {
		params["authToken"] = c.opts.token
	}
	c.mu.Lock()
	if c.elicit != nil {
		params["clientCapabilities"] = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	}
	c.mu.Unlock()
	return params
}

// Status returns the daemon's status and the live sessions the caller may see.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var r Status
	if err := c.Call(ctx, "status", nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// NewSession opens a session (session/new). The connection is attached to it: it
// receives the session's updates.
func (c *Client) NewSession(ctx context.Context, p NewSessionParams) (*Session, error) {
	var r Session
	if err := c.Call(ctx, "session/new", p, &r); err != nil {
		return nil, err
	}
	if p.ClientTools != nil {
		c.SetSessionTools(r.SessionID, p.ClientTools)
	}
	c.follow(r.SessionID, true)
	return &r, nil
}

// Attach attaches the connection to a live or durable session (session/attach). The
// daemon first replays every stored update with a seq above afterSeq (0 replays all
// that is kept), then streams the live ones, with no gap and no duplicate. Replayed
// updates go to the update handler (SetUpdateHandler), or to onUpdate when it is not
// nil; all of them have been handed over when Attach returns. Pass LastSeq to replay
// exactly what this client missed. Updates older than the daemon keeps fail with an
// *Error whose Reason is "replay_truncated". When onUpdate fell so far behind that
// updates had to be discarded, Attach returns its result with a *LaggedError.
func (c *Client) Attach(ctx context.Context, sessionID string, afterSeq uint64, onUpdate func(Update)) (*AttachResult, error) {
	defer c.subscribe(sessionID, onUpdate)()
	var r AttachResult
	err := c.Call(ctx, "session/attach", c.attachParams(sessionID, afterSeq), &r)
	lagged := c.settle(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	c.follow(sessionID, true)
	if lagged != nil {
		return &r, lagged
	}
	return &r, nil
}

// Prompt runs one turn (session/prompt) and returns its result. While it runs, the
// session's updates go to onUpdate (when not nil) in the order the daemon sent them;
// every update of the turn has been handed to onUpdate when Prompt returns. When
// onUpdate fell so far behind that updates had to be discarded, Prompt returns the
// result together with a *LaggedError.
// attachments are file entries from Upload (or {ref_id} of an earlier upload); their
// markers are appended to the prompt. A turn that stopped (cancelled, max_steps,
// error) is not an error: see PromptResult.StopReason. Ending ctx stops waiting but
// does not cancel the turn: use Cancel for that.
//
// Every prompt carries an operationId of its own: with WithReconnect, a prompt whose
// connection drops is sent again with it once connected again, and answered with the
// one turn it started (PromptResult.Restarted says when the daemon restarted meanwhile).
func (c *Client) Prompt(ctx context.Context, sessionID, text string, attachments []FileEntry, onUpdate func(Update)) (*PromptResult, error) {
	defer c.subscribe(sessionID, onUpdate)()
	params := map[string]any{"sessionId": sessionID, "prompt": text, "operationId": newOperationID()}
	if len(attachments) > 0 {
		params["attachments"] = attachments
	}
	since := c.promptBegins(sessionID)
	var r PromptResult
	err := c.callAgain(ctx, "session/prompt", params, &r, nil)
	lagged := c.settle(ctx, sessionID)
	restarted := c.promptEnds(sessionID, since)
	if err != nil {
		return nil, err
	}
	r.Restarted = restarted
	if lagged != nil {
		return &r, lagged // the turn's result, and the updates it could not deliver
	}
	return &r, nil
}

// Cancel stops the session's running turn; it reports false when no turn ran. With
// WithReconnect, a cancel asked for while the client reconnects is not lost: it is
// sent once connected again (and, when no turn ran by then, to the turn the re-sent
// prompt starts).
func (c *Client) Cancel(ctx context.Context, sessionID string) (bool, error) {
	var r struct {
		Cancelled bool `json:"cancelled"`
	}
	c.wantCancel(sessionID)
	err := c.callAgain(ctx, "session/cancel", map[string]any{"sessionId": sessionID}, &r, func() { c.wantCancel(sessionID) })
	if err == nil {
		c.cancelAnswered(sessionID, r.Cancelled)
	}
	return r.Cancelled, err
}

// Approve answers an approval_request update with AllowOnce, AllowAlways or
// RejectOnce. It reports false when the request is unknown or expired (another
// client answered first, or it timed out).
func (c *Client) Approve(ctx context.Context, sessionID, requestID, decision string) (bool, error) {
	var r struct {
		Accepted bool `json:"accepted"`
	}
	err := c.Call(ctx, "session/approve", map[string]any{"sessionId": sessionID, "requestId": requestID, "decision": decision}, &r)
	return r.Accepted, err
}

// ListSessions returns the caller's sessions, live and durable (session/list), at
// most limit (1–1000, 0 means the daemon's default of 50) after cursor; the second
// result is the cursor of the next page ("" at the end).
func (c *Client) ListSessions(ctx context.Context, limit int, cursor string) ([]ListedSession, string, error) {
	params := map[string]any{}
	if limit > 0 {
		params["limit"] = limit
	}
	if cursor != "" {
		params["cursor"] = cursor
	}
	var r struct {
		Sessions   []ListedSession `json:"sessions"`
		NextCursor string          `json:"nextCursor"`
	}
	if err := c.Call(ctx, "session/list", params, &r); err != nil {
		return nil, "", err
	}
	return r.Sessions, r.NextCursor, nil
}

// CloseSession ends the live session; its history stays resumable.
func (c *Client) CloseSession(ctx context.Context, sessionID string) error {
	c.follow(sessionID, false)
	return c.Call(ctx, "session/close", map[string]any{"sessionId": sessionID}, nil)
}
