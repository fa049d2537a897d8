package tui

import (
	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// Steering (docs/protocol.md, "Steering"): while a turn streams, Enter sends what
// was typed into it (session/steer: the turn takes it before its next model call),
// and Tab sends it as the next prompt instead (session/prompt, which waits for the
// running turn).

// turnStreaming reports whether a turn this UI prompted is running: the only turns
// whose end it learns (a turn's updates say when it begins, not when it ends, and a
// replay shows turns long over). Another client's turn gets a prompt, which waits
// for it. (A steer when no turn runs after all starts one, so a turn that ended
// meanwhile loses nothing.)
func (m *Model) turnStreaming() bool { return m.running > 0 }

// steer sends text to the running turn.
func (m *Model) steer(text string) tea.Cmd {
	sid := m.sid
	m.use()
	m.hint = "steering: the turn takes this before its next model call (Tab queues a line instead)"
	m.tr.follow()
	b := m.b
	if b == nil {
		m.notice("not connected to the daemon yet", true)
		return nil
	}
	return func() tea.Msg {
		// The answer comes once the turn took the line: after the model call or
		// tool call it is in, however long that takes.
		ctx, cancel := context.WithTimeout(context.Background(), steerTimeout)
		defer cancel()
		var r client.SteerResult
		if err := b.Call(ctx, "session/steer", map[string]any{"sessionId": sid, "text": text}, &r); err != nil {
			return actionMsg{what: "steering the turn", err: err}
		}
		return actionMsg{what: "steering the turn", done: func(m *Model) tea.Cmd {
			if r.Outcome == client.SteerStartedTurn {
				m.notice("the turn had ended: the line started a new one", false)
			}
			m.hint = ""
			return nil
		}}
	}
}

// steerTimeout bounds the wait for a steer's answer.
const steerTimeout = 15 * time.Minute

// queueable reports whether Tab sends the input as the next prompt: a turn streams
// and the input is a prompt, not a command being completed.
func (m *Model) queueable() bool {
	v := strings.TrimSpace(m.input.Value())
	return m.turnStreaming() && v != "" && !strings.HasPrefix(v, "/")
}

// queue sends the input as the next prompt.
func (m *Model) queue() tea.Cmd {
	text := m.input.Value()
	m.remember(text)
	m.input.Reset()
	m.hint = "queued: it runs once the turn is over"
	return m.prompt(text)
}
