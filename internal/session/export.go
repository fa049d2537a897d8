package session

import (
	"bytes"
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
)

// session/export (docs/protocol.md, "Export"): the visible transcript of a session,
// with its tool calls and results, its title and the times of its turns, as
// Markdown or as JSON lines, from one consistent read of the store.

// Export formats.
const (
	ExportMarkdown = "markdown"
	ExportJSONL    = "jsonl"
)

// ExportMax is the largest export, in bytes, JSON-quoted in its answer too (one
// frame); a bigger one is refused with its size.
const ExportMax = 8 << 20

// ExportResult is what session/export answers.
type ExportResult struct {
	Content string `json:"content"`
}

// Export renders the visible transcript of session id in format.
func (m *Manager) Export(ctx context.Context, id string, c Caller, format string) (ExportResult, error) {
	if format != ExportMarkdown && format != ExportJSONL {
		return ExportResult{}, errParam("format", "",
			fmt.Sprintf("invalid params: format %q: want markdown or jsonl", format))
	}
	if err := m.visible(ctx, id, c); err != nil {
		return ExportResult{}, err
	}
	w := &exportWriter{format: format}
	err := m.st.Export(ctx, id, w.header, func(r store.ExportRow) error {
		w.row(r)
		return ctx.Err()
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return ExportResult{}, errNotFound(id)
		}
		if ctx.Err() != nil {
			return ExportResult{}, ctx.Err()
		}
		m.log.Error("exporting a transcript", "session", id, "err", err)
		return ExportResult{}, errStorage(err)
	}
	// The answer is one frame of at most ExportMax bytes for the client to read: the
	// content, JSON-quoted, must fit it with the envelope around it.
	if encoded := quotedLen(w.buf.Bytes()); w.n > ExportMax || encoded+exportEnvelope > ExportMax {
		return ExportResult{}, &Error{Kind: Invalid,
			Msg:     fmt.Sprintf("invalid params: the export is %d bytes, more than the %d an answer may carry", w.n, ExportMax),
			Details: map[string]any{"param": "sessionId", "reason": "too_large", "bytes": w.n, "limit": ExportMax}}
	}
	return ExportResult{Content: w.buf.String()}, nil
}

// exportEnvelope is room for the response's envelope around the quoted content.
const exportEnvelope = 1024

// quotedLen is the length of b as a JSON string.
func quotedLen(b []byte) int {
	q, err := jsontext.AppendQuote(nil, b)
	if err != nil {
		return len(b) * 6 // never: the store's rows are valid UTF-8
	}
	return len(q)
}

// exportWriter renders an export, counting every byte but keeping at most ExportMax.
type exportWriter struct {
	format string
	buf    bytes.Buffer
	n      int // bytes rendered, kept or not
}

func (w *exportWriter) write(s string) {
	w.n += len(s)
	if w.n <= ExportMax {
		w.buf.WriteString(s)
	}
}

// header starts the export with the session's title, id, agent and times.
func (w *exportWriter) header(s store.Session) {
	title := s.Controls.Title
	if title == "" {
		title = Title(s.FirstPrompt)
	}
	if w.format == ExportJSONL {
		w.jsonLine(map[string]any{"type": "session", "sessionId": s.ID, "agentAlias": s.Agent, "title": title,
			"createdAt": stamp(s.CreatedAt), "lastActivity": stamp(s.LastActivity), "messageCount": s.MessageCount})
		return
	}
	if title == "" {
		title = "Session " + s.ID
	}
	w.write("# " + oneLine(title) + "\n\n")
	w.write(fmt.Sprintf("- session: `%s`\n- agent: `%s`\n- created: %s\n- last activity: %s\n- messages: %d\n",
		s.ID, s.Agent, mdTime(s.CreatedAt), mdTime(s.LastActivity), s.MessageCount))
}

// row renders one transcript row.
func (w *exportWriter) row(r store.ExportRow) {
	if w.format == ExportJSONL {
		line := map[string]any{"type": "message", "index": r.Index, "role": r.Role, "text": r.Text, "turnId": r.TurnID}
		if !r.At.IsZero() {
			line["time"] = stamp(r.At)
		}
		if r.ToolCallID != "" {
			line["toolCallId"] = r.ToolCallID
		}
		if r.Name != "" {
			line["name"] = r.Name
		}
		if r.IsError {
			line["isError"] = true
		}
		if r.Interrupted {
			line["interrupted"] = true
		}
		w.jsonLine(line)
		return
	}
	at := ""
	if !r.At.IsZero() {
		at = " · " + mdTime(r.At)
	}
	switch r.Role {
	case store.RoleUser:
		w.write("\n## User" + at + "\n\n" + r.Text + "\n")
	case store.RoleAssistant:
		w.write("\n## Assistant" + at + "\n\n" + r.Text + "\n")
	case store.RoleToolCall:
		w.write(fmt.Sprintf("\n### Tool call `%s` (%s)\n\n", r.Name, r.ToolCallID) + fenced("json", r.Text))
	case store.RoleToolResult:
		status := ""
		if r.IsError {
			status = " — error"
		}
		w.write(fmt.Sprintf("\n### Tool result `%s` (%s)%s\n\n", r.Name, r.ToolCallID, status) + fenced("", r.Text))
	default: // the interruption marker
		w.write("\n> " + oneLine(r.Text) + "\n")
	}
}

func (w *exportWriter) jsonLine(v map[string]any) {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil { // invalid UTF-8 cannot reach the store: its rows were encoded once
		b, _ = json.Marshal(map[string]any{"type": "error", "error": err.Error()})
	}
	w.write(string(b) + "\n")
}

// fenced is text in a code fence longer than any run of backticks in it.
func fenced(lang, text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + lang + "\n" + strings.TrimSuffix(text, "\n") + "\n" + fence + "\n"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func mdTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }
