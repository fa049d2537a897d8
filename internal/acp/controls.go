package acp

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"slices"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// Session controls over ACP (docs/protocol.md, "ACP"): modes and config options in
// the answers of session/new, load and resume; session/set_mode and
// session/set_config_option map to the native session/set; a change made elsewhere
// reaches the editor as current_mode_update, config_option_update or
// session_info_update; usage as usage_update; the compact command.

// modes are the daemon's autonomy levels as ACP session modes, least permissive first.
var modes = []sessionMode{
	{ID: client.ModeReadOnly, Name: "Read only", Description: "tools that change things are refused"},
	{ID: client.ModeSupervised, Name: "Ask before changes", Description: "tools that change things ask first"},
	{ID: client.ModeFull, Name: "Full access", Description: "every tool runs without asking"},
}

type sessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitzero"`
}

type modeState struct {
	CurrentModeID  string        `json:"currentModeId"`
	AvailableModes []sessionMode `json:"availableModes"`
}

type selectOption struct {
	Value string `json:"value"`
	Name  string `json:"name"`
}

// configOption is a SessionConfigOption of type select.
type configOption struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Description  string         `json:"description,omitzero"`
	Category     string         `json:"category"`
	Type         string         `json:"type"` // "select"
	CurrentValue string         `json:"currentValue"`
	Options      []selectOption `json:"options"`
}

// controls is what the bridge knows of a session's controls (sessionState.ctl).
type controls struct {
	known              bool
	mode, model, title string
	models             []string
}

// configOptions are the model and mode selects of c.
func (c controls) configOptions() []configOption {
	models := c.models
	if c.model != "" && !slices.Contains(models, c.model) {
		models = append(slices.Clone(models), c.model)
	}
	modelOpts := make([]selectOption, len(models))
	for i, m := range models {
		modelOpts[i] = selectOption{Value: m, Name: m}
	}
	modeOpts := make([]selectOption, len(modes))
	for i, m := range modes {
		modeOpts[i] = selectOption{Value: m.ID, Name: m.Name}
	}
	return []configOption{
		{ID: "model", Name: "Model", Category: "model", Type: "select", CurrentValue: c.model, Options: modelOpts},
		{ID: "mode", Name: "Mode", Category: "mode", Type: "select", CurrentValue: c.mode, Options: modeOpts},
	}
}

func (c controls) modeState() *modeState {
	return &modeState{CurrentModeID: c.mode, AvailableModes: modes}
}

// controlsAnswer is the answer of session/new, load and resume: the session's modes
// and config options. Once it is queued for the editor, then runs (the commands
// the session offers follow the answer, so the editor knows the session by then).
type controlsAnswer struct {
	SessionID     string         `json:"sessionId,omitzero"`
	Modes         *modeState     `json:"modes,omitzero"`
	ConfigOptions []configOption `json:"configOptions,omitzero"`
	then          func()
}

func (a controlsAnswer) Queued() {
	if a.then != nil {
		a.then()
	}
}

// opened reads the controls of a session the editor just opened and answers with
// them. The available commands and the current mode follow the answer: clients such
// as acpx keep the mode they show only from current_mode_update.
func (b *Bridge) opened(ctx context.Context, d *client.Client, sid string, withID bool) (controlsAnswer, error) {
	c, err := b.readControls(ctx, d, sid)
	if err != nil {
		return controlsAnswer{}, err
	}
	a := controlsAnswer{Modes: c.modeState(), ConfigOptions: c.configOptions(), then: func() {
		b.offerCommands(sid)
		b.notify(sid, map[string]any{"sessionUpdate": "current_mode_update", "currentModeId": c.mode})
	}}
	if withID {
		a.SessionID = sid
	}
	return a, nil
}

// readControls asks the daemon for the session's controls and models and records them.
func (b *Bridge) readControls(ctx context.Context, d *client.Client, sid string) (controls, error) {
	set, err := d.SetSession(ctx, sid, client.SessionSettings{})
	if err != nil {
		return controls{}, err
	}
	list, err := d.ListModels(ctx, "", sid)
	if err != nil {
		return controls{}, err
	}
	c := controls{known: true, mode: set.Mode, model: set.Model, title: set.Title}
	for _, m := range list.Models {
		c.models = append(c.models, m.ID)
	}
	b.mu.Lock()
	b.state(sid).ctl = c
	b.mu.Unlock()
	return c, nil
}

// compactCommand is the command available_commands_update offers.
var compactCommand = map[string]any{
	"name":        "compact",
	"description": "Summarise the conversation so far to free the model's context (the history stays visible)",
	"input":       map[string]any{"hint": "what the summary should keep (optional)"},
}

