package client

import "context"

// Session controls (docs/protocol.md: session/set, models/list, session/compact,
// session/fork).

// Modes of SetSession, least permissive first.
const (
	ModeReadOnly   = "readonly"
	ModeSupervised = "supervised"
	ModeFull       = "full"
)

// SessionSettings are what SetSession changes; an empty field stays as it is.
type SessionSettings struct {
	Mode  string `json:"mode,omitzero"`
	Model string `json:"model,omitzero"`
	Title string `json:"title,omitzero"`
}

// SessionControls are a session's mode, model and title.
type SessionControls struct {
	SessionID string `json:"sessionId"`
	Mode      string `json:"mode"`
	Model     string `json:"model"`
	Title     string `json:"title"`
}

// SetSession changes the session's mode, model or title (durably, from the next
// model call) and returns all three; with s empty it only reads them. Every
// attached client gets a session_info update for a change. An unknown model fails
// with an *Error of code -32602 whose Data["models"] lists the choices; a mode more
// permissive than the agent's, asked by a non-admin, with -32012.
func (c *Client) SetSession(ctx context.Context, sessionID string, s SessionSettings) (*SessionControls, error) {
	params := map[string]any{"sessionId": sessionID}
	if s.Mode != "" {
		params["mode"] = s.Mode
	}
	if s.Model != "" {
		params["model"] = s.Model
	}
	if s.Title != "" {
		params["title"] = s.Title
	}
	var r SessionControls
	if err := c.Call(ctx, "session/set", params, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Model is one entry of ListModels; Current marks the session's (or agent's) model.
type Model struct {
	ID      string `json:"id"`
	Current bool   `json:"current"`
}

// Models is the result of ListModels; Source is config, provider or default.
type Models struct {
	Models []Model `json:"models"`
	Source string  `json:"source"`
}

// ListModels lists the models of an agent (agentAlias) or of a session's agent
// (sessionID, with Current marking the session's model); give one of the two.
func (c *Client) ListModels(ctx context.Context, agentAlias, sessionID string) (*Models, error) {
	params := map[string]any{}
	if agentAlias != "" {
		params["agentAlias"] = agentAlias
	}
	if sessionID != "" {
		params["sessionId"] = sessionID
	}
	var r Models
	if err := c.Call(ctx, "models/list", params, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// CompactResult is the result of Compact: the retained context's size in
// characters before and after.
type CompactResult struct {
	SessionID string `json:"sessionId"`
	Compacted bool   `json:"compacted"` // false: the summary was not smaller, or Cancelled
	Before    int    `json:"before"`
	After     int    `json:"after"`
	Cancelled bool   `json:"cancelled"`
}

// Compact has the session's model summarise its retained context, which the
// summary replaces when smaller. instructions (optional) say what to keep;
// operationID (optional) makes a retry answer the first outcome. Cancel stops it.
func (c *Client) Compact(ctx context.Context, sessionID, instructions, operationID string) (*CompactResult, error) {
	params := map[string]any{"sessionId": sessionID}
	if instructions != "" {
		params["instructions"] = instructions
	}
	if operationID != "" {
		params["operationId"] = operationID
	}
	var r CompactResult
	if err := c.Call(ctx, "session/compact", params, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Fork copies the session (transcript, retained context, controls) into a new
// durable session and returns its id; title, when not empty, is the fork's title.
func (c *Client) Fork(ctx context.Context, sessionID, title string) (string, error) {
	params := map[string]any{"sessionId": sessionID}
	if title != "" {
		params["title"] = title
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.Call(ctx, "session/fork", params, &r); err != nil {
		return "", err
	}
	return r.SessionID, nil
}
