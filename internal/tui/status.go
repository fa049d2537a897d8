package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"charm.land/bubbles/v2/progress"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// statusLine: title, agent, model, mode, context used / window, connection.
func (m *Model) statusLine(width int) string {
	th := m.th
	title := m.title
	if title == "" {
		title = "new session"
	}
	parts := []string{th.statusKey.Render(" " + clip(title, 28))}
	add := func(s string) {
		if s != "" {
			parts = append(parts, th.status.Render(s))
		}
	}
	add(m.agent)
	add(m.model)
	add(m.mode)
	if m.ctxTokens > 0 || m.ctxWindow > 0 {
		used := kilo(m.ctxTokens)
		if m.ctxEstimated {
			used = "~" + used
		}
		if m.ctxWindow > 0 {
			add(fmt.Sprintf("ctx %s/%s (%d%%)", used, kilo(m.ctxWindow), 100*m.ctxTokens/m.ctxWindow))
		} else {
			add("ctx " + used)
		}
	}
	if m.running > 0 {
		add(m.rend.spin + " working")
	}
	conn := m.conn
	switch conn {
	case connConnected:
		conn = th.ok.Inherit(th.status).Render("● " + conn)
	case connConnecting:
		conn = th.wait.Inherit(th.status).Render("○ " + conn)
	default:
		conn = th.fail.Inherit(th.status).Render("● " + conn)
	}
	sep := th.status.Render(" · ")
	left := strings.Join(parts, sep)
	gap := width - lipgloss.Width(left) - lipgloss.Width(conn) - 1
	for gap < 1 && len(parts) > 1 { // narrow: drop from the right, keep the connection
		parts = parts[:len(parts)-1]
		left = strings.Join(parts, sep)
		gap = width - lipgloss.Width(left) - lipgloss.Width(conn) - 1
	}
	if gap < 1 {
		return clip(stripANSI(left+" "+conn), width)
	}
	return left + th.status.Render(strings.Repeat(" ", gap)) + conn + th.status.Render(" ")
}

func kilo(n int) string {
	if n >= 10_000 {
		return fmt.Sprintf("%dk", n/1000)
	}
	if n >= 1000 {
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprint(n)
}

// planView draws the plan, at most maxLines lines (none when there is no plan).
func (m *Model) planView(width, maxLines int) []string {
	if len(m.plan) == 0 || maxLines < 2 {
		return nil
	}
	th := m.th
	done := 0
	for _, e := range m.plan {
		if e.Status == "completed" {
			done++
		}
	}
	lines := []string{th.bold.Render(fmt.Sprintf("Plan %d/%d", done, len(m.plan)))}
	for _, e := range m.plan {
		if len(lines) >= maxLines {
			break
		}
		var l string
		if e.Priority != "" && e.Priority != "medium" {
			e.Content += " (" + e.Priority + ")"
		}
		switch e.Status {
		case "completed":
			l = th.planDone.Render("  ✓ " + clip(e.Content, width-4))
		case "in_progress":
			l = th.planActive.Render("  ▸ " + clip(e.Content, width-4))
		default:
			l = th.planPending.Render("  ○ " + clip(e.Content, width-4))
		}
		lines = append(lines, l)
	}
	return lines
}

// uploadState is an /attach in progress.
type uploadState struct {
	name        string
	done, total int64
	bar         progress.Model
}

// uploadMsg reports an upload's progress, or its end (entry or err set).
type uploadMsg struct {
	done, total int64
	entry       *client.FileEntry
	err         error
	end         bool
}

func (m *Model) startUpload(path string) tea.Cmd {
	m.use()
	if m.b == nil {
		m.notice("not connected to the daemon yet", true)
		return nil
	}
	if m.upload != nil {
		m.notice("an upload is already running", true)
		return nil
	}
	m.upload = &uploadState{name: filepath.Base(path), bar: m.progressBar()}
	b, sid, send := m.b, m.sid, m.inbox.send
	return func() tea.Msg {
		entry, err := b.Upload(context.Background(), sid, path, func(done, total int64) {
			if send != nil {
				send(uploadMsg{done: done, total: total})
			}
		})
		return uploadMsg{entry: entry, err: err, end: true}
	}
}

func (m *Model) uploadProgress(u uploadMsg) tea.Cmd {
	if m.upload == nil {
		return nil
	}
	if !u.end {
		m.upload.done, m.upload.total = u.done, u.total
		return nil
	}
	name := m.upload.name
	m.upload = nil
	if u.err != nil {
		m.notice(describeError("uploading "+name, u.err), true)
		return nil
	}
	m.attached = append(m.attached, *u.entry)
	m.notice(fmt.Sprintf("attached %s (%d bytes); it goes with your next prompt", u.entry.WorkspacePath, u.entry.SizeBytes), false)
	return nil
}

func (m *Model) uploadView(width int) string {
	u := m.upload
	pct := 0.0
	if u.total > 0 {
		pct = float64(u.done) / float64(u.total)
	}
	u.bar.SetWidth(max(10, min(40, width-len(u.name)-20)))
	return fmt.Sprintf("uploading %s %s %d/%d bytes", clip(u.name, 20), u.bar.ViewAs(pct), u.done, u.total)
}

func (m *Model) progressBar() progress.Model {
	if m.th.noColor {
		return progress.New(progress.WithWidth(30), progress.WithColors(lipgloss.NoColor{}), progress.WithFillCharacters('#', '.'))
	}
	return progress.New(progress.WithWidth(30))
}