func (b *Bridge) offerCommands(sid string) {
	b.notify(sid, map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": []any{compactCommand}})
}

// change sets what the editor asked for on the daemon and returns the controls
// then. What the bridge knows of them is updated by the session_info update the
// change sends (controlsChanged), which tells the editor too: clients such as acpx
// learn the current mode only from current_mode_update, also after their own
// session/set_mode.
func (b *Bridge) change(ctx context.Context, sid string, s client.SessionSettings) (controls, error) {
	d, err := b.session(ctx, sid)
	if err != nil {
		return controls{}, err
	}
	r, err := d.SetSession(ctx, sid, s)
	if err != nil {
		return controls{}, err
	}
	// The daemon sent its session_info before this answer, but the client may
	// hand it to controlsChanged after: the editor is told here, before the
	// answer, unless that update told it already (docs/protocol.md, "A client
	// that falls behind": a request's updates precede its response).
	return b.applyControls(sid, r.Mode, r.Model, r.Title), nil
}

func (b *Bridge) setMode(ctx context.Context, _ *request, params jsontext.Value) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModeID    string `json:"modeId"`
	}
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" || p.ModeID == "" {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: sessionId and modeId are required", map[string]any{"param": "modeId"})
	}
	if _, err := b.change(ctx, p.SessionID, client.SessionSettings{Mode: p.ModeID}); err != nil {
		return nil, err
	}
	return empty{}, nil
}

func (b *Bridge) setConfigOption(ctx context.Context, _ *request, params jsontext.Value) (any, error) {
	var p struct {
		SessionID string         `json:"sessionId"`
		ConfigID  string         `json:"configId"`
		Value     jsontext.Value `json:"value"`
	}
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: sessionId is required", map[string]any{"param": "sessionId"})
	}
	var value string
	if p.Value.Kind() != '"' || json.Unmarshal(p.Value, &value) != nil || value == "" {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: value must be the id of one of the option's values", map[string]any{"param": "value"})
	}
	var s client.SessionSettings
	switch p.ConfigID {
	case "model":
		s.Model = value
	case "mode":
		s.Mode = value
	default:
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams,
			fmt.Sprintf("invalid params: unknown config option %q: the options are model and mode", p.ConfigID), map[string]any{"param": "configId"})
	}
	c, err := b.change(ctx, p.SessionID, s)
	if err != nil {
		return nil, err
	}
	return map[string]any{"configOptions": c.configOptions()}, nil
}

// controlsChanged forwards a session_info update: the mode, model or title changed,
// by another client or by this editor's own session/set_mode or set_config_option.
func (b *Bridge) controlsChanged(sid string, u client.Update) {
	b.applyControls(sid, u.Mode, u.Model, u.Title)
}

// applyControls records the session's mode, model and title, tells the editor
// what changed, and returns the controls now. Whoever learns of a change first
// (the update or the answer of the editor's own change) tells the editor, once.
func (b *Bridge) applyControls(sid, mode, model, title string) controls {
	b.ctlMu.Lock()
	defer b.ctlMu.Unlock()
	b.mu.Lock()
	st := b.state(sid)
	prev := st.ctl
	st.ctl.known, st.ctl.mode, st.ctl.model, st.ctl.title = true, mode, model, title
	now := st.ctl
	b.mu.Unlock()
	if prev.known && prev.mode != now.mode {
		b.notify(sid, map[string]any{"sessionUpdate": "current_mode_update", "currentModeId": now.mode})
	}
	if prev.known && (prev.mode != now.mode || prev.model != now.model) {
		b.notify(sid, map[string]any{"sessionUpdate": "config_option_update", "configOptions": now.configOptions()})
	}
	if prev.title != now.title {
		b.notify(sid, map[string]any{"sessionUpdate": "session_info_update", "title": now.title})
	}
	return now
}

// usage forwards a usage update as usage_update when the context window is known.
func (b *Bridge) usage(sid string, u client.Update) {
	if u.ContextWindow <= 0 {
		return
	}
	b.notify(sid, map[string]any{"sessionUpdate": "usage_update", "used": u.ContextTokens, "size": u.ContextWindow})
}

// compactPrompt reports whether a prompt is the compact command: "/compact" and,
// after a space, its instructions.
func compactPrompt(text string) (instructions string, ok bool) {
	text = strings.TrimSpace(text)
	rest, ok := strings.CutPrefix(text, "/compact")
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\n' && rest[0] != '\t') {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// compact runs a prompt's /compact on the daemon and answers end_turn (cancelled
// when the editor cancelled it), telling the editor what it did.
func (b *Bridge) compact(ctx context.Context, r *request, d *client.Client, sid, instructions string) (any, error) {
	b.mu.Lock()
	r.begun = true // a cancel now reaches the daemon, where the compaction holds the turn slot
	b.mu.Unlock()
	res, err := d.Compact(b.ctx, sid, instructions, "")
	if r.cancelled.Load() {
		return stopResult{StopReason: "cancelled"}, nil
	}
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("Compacted the conversation: the model's context went from %d to %d characters.", res.Before, res.After)
	switch {
	case res.Cancelled:
		return stopResult{StopReason: "cancelled"}, nil
	case !res.Compacted:
		msg = fmt.Sprintf("The summary was not smaller than the conversation (%d characters); nothing changed.", res.Before)
	}
	b.notify(sid, contentChunk{SessionUpdate: "agent_message_chunk", Content: text(msg)})
	return stopResult{StopReason: "end_turn"}, nil
}
