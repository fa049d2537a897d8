package chat

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// render shows one update on the terminal.
func (ch *chat) render(u client.Update) {
	switch u.Type {
	case client.AgentMessageChunk:
		ch.write(u.Text)
	case client.AgentThoughtChunk:
		ch.write(faint + u.Text + reset)
	case client.ToolCall:
		ch.endLine()
		ch.printf("%s⚙ %s %s%s\n", faint, u.Name, clip(string(u.RawInput), 100), reset)
	case client.ToolResult:
		ch.endLine()
		mark := "→"
		if u.IsError {
			mark = "✗"
		}
		ch.printf("%s  %s %s%s\n", faint, mark, clip(u.RawOutput, 100), reset)
	case client.ApprovalRequest:
		ch.approve(u)
	case client.RequestResolved:
		ch.term.Lock()
		mine := ch.answered[u.RequestID]
		delete(ch.answered, u.RequestID)
		ch.term.Unlock()
		if mine {
			return
		}
		ch.endLine()
		ch.printf("%s(request %s was answered by another client)%s\n", faint, u.RequestID, reset)
	case client.HistoryTrimmed:
		ch.endLine()
		ch.printf("%s(history trimmed: %d older messages leave the model's context, %d kept)%s\n", faint, u.Dropped, u.Kept, reset)
	case client.SessionInfoUpdate:
		ch.endLine()
		ch.printf("%s(session: mode %s, model %s, title %q)%s\n", faint, u.Mode, u.Model, u.Title, reset)
	case client.HistoryCompacted:
		ch.endLine()
		ch.printf("%s(history compacted: %d → %d characters)%s\n", faint, u.Before, u.After, reset)
	case client.Plan:
		ch.endLine()
		ch.printf("%s", planText(u.Entries))
	case client.UpdateMemoryRecalled:
		ch.endLine()
		ch.printf("%s%s%s\n", faint, RecalledLine(client.Recalled(u)), reset)
	}
}

// planText is a plan as a checklist: [x] completed, [>] in progress, [ ] pending,
// with the priority when the model gave one.
func planText(entries []client.PlanEntry) string {
	done := 0
	for _, e := range entries {
		if e.Status == "completed" {
			done++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "plan (%d/%d done):\n", done, len(entries))
	for _, e := range entries {
		mark := "[ ]"
		switch e.Status {
		case "completed":
			mark = "[x]"
		case "in_progress":
			mark = "[>]"
		}
		fmt.Fprintf(&b, "  %s %s", mark, clip(e.Content, 200))
		if e.Priority != "" {
			fmt.Fprintf(&b, " (%s)", e.Priority)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// approve asks the user about one approval request and answers it.
func (ch *chat) approve(u client.Update) {
	ch.term.Lock()
	defer ch.term.Unlock()
	ch.endLineLocked()
	fmt.Fprintf(ch.out, "%sApprove %s %s?%s\n", bold, u.Name, clip(string(u.RawInput), 200), reset)
	decision := ""
	for decision == "" {
		a, err := ch.line.Prompt("[y] allow once, [a] always, [n] reject: ")
		if err != nil { // Ctrl-C or Ctrl-D: no
			decision = client.RejectOnce
			break
		}
		switch strings.ToLower(strings.TrimSpace(a)) {
		case "y", "yes":
			decision = client.AllowOnce
		case "a", "always":
			decision = client.AllowAlways
		case "n", "no":
			decision = client.RejectOnce
		}
	}
	if ch.answered == nil {
		ch.answered = make(map[string]bool)
	}
	ch.answered[u.RequestID] = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ok, err := ch.c.Approve(ctx, u.SessionID, u.RequestID, decision)
	switch {
	case err != nil:
		fmt.Fprintf(ch.out, "error: %v\n", err)
	case !ok:
		fmt.Fprintf(ch.out, "%s(too late: the request was already answered or expired)%s\n", faint, reset)
	}
}

// elicit answers elicitation/create: a numbered menu when there are choices.
func (ch *chat) elicit(ctx context.Context, e client.Elicitation) (client.ElicitationResult, error) {
	choices := schemaChoices(e.RequestedSchema)
	ch.term.Lock()
	defer ch.term.Unlock()
	ch.endLineLocked()
	fmt.Fprintf(ch.out, "%s%s%s\n", bold, e.Message, reset)
	for i, c := range choices {
		fmt.Fprintf(ch.out, "  %d) %s\n", i+1, c)
	}
	for {
		prompt := "answer (empty to decline): "
		if len(choices) > 0 {
			prompt = fmt.Sprintf("choose 1-%d (empty to decline): ", len(choices))
		}
		a, err := ch.line.Prompt(prompt)
		if err != nil {
			return client.ElicitationResult{Action: "cancel"}, nil
		}
		a = strings.TrimSpace(a)
		if a == "" {
			return client.ElicitationResult{Action: "decline"}, nil
		}
		if len(choices) == 0 {
			return client.ElicitationResult{Action: "accept", Content: map[string]any{"answer": a}}, nil
		}
		var n int
		if _, err := fmt.Sscanf(a, "%d", &n); err == nil && n >= 1 && n <= len(choices) {
			return client.ElicitationResult{Action: "accept", Content: map[string]any{"answer": choices[n-1]}}, nil
		}
	}
}

// progress draws an upload's progress bar on one line.
func (ch *chat) progress(name string) func(done, total int64) {
	return func(done, total int64) {
		const width = 30
		filled := width
		pct := 100
		if total > 0 {
			filled = int(done * width / total)
			pct = int(done * 100 / total)
		}
		ch.term.Lock()
		fmt.Fprintf(ch.out, "\r%s [%s%s] %3d%% %s/%s", name, strings.Repeat("#", filled), strings.Repeat("-", width-filled), pct, byteSize(done), byteSize(total))
		ch.midLine = true
		ch.term.Unlock()
	}
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func (ch *chat) write(s string) {
	if s == "" {
		return
	}
	ch.term.Lock()
	defer ch.term.Unlock()
	io.WriteString(ch.out, s)
	ch.midLine = !strings.HasSuffix(s, "\n") && !strings.HasSuffix(s, "\n"+reset)
}

func (ch *chat) printf(format string, args ...any) {
	ch.term.Lock()
	defer ch.term.Unlock()
	fmt.Fprintf(ch.out, format, args...)
	ch.midLine = false
}

// endLine ends a line the stream left open.
func (ch *chat) endLine() {
	ch.term.Lock()
	defer ch.term.Unlock()
	ch.endLineLocked()
}

func (ch *chat) endLineLocked() {
	if ch.midLine {
		io.WriteString(ch.out, "\n")
		ch.midLine = false
	}
}

// clip shortens s to one line of at most n runes.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// schemaChoices returns the enum of the "answer" property of an elicitation schema.
func schemaChoices(schema jsontext.Value) []string {
	var s struct {
		Properties struct {
			Answer struct {
				Enum []string `json:"enum"`
			} `json:"answer"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	return s.Properties.Answer.Enum
}
