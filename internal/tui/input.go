package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
)

// maxInputLines is the input box's tallest height; longer input scrolls inside it.
const maxInputLines = 6

// key handles a key press: overlays first, then the screen's keys, then the input.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	s := k.String()
	if s != "ctrl+c" {
		m.ctrlC = 0
	}
	if s == "ctrl+c" {
		return m.interrupt()
	}
	if m.overlayActive() {
		return m.overlayMsg(k)
	}
	switch s {
	case "pgup":
		m.tr.scrollBy(max(1, m.height-8))
		return nil
	case "pgdown":
		m.tr.scrollBy(-max(1, m.height-8))
		return nil
	case "ctrl+o":
		if !m.tr.toggleFold() {
			m.hint = "Ctrl-O: no folded tool output or thought on screen"
		}
		return nil
	case "ctrl+d":
		if m.input.Value() == "" {
			m.quitting = true
			return tea.Quit
		}
	case "enter":
		return m.submit()
	case "tab":
		if m.queueable() {
			return m.queue()
		}
		m.complete()
		return nil
	case "up":
		if m.input.Line() == 0 {
			m.historyStep(-1)
			return nil
		}
		m.input.CursorUp()
		return nil
	case "down":
		if m.input.Line() >= m.input.LineCount()-1 {
			m.historyStep(1)
			return nil
		}
		m.input.CursorDown()
		return nil
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	m.hint = ""
	return cmd
}

// interrupt: Ctrl-C cancels the running turn (or closes an overlay); a second one
// in a row quits.
func (m *Model) interrupt() tea.Cmd {
	m.ctrlC++
	if m.ctrlC >= 2 {
		m.quitting = true
		return tea.Quit
	}
	if m.form != nil {
		return m.form.abort(m)
	}
	if m.picker != nil {
		m.picker = nil
		return nil
	}
	if m.running > 0 || m.streaming || len(m.approvals) > 0 {
		return m.cancel()
	}
	if m.input.Value() != "" {
		m.input.Reset()
		m.ctrlC = 0
		return nil
	}
	m.hint = "Ctrl-C again quits"
	return nil
}

// submit sends what was typed: a command, a prompt, or, while a turn streams, a
// steer of it (steer.go).
func (m *Model) submit() tea.Cmd {
	text := m.input.Value()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if m.b == nil && !strings.HasPrefix(strings.TrimSpace(text), "/quit") && !strings.HasPrefix(strings.TrimSpace(text), "/help") {
		m.hint = "not connected to the daemon yet; what you typed stays here"
		return nil
	}
	m.remember(text)
	m.input.Reset()
	m.hint = ""
	if cmd, ok := m.command(text); ok {
		return cmd
	}
	if m.turnStreaming() {
		return m.steer(text)
	}
	return m.prompt(text)
}

// remember adds text to the input history.
func (m *Model) remember(text string) {
	if len(m.history) == 0 || m.history[len(m.history)-1] != text {
		m.history = append(m.history, text)
	}
	m.histPos, m.draft = len(m.history), ""
}

// historyStep moves through the history: -1 older, +1 newer (back to the draft).
func (m *Model) historyStep(d int) {
	if len(m.history) == 0 {
		return
	}
	if m.histPos >= len(m.history) {
		m.histPos = len(m.history)
		if d > 0 {
			return
		}
		m.draft = m.input.Value()
	}
	p := min(len(m.history), max(0, m.histPos+d))
	m.histPos = p
	if p == len(m.history) {
		m.input.SetValue(m.draft)
	} else {
		m.input.SetValue(m.history[p])
	}
}

// complete completes a command name: the only match, else the longest common
// prefix, with the candidates shown under the input.
func (m *Model) complete() {
	v := m.input.Value()
	if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, " \n") {
		return
	}
	var matches []string
	for _, c := range commands {
		if strings.HasPrefix(c.name, v) {
			matches = append(matches, c.name)
		}
	}
	switch len(matches) {
	case 0:
		m.hint = "no command starts with " + v
	case 1:
		m.input.SetValue(matches[0] + " ")
		m.hint = ""
	default:
		p := matches[0]
		for _, s := range matches[1:] {
			for !strings.HasPrefix(s, p) {
				p = p[:len(p)-1]
			}
		}
		m.input.SetValue(p)
		m.hint = strings.Join(matches, "  ")
	}
}
