package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// Picker kinds.
const (
	pickSessions = "sessions"
	pickModel    = "model"
	pickMode     = "mode"
)

// picker is a list overlay: sessions, models or modes.
type picker struct {
	kind, title string
	items       []pickItem
	cur         int
	editing     bool   // renaming: text is the new title
	confirm     bool   // deleting: waiting for y
	text        string // the rename's text
}

type pickItem struct {
	id, label, detail string
	agent             string // sessions: the session's agent; memory: the whole content
	current           bool
}

// pickerMsg opens a picker.
type pickerMsg struct{ p *picker }

func (m *Model) openPicker(msg pickerMsg) tea.Cmd {
	m.picker = msg.p
	for i, it := range msg.p.items {
		if it.current {
			m.picker.cur = i
		}
	}
	return nil
}

func (m *Model) sessionsPicker() tea.Cmd {
	sid := m.sid
	return m.call("listing sessions", func(ctx context.Context, b Backend) (func(*Model) tea.Cmd, error) {
		list, _, err := b.ListSessions(ctx, 200, "")
		if err != nil {
			return nil, err
		}
		p := &picker{kind: pickSessions, title: "Sessions — Enter resume · r rename · d delete · f fork · Esc close"}
		for _, s := range list {
			title := s.Title
			if title == "" {
				title = "(untitled) " + s.SessionID
			}
			p.items = append(p.items, pickItem{id: s.SessionID, label: title, agent: s.AgentAlias,
				detail: fmt.Sprintf("%s · %s · %s", s.AgentAlias, ago(s.LastActivity), s.State), current: s.SessionID == sid})
		}
		return func(m *Model) tea.Cmd { return m.openPicker(pickerMsg{p}) }, nil
	})
}

// ago says how long ago an RFC 3339 time was.
func ago(ts string) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return ts
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	default:
		return t.Format("2006-01-02")
	}
}

func (m *Model) modelPicker() tea.Cmd {
	sid := m.sid
	return m.call("listing models (models/list)", func(ctx context.Context, b Backend) (func(*Model) tea.Cmd, error) {
		r, err := listModels(ctx, b, sid)
		if err != nil {
			return nil, err
		}
		p := &picker{kind: pickModel, title: fmt.Sprintf("Model (from %s) — Enter choose · Esc close", r.Source)}
		for _, md := range r.Models {
			p.items = append(p.items, pickItem{id: md.ID, label: md.ID, current: md.Current})
		}
		if len(p.items) == 0 {
			return func(m *Model) tea.Cmd { m.notice("the daemon lists no models for this session", false); return nil }, nil
		}
		return func(m *Model) tea.Cmd { return m.openPicker(pickerMsg{p}) }, nil
	})
}

func modePicker(current string) tea.Msg {
	p := &picker{kind: pickMode, title: "Mode — Enter choose · Esc close"}
	for _, md := range []pickItem{
		{id: "readonly", label: "readonly", detail: "Read only"},
		{id: "supervised", label: "supervised", detail: "Ask before changes"},
		{id: "full", label: "full", detail: "Full access"},
	} {
		md.current = md.id == current
		p.items = append(p.items, md)
	}
	return pickerMsg{p}
}

func (p *picker) key(k tea.KeyPressMsg, m *Model) tea.Cmd {
	if p.kind == pickMemory {
		return p.memoryKey(k, m)
	}
	s := k.String()
	if p.editing {
		switch s {
		case "esc":
			p.editing = false
		case "enter":
			p.editing = false
			title, id := strings.TrimSpace(p.text), p.items[p.cur].id
			if title == "" {
				return nil
			}
			p.items[p.cur].label = title
			return m.renameSession(id, title)
		case "backspace":
			if r := []rune(p.text); len(r) > 0 {
				p.text = string(r[:len(r)-1])
			}
		default:
			if k.Text != "" {
				p.text += k.Text
			}
		}
		return nil
	}
	if p.confirm {
		p.confirm = false
		if s == "y" || s == "Y" {
			return m.deleteSession(p.items[p.cur].id)
		}
		return nil
	}
	switch s {
	case "esc", "q":
		m.picker = nil
	case "up", "k":
		p.cur = max(0, p.cur-1)
	case "down", "j":
		p.cur = min(len(p.items)-1, p.cur+1)
	case "enter":
		if len(p.items) == 0 {
			m.picker = nil
			return nil
		}
		m.picker = nil
		it := p.items[p.cur]
		switch p.kind {
		case pickSessions:
			return m.resume(it.id, it.agent)
		case pickModel:
			return m.setSession("choosing the model (session/set)", "model", it.id)
		case pickMode:
			return m.setSession("choosing the mode (session/set)", "mode", it.id)
		}
	case "r":
		if p.kind == pickSessions && len(p.items) > 0 {
			p.editing, p.text = true, ""
		}
	case "d":
		if p.kind == pickSessions && len(p.items) > 0 {
			if p.items[p.cur].id == m.sid {
				m.notice("this is the open session: /new or resume another before deleting it", true)
				return nil
			}
			p.confirm = true
		}
	case "f":
		if p.kind == pickSessions && len(p.items) > 0 {
			m.picker = nil
			return m.forkSession(p.items[p.cur].id, p.items[p.cur].label)
		}
	}
	return nil
}

