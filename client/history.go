package client

import (
	"context"
	"encoding/base64"
)

// Message is one row of a session's visible transcript (session/messages). Role is
// user, assistant, tool_call (Text holds the arguments), tool_result or marker.
type Message struct {
	Index       int    `json:"index"`
	Role        string `json:"role"`
	Text        string `json:"text"`
	ToolCallID  string `json:"toolCallId"`
	Name        string `json:"name"`
	IsError     bool   `json:"isError"`
	Interrupted bool   `json:"interrupted"`
}

// Roles of transcript rows.
const (
	RoleUser       = "user"
	RoleAssistant  = "assistant"
	RoleToolCall   = "tool_call"
	RoleToolResult = "tool_result"
	RoleMarker     = "marker"
)

// Messages returns the session's whole visible transcript, ascending, reading it
// page by page from the newest.
func (c *Client) Messages(ctx context.Context, sessionID string) ([]Message, error) {
	const page = 1000
	var pages [][]Message
	before := -1
	for {
		params := map[string]any{"sessionId": sessionID, "limit": page}
		if before >= 0 {
			params["before"] = before
		}
		var r struct {
			Messages []Message `json:"messages"`
			Total    int       `json:"total"`
		}
		if err := c.Call(ctx, "session/messages", params, &r); err != nil {
			return nil, err
		}
		if len(r.Messages) == 0 {
			break
		}
		pages = append(pages, r.Messages)
		before = r.Messages[0].Index
		if before == 0 {
			break
		}
	}
	var out []Message
	for i := len(pages) - 1; i >= 0; i-- {
		out = append(out, pages[i]...)
	}
	return out, nil
}

// DeleteSession removes the session: its durable history, then the live session.
func (c *Client) DeleteSession(ctx context.Context, sessionID string) error {
	return c.Call(ctx, "session/delete", map[string]any{"sessionId": sessionID}, nil)
}

// AttachFile stores data as a file of the session's workspace in one request
// (file/attach) and returns its entry, for Prompt. Files above a few MiB do not fit
// in one frame: use UploadBytes.
func (c *Client) AttachFile(ctx context.Context, sessionID, filename string, data []byte) (*FileEntry, error) {
	f := map[string]any{"data_b64": base64.StdEncoding.EncodeToString(data)}
	if filename != "" {
		f["filename"] = filename
	}
	var r struct {
		Files []FileEntry `json:"files"`
	}
	if err := c.Call(ctx, "file/attach", map[string]any{"session_id": sessionID, "files": []any{f}}, &r); err != nil {
		return nil, err
	}
	if len(r.Files) != 1 {
		return nil, &Error{Code: CodeInternalError, Message: "file/attach answered no file entry"}
	}
	return &r.Files[0], nil
}
