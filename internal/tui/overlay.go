package tui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// overlayActive reports whether an overlay takes the keys: a form, an approval, a
// picker.
func (m *Model) overlayActive() bool {
	return m.form != nil || len(m.approvals) > 0 || m.picker != nil
}

// overlayMsg hands a key (or paste) to the overlay on top.
func (m *Model) overlayMsg(msg tea.Msg) tea.Cmd {
	switch {
	case m.form != nil:
		return m.form.update(msg, m)
	case len(m.approvals) > 0:
		if k, ok := msg.(tea.KeyPressMsg); ok {
			return m.approvalKey(k)
		}
	case m.picker != nil:
		if k, ok := msg.(tea.KeyPressMsg); ok {
			return m.picker.key(k, m)
		}
		if p, ok := msg.(tea.PasteMsg); ok && m.picker.editing {
			m.picker.text += p.Content
		}
	}
	return nil
}

// overlayView draws the overlay on top ("" when none), at most height lines.
func (m *Model) overlayView(width, height int) string {
	var body string
	switch {
	case m.form != nil:
		body = m.form.view()
	case len(m.approvals) > 0:
		body = m.approvalView(width - 4)
	case m.picker != nil:
		body = m.picker.view(m.th, width-4, height-2)
	default:
		return ""
	}
	box := m.th.overlay.Width(width).Render(body)
	lines := strings.Split(box, "\n")
	if len(lines) > height && height > 0 {
		lines = append(lines[:height-1:height-1], lines[len(lines)-1])
	}
	return strings.Join(lines, "\n")
}

func (m *Model) approvalView(width int) string {
	a := m.approvals[0]
	th := m.th
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", th.bold.Render("Allow"), th.toolName.Render(a.Name)+th.bold.Render("?"))
	args := strings.TrimSpace(string(a.RawInput))
	for i, l := range wrap(args, max(1, width)) {
		if i == 6 {
			b.WriteString(th.faint.Render("…") + "\n")
			break
		}
		b.WriteString(th.toolArgs.Render(l) + "\n")
	}
	keys := "[y/Enter] allow once   [a] always (this tool, this session)   [n/Esc] reject"
	if lipgloss.Width(keys) > width {
		keys = "y/Enter once · a always · n/Esc reject"
	}
	b.WriteString(th.bold.Render(keys))
	if len(m.approvals) > 1 {
		fmt.Fprintf(&b, "\n%s", th.faint.Render(fmt.Sprintf("%d more waiting", len(m.approvals)-1)))
	}
	return b.String()
}

// approvalKey answers the approval on top.
func (m *Model) approvalKey(k tea.KeyPressMsg) tea.Cmd {
	var decision string
	switch k.String() {
	case "y", "Y", "enter":
		decision = client.AllowOnce
	case "a", "A":
		decision = client.AllowAlways
	case "n", "N", "esc":
		decision = client.RejectOnce
	case "pgup", "pgdown":
		m.tr.scrollBy(map[string]int{"pgup": 1, "pgdown": -1}[k.String()] * max(1, m.height-8))
		return nil
	default:
		return nil
	}
	a := m.approvals[0]
	m.approvals = m.approvals[1:]
	if b := m.cards[a.ToolCallID]; b != nil {
		b.tool.state = toolRunning
		if decision == client.RejectOnce {
			b.tool.progress = "rejected"
		}
		b.touch()
	}
	return m.call("answering the approval", func(ctx context.Context, b Backend) (func(*Model) tea.Cmd, error) {
		ok, err := b.Approve(ctx, a.SessionID, a.RequestID, decision)
		if err != nil || ok {
			return nil, err
		}
		return func(m *Model) tea.Cmd {
			m.notice("too late: the request was already answered or expired", false)
			return nil
		}, nil
	})
}
