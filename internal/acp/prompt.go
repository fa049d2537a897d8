package acp

import (
	"context"
	"encoding/base64"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// attachLimit is the largest file sent in one file/attach; larger ones go through
// the chunked upload, since a file/attach frame is bounded by the daemon's 8 MiB.
const attachLimit = 4 << 20

// block is one ACP ContentBlock of a prompt, every variant's members in one.
type block struct {
	Type     string         `json:"type"`
	Text     *string        `json:"text"`     // text
	URI      string         `json:"uri"`      // resource_link, image
	Name     string         `json:"name"`     // resource_link
	MimeType string         `json:"mimeType"` // image, audio
	Data     string         `json:"data"`     // image, audio: base64
	Resource *resourceBlock `json:"resource"` // resource
}

type resourceBlock struct {
	URI      string  `json:"uri"`
	Text     *string `json:"text"`
	Blob     *string `json:"blob"`
	MimeType string  `json:"mimeType"`
}

func invalid(format string, args ...any) error {
	return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+fmt.Sprintf(format, args...), map[string]any{"param": "prompt"})
}

// prompt serves session/prompt: the content blocks become one native prompt and its
// attachments; the turn's updates are forwarded while it runs (forward).
func (b *Bridge) prompt(ctx context.Context, r *request, params jsontext.Value) (any, error) {
	var p struct {
		SessionID string   `json:"sessionId"`
		Prompt    *[]block `json:"prompt"`
	}
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: sessionId is required", map[string]any{"param": "sessionId"})
	}
	if p.Prompt == nil {
		return nil, invalid("prompt is required")
	}
	for i, blk := range *p.Prompt {
		if blk.Type == "audio" {
			return nil, invalid("prompt[%d]: audio content is not supported", i)
		}
	}
	b.mu.Lock()
	r.sessionID = p.SessionID // inline read it already, unless the params were odd
	b.mu.Unlock()
	d, err := b.session(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	text, files, err := b.content(ctx, d, p.SessionID, *p.Prompt)
	if err != nil {
		return nil, err
	}
	b.awaitCancels(ctx, p.SessionID)
	if r.cancelled.Load() {
		return stopResult{StopReason: "cancelled"}, nil
	}
	if instructions, ok := compactPrompt(text); ok && len(files) == 0 {
		return b.compact(ctx, r, d, p.SessionID, instructions)
	}

	b.mu.Lock()
	s := b.state(p.SessionID)
	r.echo = text
	s.turn = r
	b.mu.Unlock()
	// The wait outlives the request's own context: a cancelled prompt still waits for
	// its turn to stop, and then answers "cancelled".
	res, err := d.Prompt(b.ctx, p.SessionID, text, files, func(u client.Update) { b.forward(d, u) })
	var lag *client.LaggedError
	if errors.As(err, &lag) {
		err = nil
		b.retire(d) // the client's queue dropped updates
	}
	if err == nil && b.live() != d {
		// Updates of the turn were dropped (the daemon's lagged, or the client's):
		// replay them on a new connection before answering.
		if _, rerr := b.session(ctx, p.SessionID); rerr != nil {
			b.log.Warn("replaying the updates missed during a turn failed", "session", p.SessionID, "err", rerr)
		}
	}
	// The turn's questions are over: each one still open in the editor is withdrawn
	// before the prompt answers.
	s.asking.Wait()
	b.catchUp()
	b.mu.Lock()
	if s.turn == r {
		s.turn = nil
	}
	if b.d == d {
		b.attached[p.SessionID] = true // whoever prompts is attached
	}
	b.mu.Unlock()

	switch {
	case r.cancelled.Load():
		return stopResult{StopReason: "cancelled"}, nil
	case errors.Is(err, client.ErrClosed):
		b.mu.Lock()
		if b.d == d {
			b.stale = true // dial again at the next request
		}
		b.mu.Unlock()
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError,
			"the zeroclaw daemon went away during the turn; the next request reconnects (or starts it again)", nil)
	case err != nil:
		return nil, err
	}
	switch res.StopReason {
	case client.StopEndTurn:
		return stopResult{StopReason: "end_turn"}, nil
	case client.StopCancelled:
		return stopResult{StopReason: "cancelled"}, nil
	case client.StopMaxSteps:
		return stopResult{StopReason: "max_turn_requests"}, nil
	}
	msg := res.Text
	if msg == "" {
		msg = "the turn failed"
	}
	return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, msg, map[string]any{"stopReason": res.StopReason, "turnId": res.TurnID})
}

