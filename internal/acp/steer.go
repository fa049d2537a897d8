package acp

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// ACP's steering extension (docs/protocol.md, "ACP"), as the Claude and Codex ACP
// adapters serve it and initialize advertises it (_meta.steering.supported): a
// request _session/steering {sessionId, prompt, _meta?: {steering: {idleBehavior}}}
// puts its text into the editor's running turn as a native session/steer does
// (docs/protocol.md, "Steering"), and answers {outcome}:
//
//   - "injected": the turn took it (stored, before its next model call); the
//     editor's session/prompt of that turn answers as the turn ends.
//   - "promptRequired" (reason "noRunningTurn"), with idleBehavior
//     "promptRequired": no turn of the editor ran, or it ended before it took the
//     text; nothing was stored or started, and the editor sends the text as a
//     session/prompt of its own.
//   - "startedNewTurn", without it: no turn of the editor ran (or it ended first),
//     so the text went to the session as a steer without expectedTurnId: it joined
//     the turn running then (another client's), or started one, whose updates
//     reach the editor and whose answer goes to nobody.
//
// The editor's own turn is named (expectedTurnId), so a steer racing its end is
// either injected into it or not taken at all, never both. The user_message of the
// steer (or of the turn it started) is not echoed to the editor, which shows what
// it sent, as for a prompt.
const steeringMethod = "_session/steering"

// Outcomes of _session/steering.
const (
	steerInjected       = "injected"
	steerStartedNewTurn = "startedNewTurn"
	steerPromptRequired = "promptRequired"
)

// idlePromptRequired is the idleBehavior that leaves the text to a session/prompt
// when no turn of the editor runs.
const idlePromptRequired = "promptRequired"

type steerResult struct {
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitzero"`
}

// steering is one of the editor's steers in flight: forward leaves out the first
// user_message with its text (ownSteer).
type steering struct{ text string }

// ownSteer reports whether text is that of a steer of the editor in flight, and
// then forgets it: its user_message is not forwarded. b.mu is held.
func (s *sessionState) ownSteer(text string) bool {
	for i, st := range s.steering {
		if st.text == text {
			s.steering = append(s.steering[:i], s.steering[i+1:]...)
			return true
		}
	}
	return false
}

// steer serves _session/steering.
func (b *Bridge) steer(ctx context.Context, _ *request, params jsontext.Value) (any, error) {
	var p struct {
		SessionID string   `json:"sessionId"`
		Prompt    *[]block `json:"prompt"`
		Meta      struct {
			Steering struct {
				IdleBehavior string `json:"idleBehavior"`
			} `json:"steering"`
		} `json:"_meta"`
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
	idle := p.Meta.Steering.IdleBehavior
	if idle != "" && idle != idlePromptRequired {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: _meta.steering.idleBehavior must be \"promptRequired\" or absent",
			map[string]any{"param": "_meta.steering.idleBehavior"})
	}
	for i, blk := range *p.Prompt {
		if blk.Type == "image" || blk.Type == "audio" || blk.Type == "resource" && blk.Resource != nil && blk.Resource.Blob != nil {
			return nil, invalid("prompt[%d]: a steer takes text, links and embedded text only, not %s content", i, blk.Type)
		}
	}
	d, err := b.session(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	text, _, err := b.content(ctx, d, p.SessionID, *p.Prompt)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(text) == "" {
		return nil, invalid("a steer needs text")
	}
	// A cancel of the editor's still in flight would stop the turn this steer
	// might start: it goes first, as before a prompt.
	b.awaitCancels(ctx, p.SessionID)

	b.mu.Lock()
	s := b.state(p.SessionID)
	running := s.running
	own := &steering{text: text}
	s.steering = append(s.steering, own)
	b.mu.Unlock()
	defer func() { // its user_message, when there was one, was forwarded by now (client.Steer)
		b.mu.Lock()
		for i, st := range s.steering {
			if st == own {
				s.steering = append(s.steering[:i], s.steering[i+1:]...)
				break
			}
		}
		b.mu.Unlock()
	}()

	if running != "" {
		res, err := d.Steer(ctx, p.SessionID, text, running)
		if err == nil {
			return b.steered(d, p.SessionID, res), nil
		}
		var e *client.Error
		if !errors.As(err, &e) || e.Reason() != "stale_turn" {
			return nil, err
		}
		// The editor's turn ended before it took the text: nothing was stored.
	}
	if idle == idlePromptRequired {
		return steerResult{Outcome: steerPromptRequired, Reason: "noRunningTurn"}, nil
	}
	res, err := d.Steer(ctx, p.SessionID, text, "")
	if err != nil {
		return nil, err
	}
	return b.steered(d, p.SessionID, res), nil
}

// steered is the answer to a steer the daemon took on d.
func (b *Bridge) steered(d *client.Client, sid string, res *client.SteerResult) steerResult {
	b.mu.Lock()
	if b.d == d {
		b.attached[sid] = true // whoever steers is attached, as whoever prompts
	}
	b.mu.Unlock()
	if res.Outcome == client.SteerStartedTurn {
		return steerResult{Outcome: steerStartedNewTurn}
	}
	return steerResult{Outcome: steerInjected}
}
