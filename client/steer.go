package client

import "context"

// Outcomes of Steer.
const (
	SteerInjected    = "injected"    // the text joined the running turn
	SteerStartedTurn = "startedTurn" // no turn ran: the text started one
)

// SteerResult is what Steer answers: how the text went, and the turn it is in.
type SteerResult struct {
	Outcome string `json:"outcome"`
	TurnID  string `json:"turnId"`
}

// Steer sends text to the session's running turn, which takes it as a user message
// before its next model call (docs/protocol.md, "Steering"); with no turn running
// it starts one, as Prompt does, and answers once the turn began (its updates reach
// the update handler; the turn's result goes to nobody). expectedTurnID, when not
// empty, must be the running turn's id, else the daemon refuses (-32602, reason
// "stale_turn", Data carrying the running turn's "turnId" when one runs) and
// starts nothing: also when that turn ended before it took the text. Steer waits
// until the turn took the text (it is stored by then), which is at the end of the
// model call or tool call the turn is in; the user_message of the steer (or of the
// turn it started) has been handed to the update handler when Steer returns.
func (c *Client) Steer(ctx context.Context, sessionID, text, expectedTurnID string) (*SteerResult, error) {
	params := map[string]any{"sessionId": sessionID, "text": text}
	if expectedTurnID != "" {
		params["expectedTurnId"] = expectedTurnID
	}
	var r SteerResult
	err := c.Call(ctx, "session/steer", params, &r)
	// The daemon answers after the steer's user_message (or the started turn's):
	// it has reached the update handler when Steer returns.
	c.queue.waitDelivered(ctx, c.queue.pushed())
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Export formats.
const (
	ExportMarkdown = "markdown"
	ExportJSONL    = "jsonl"
)

// Export returns the session's visible transcript (tool calls and results, title,
// times) as Markdown or JSON lines (docs/protocol.md, "Export"), at most 8 MiB.
func (c *Client) Export(ctx context.Context, sessionID, format string) (string, error) {
	var r struct {
		Content string `json:"content"`
	}
	if err := c.Call(ctx, "session/export", map[string]any{"sessionId": sessionID, "format": format}, &r); err != nil {
		return "", err
	}
	return r.Content, nil
}
