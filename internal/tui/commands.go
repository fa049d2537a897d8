package tui

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// command is one slash command.
type command struct {
	name, args, help string
}

var commands = []command{
	{"/sessions", "", "pick a session: Enter resumes, r renames, d deletes, f forks"},
	{"/new", "", "start a new session of the agent"},
	{"/model", "", "pick the session's model"},
	{"/mode", "", "pick the session's mode: readonly, supervised, full"},
	{"/attach", "PATH", "upload a file; it goes with the next prompt"},
	{"/compact", "[INSTRUCTIONS]", "summarise the session's context"},
	{"/memory", "[QUERY]", "pick a memory: / searches, Enter views, d forgets"},
	{"/title", "TEXT", "rename the session"},
	{"/help", "", "keys and commands"},
	{"/quit", "", "leave (the session stays resumable)"},
}

const keysHelp = `Keys: Enter sends · Alt-Enter new line · Up/Down history · Tab completes a command
Ctrl-C cancels the running turn, twice quits · PgUp/PgDn and the mouse wheel scroll
Ctrl-O unfolds (or folds again) the newest tool output or thought on screen
Approvals: y/Enter allow once, a always, n/Esc reject`

func helpText() string {
	var b strings.Builder
	b.WriteString(keysHelp)
	b.WriteString("\nCommands (a / line that is none of them is sent as a prompt):")
	for _, c := range commands {
		fmt.Fprintf(&b, "\n  %-22s %s", strings.TrimSpace(c.name+" "+c.args), c.help)
	}
	return b.String()
}

// command runs text when it is one of the commands; ok is false for anything else
// (it is then sent as a prompt, as /tool and /think lines are).
func (m *Model) command(text string) (tea.Cmd, bool) {
	line := strings.TrimSpace(text)
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	known := false
	for _, c := range commands {
		known = known || c.name == name
	}
	if !known || strings.Contains(line, "\n") {
		return nil, false
	}
	switch name {
	case "/quit":
		m.quitting = true
		return tea.Quit, true
	case "/help":
		m.notice(helpText(), false)
	case "/sessions":
		return m.sessionsPicker(), true
	case "/new":
		agent := m.agent
		return m.call("opening a new session", func(ctx context.Context, b Backend) (func(*Model) tea.Cmd, error) {
			s, err := b.NewSession(ctx, client.NewSessionParams{AgentAlias: agent, KeepSiblings: true})
			if err != nil {
				return nil, err
			}
			return func(m *Model) tea.Cmd {
				cmd := m.enterSession(s)
				m.markFresh(s)
				return cmd
			}, nil
		}), true
	case "/model":
		return m.modelPicker(), true
	case "/mode":
		return func() tea.Msg { return modePicker(m.mode) }, true
	case "/attach":
		if arg == "" {
			m.notice("usage: /attach PATH", true)
			return nil, true
		}
		return m.startUpload(arg), true
	case "/compact":
		return m.compact(arg), true
	case "/memory":
		return m.memoryPicker(arg), true
	case "/title":
		if arg == "" {
			m.notice("usage: /title TEXT", true)
			return nil, true
		}
		m.use()
		return m.setSession("renaming the session", "title", arg), true
	}
	return nil, true
}

// compact calls session/compact (docs/protocol.md, "session/compact").
func (m *Model) compact(instructions string) tea.Cmd {
	m.use()
	sid := m.sid
	m.notice("compacting the session's context…", false)
	return m.call("compacting", func(ctx context.Context, b Backend) (func(*Model) tea.Cmd, error) {
		params := map[string]any{"sessionId": sid, "operationId": "op_" + rand.Text()}
		if instructions != "" {
			params["instructions"] = instructions
		}
		var r struct {
			Compacted bool `json:"compacted"`
			Before    int  `json:"before"`
			After     int  `json:"after"`
			Cancelled bool `json:"cancelled"`
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 200*time.Second) // the daemon's deadline is 180 s
		defer cancel()
		if err := b.Call(ctx, "session/compact", params, &r); err != nil {
			return nil, err
		}
		return func(m *Model) tea.Cmd {
			if r.Cancelled {
				m.notice("compaction cancelled; the context is unchanged", false)
				return nil
			}
			if !r.Compacted {
				m.notice(fmt.Sprintf("not compacted: the summary was not smaller than the context (%d characters)", r.Before), false)
			}
			return nil
		}, nil
	})
}