// drop takes the item id out of the list, keeping the cursor within it.
func (p *picker) drop(id string) {
	for i, it := range p.items {
		if it.id == id {
			p.items = append(p.items[:i:i], p.items[i+1:]...)
			p.cur = max(0, min(p.cur, len(p.items)-1))
			return
		}
	}
}

func (p *picker) view(th theme, width, height int) string {
	var b strings.Builder
	b.WriteString(th.bold.Render(clip(p.title, width)))
	rows := max(1, height-2)
	start := 0
	if p.cur >= rows {
		start = p.cur - rows + 1
	}
	if len(p.items) == 0 {
		b.WriteString("\n" + th.faint.Render("(none)"))
	}
	labelWidth := 0
	for _, it := range p.items {
		labelWidth = max(labelWidth, len([]rune(clip(it.label, max(8, width*3/5)))))
	}
	for i := start; i < len(p.items) && i < start+rows; i++ {
		it := p.items[i]
		mark := "  "
		if i == p.cur {
			mark = "▸ "
		}
		if it.current {
			mark += "● "
		} else {
			mark += "  "
		}
		label := clip(it.label, max(8, width*3/5))
		label += strings.Repeat(" ", labelWidth-len([]rune(label)))
		line := mark + label
		if it.detail != "" {
			line += "  " + th.faint.Render(clip(it.detail, max(1, width-len([]rune(label))-4)))
		}
		if i == p.cur {
			line = th.selected.Render(stripANSI(clip(stripANSI(line), width)))
		}
		b.WriteString("\n" + line)
	}
	switch {
	case p.editing:
		label := "new title: "
		if p.kind == pickMemory {
			label = "search: "
		}
		b.WriteString("\n" + th.bold.Render(label) + p.text + "█")
	case p.confirm:
		b.WriteString("\n" + th.errorText.Render(fmt.Sprintf("delete %q? y deletes, any other key keeps it", p.items[p.cur].label)))
	}
	return b.String()
}

// resume switches to a session: attached, its stored updates replayed.
func (m *Model) resume(sid, agent string, notes ...string) tea.Cmd {
	if sid == m.sid {
		return nil
	}
	if agent == "" {
		agent = m.agent
	}
	return m.call("resuming the session", func(ctx context.Context, b Backend) (func(*Model) tea.Cmd, error) {
		s, err := b.NewSession(ctx, client.NewSessionParams{AgentAlias: agent, SessionID: sid, KeepSiblings: true})
		if err != nil {
			return nil, err
		}
		s.Resumed = true
		return func(m *Model) tea.Cmd { return m.enterSession(s, notes...) }, nil
	})
}

func (m *Model) renameSession(sid, title string) tea.Cmd {
	return m.call("renaming the session (session/set)", func(ctx context.Context, b Backend) (func(*Model) tea.Cmd, error) {
		if err := b.Call(ctx, "session/set", map[string]any{"sessionId": sid, "title": title}, nil); err != nil {
			return nil, err
		}
		return func(m *Model) tea.Cmd {
			if m.sid == sid {
				m.title = title
			}
			m.notice("renamed to "+title, false)
			return nil
		}, nil
	})
}

func (m *Model) deleteSession(sid string) tea.Cmd {
	return m.call("deleting the session", func(ctx context.Context, b Backend) (func(*Model) tea.Cmd, error) {
		if err := b.Call(ctx, "session/delete", map[string]any{"sessionId": sid}, nil); err != nil {
			return nil, err
		}
		return func(m *Model) tea.Cmd {
			if m.picker != nil {
				m.picker.drop(sid)
			}
			m.notice("deleted session "+sid, false)
			return nil
		}, nil
	})
}

func (m *Model) forkSession(sid, label string) tea.Cmd {
	return m.call("forking the session (session/fork)", func(ctx context.Context, b Backend) (func(*Model) tea.Cmd, error) {
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if err := b.Call(ctx, "session/fork", map[string]any{"sessionId": sid}, &r); err != nil {
			return nil, err
		}
		return func(m *Model) tea.Cmd {
			return m.resume(r.SessionID, "", fmt.Sprintf("forked from %q (%s)", label, sid))
		}, nil
	})
}
