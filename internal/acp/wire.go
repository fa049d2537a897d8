package acp

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// ACP v1 shapes the bridge writes (schema/v1/schema.json of @agentclientprotocol/sdk).

type textBlock struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

func text(s string) textBlock { return textBlock{Type: "text", Text: s} }

type sessionNotification struct {
	SessionID string `json:"sessionId"`
	Update    any    `json:"update"`
}

type contentChunk struct {
	SessionUpdate string    `json:"sessionUpdate"` // user_message_chunk, agent_message_chunk, agent_thought_chunk
	Content       textBlock `json:"content"`
}

// toolCallContent is a ToolCallContent: {type: "content", content} or
// {type: "diff", path, oldText?, newText}.
type toolCallContent struct {
	Type    string     `json:"type"` // "content", "diff"
	Content *textBlock `json:"content,omitzero"`
	Path    string     `json:"path,omitzero"`
	OldText *string    `json:"oldText,omitzero"`
	NewText *string    `json:"newText,omitzero"`
}

// toolCallLocation is a ToolCallLocation.
type toolCallLocation struct {
	Path string `json:"path"`
	Line int    `json:"line,omitzero"`
}

func locationsOf(locs []client.Location) []toolCallLocation {
	if locs == nil {
		return nil
	}
	out := make([]toolCallLocation, len(locs))
	for i, l := range locs {
		out[i] = toolCallLocation{Path: l.Path, Line: max(l.Line, 0)}
	}
	return out
}

// planUpdate is the plan session update; every entry has a priority in ACP.
type planUpdate struct {
	SessionUpdate string      `json:"sessionUpdate"` // "plan"
	Entries       []planEntry `json:"entries"`
}

type planEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

func newPlan(entries []client.PlanEntry) planUpdate {
	p := planUpdate{SessionUpdate: "plan", Entries: make([]planEntry, len(entries))}
	for i, e := range entries {
		prio := e.Priority
		if prio == "" {
			prio = "medium"
		}
		p.Entries[i] = planEntry{Content: e.Content, Priority: prio, Status: e.Status}
	}
	return p
}

// toolCall is the tool_call update, and the toolCall of session/request_permission
// (a ToolCallUpdate there: SessionUpdate empty).
type toolCall struct {
	SessionUpdate string         `json:"sessionUpdate,omitzero"`
	ToolCallID    string         `json:"toolCallId"`
	Title         string         `json:"title"`
	Kind          string         `json:"kind"`
	Status        string         `json:"status"`
	RawInput      jsontext.Value `json:"rawInput,omitzero"`
	// Locations is nil for a tool that touches no file: then it is left out.
	Locations []toolCallLocation `json:"locations,omitzero"`
}

// kindOf is the ACP tool kind of a daemon tool (docs/protocol.md, "ACP").
func kindOf(tool string) string {
	switch tool {
	case "read_file":
		return "read"
	case "list_dir", "search", "glob":
		return "search"
	case "write_file", "edit_file":
		return "edit"
	case "shell":
		return "execute"
	}
	return "other"
}

// titleOf is what an editor shows for a call: the tool and its main argument.
func titleOf(tool string, rawInput jsontext.Value) string {
	var args map[string]any
	if len(rawInput) > 0 && json.Unmarshal(rawInput, &args) == nil {
		for _, key := range []string{"command", "path", "pattern", "question"} {
			if v, ok := args[key].(string); ok && v != "" {
				if len(v) > 120 {
					v = v[:120] + "…"
				}
				return tool + ": " + v
			}
		}
	}
	return tool
}

func newToolCall(id, tool string, rawInput jsontext.Value, locs []client.Location) toolCall {
	if len(rawInput) == 0 {
		rawInput = jsontext.Value("{}")
	}
	return toolCall{SessionUpdate: "tool_call", ToolCallID: id, Title: titleOf(tool, rawInput),
		Kind: kindOf(tool), Status: "pending", RawInput: rawInput, Locations: locationsOf(locs)}
}

// toolResult is the tool_call_update of a result: it carries no title or kind.
type toolResult struct {
	SessionUpdate string            `json:"sessionUpdate"` // "tool_call_update"
	ToolCallID    string            `json:"toolCallId"`
	Status        string            `json:"status"` // completed, failed
	Content       []toolCallContent `json:"content"`
	RawOutput     string            `json:"rawOutput"`
}

// newToolResult is the tool_call_update of a result: its text, after the diff of
// the file it changed when it has one (so that an editor shows it for review).
func newToolResult(id, output string, isError bool, diff *client.Diff) toolResult {
	status := "completed"
	if isError {
		status = "failed"
	}
	out := text(output)
	content := make([]toolCallContent, 0, 2)
	if diff != nil {
		content = append(content, toolCallContent{Type: "diff", Path: diff.Path, OldText: diff.OldText, NewText: &diff.NewText})
	}
	content = append(content, toolCallContent{Type: "content", Content: &out})
	return toolResult{SessionUpdate: "tool_call_update", ToolCallID: id, Status: status,
		Content: content, RawOutput: output}
}

type permissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

func permissionOptions(tool string) []permissionOption {
	return []permissionOption{
		{OptionID: "allow_once", Name: "Allow once", Kind: "allow_once"},
		{OptionID: "allow_always", Name: "Always allow " + tool + " in this session", Kind: "allow_always"},
		{OptionID: "reject_once", Name: "Reject", Kind: "reject_once"},
	}
}

type sessionInfo struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	Title     string `json:"title,omitzero"`
	UpdatedAt string `json:"updatedAt,omitzero"`
}

type listResult struct {
	Sessions   []sessionInfo `json:"sessions"`
	NextCursor string        `json:"nextCursor,omitzero"`
}

type stopResult struct {
	StopReason string `json:"stopReason"`
}

type empty struct{}

// pathOf is the local path a file: URI names, or the URI itself for other schemes.
func pathOf(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return uri
	}
	return filepath.FromSlash(u.Path)
}

// fileName is the base name of a URI's path, "" when it has none.
func fileName(uri string) string {
	if uri == "" {
		return ""
	}
	p := pathOf(uri)
	if u, err := url.Parse(uri); err == nil && u.Scheme != "file" && u.Path != "" {
		p = u.Path
	}
	base := filepath.Base(strings.TrimRight(filepath.ToSlash(p), "/"))
	if base == "." || base == "/" {
		return ""
	}
	return base
}

// extOf is a file extension for a MIME type: image/png → png, image/jpeg → jpg.
func extOf(mime string) string {
	_, sub, _ := strings.Cut(strings.ToLower(mime), "/")
	sub, _, _ = strings.Cut(sub, ";")
	sub, _, _ = strings.Cut(sub, "+")
	if sub == "jpeg" {
		return "jpg"
	}
	var b strings.Builder
	for _, r := range sub {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 || b.Len() > 16 {
		return "bin"
	}
	return b.String()
}