// content turns ACP content blocks into the native prompt text (text blocks, links
// and embedded text joined by newlines) and attachments (images and binary
// resources, stored in the session's workspace first).
func (b *Bridge) content(ctx context.Context, d *client.Client, sid string, blocks []block) (string, []client.FileEntry, error) {
	var parts []string
	var files []client.FileEntry
	store := func(i int, name, data string) error {
		raw, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return invalid("prompt[%d]: data is not base64: %v", i, err)
		}
		var entry *client.FileEntry
		if len(raw) <= attachLimit {
			entry, err = d.AttachFile(ctx, sid, name, raw)
		} else {
			entry, err = d.UploadBytes(ctx, sid, name, raw)
		}
		if err != nil {
			return err
		}
		files = append(files, *entry)
		return nil
	}
	for i, blk := range blocks {
		switch blk.Type {
		case "text":
			if blk.Text == nil {
				return "", nil, invalid("prompt[%d]: a text block needs text", i)
			}
			parts = append(parts, *blk.Text)
		case "resource_link":
			if blk.URI == "" {
				return "", nil, invalid("prompt[%d]: a resource_link needs a uri", i)
			}
			parts = append(parts, pathOf(blk.URI))
		case "resource":
			res := blk.Resource
			switch {
			case res == nil:
				return "", nil, invalid("prompt[%d]: a resource block needs a resource", i)
			case res.Text != nil:
				parts = append(parts, pathOf(res.URI)+"\n"+*res.Text)
			case res.Blob != nil:
				name := fileName(res.URI)
				if name == "" {
					name = "resource." + extOf(res.MimeType)
				}
				if err := store(i, name, *res.Blob); err != nil {
					return "", nil, err
				}
			default:
				return "", nil, invalid("prompt[%d]: a resource needs text or blob", i)
			}
		case "image":
			name := fileName(blk.URI)
			if name == "" || !strings.Contains(name, ".") {
				name = "image." + extOf(blk.MimeType)
			}
			if err := store(i, name, blk.Data); err != nil {
				return "", nil, err
			}
		default:
			return "", nil, invalid("prompt[%d]: content type %q is not supported", i, blk.Type)
		}
	}
	return strings.Join(parts, "\n"), files, nil
}

// catchUp waits, at most a second, until every frame the editor has sent so far is
// served: a session/cancel already sent when the turn ended (it was queued behind
// the prompt, and the turn's end won the race on a busy machine) then makes the
// answer "cancelled", as docs/protocol.md, "ACP", says, rather than racing the reader.
func (b *Bridge) catchUp() {
	if b.input == nil {
		return
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-b.input.caughtUp():
	case <-t.C:
	case <-b.ctx.Done():
	}
}

// cancelTurn cancels the editor's prompt r. Its daemon turn is cancelled once it has
// begun (its user_message arrived): a turn that has not begun may be another
// client's, queued ahead of it. forward cancels it when it begins.
func (b *Bridge) cancelTurn(r *request) {
	r.cancelled.Store(true)
	b.mu.Lock()
	begun := r.begun
	b.mu.Unlock()
	if begun {
		b.cancelOnDaemon(r.sessionID)
	}
}

// cancelOnDaemon cancels the session's running turn on the daemon, in the
// background. The daemon stops whichever turn runs when the cancel arrives; the
// turn it was meant for may have ended meanwhile (it won the race), and had the
// editor's next prompt gone to the daemon before it, the cancel would stop that
// one. So the session's next prompt waits until the cancel is answered
// (awaitCancels).
func (b *Bridge) cancelOnDaemon(sid string) {
	b.mu.Lock()
	s := b.state(sid)
	if s.cancels == 0 {
		s.cancelsDone = make(chan struct{})
	}
	s.cancels++
	b.mu.Unlock()
	go func() {
		defer func() {
			b.mu.Lock()
			if s.cancels--; s.cancels == 0 {
				close(s.cancelsDone)
				s.cancelsDone = nil
			}
			b.mu.Unlock()
		}()
		if b.beforeCancel != nil {
			b.beforeCancel()
		}
		d := b.live()
		if d == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := d.Cancel(ctx, sid); err != nil {
			b.log.Info("cancelling a turn failed", "session", sid, "err", err)
		}
	}()
}

// awaitCancels waits until the session's daemon cancels in flight are answered
// (cancelOnDaemon), or ctx or the bridge ends.
func (b *Bridge) awaitCancels(ctx context.Context, sid string) {
	b.mu.Lock()
	s := b.sessions[sid]
	if s == nil || s.cancelsDone == nil {
		b.mu.Unlock()
		return
	}
	done := s.cancelsDone
	b.mu.Unlock()
	if b.awaitingCancels != nil {
		b.awaitingCancels()
	}
	select {
	case <-done:
	case <-ctx.Done():
	case <-b.ctx.Done():
	}
}

// cancelNotification serves session/cancel: the editor's prompt on the session stops.
func (b *Bridge) cancelNotification(params jsontext.Value) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if jsonrpc.DecodeParams(params, &p) != nil || p.SessionID == "" {
		b.log.Info("session/cancel without a sessionId")
		return
	}
	b.mu.Lock()
	var prompts []*request
	for _, r := range b.requests {
		if r.method == "session/prompt" && r.sessionID == p.SessionID {
			prompts = append(prompts, r)
		}
	}
	b.mu.Unlock()
	for _, r := range prompts {
		b.cancelTurn(r)
	}
}

// cancelRequest serves $/cancel_request: a prompt is cancelled as by session/cancel,
// any other request stops waiting and answers -32800.
func (b *Bridge) cancelRequest(params jsontext.Value) {
	var p struct {
		RequestID jsontext.Value `json:"requestId"`
	}
	if jsonrpc.DecodeParams(params, &p) != nil || len(p.RequestID) == 0 {
		b.log.Info("$/cancel_request without a requestId")
		return
	}
	b.mu.Lock()
	r := b.requests[trimID(p.RequestID)]
	b.mu.Unlock()
	switch {
	case r == nil:
	case r.method == "session/prompt":
		b.cancelTurn(r)
	default:
		r.cancelled.Store(true)
		r.cancel()
	}
}
