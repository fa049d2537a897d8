package tui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// pickMemory is the picker of /memory: the agent's memories of the caller
// (docs/protocol.md, "Memory"), newest first or the best matches of a search.
const pickMemory = "memory"

const memoryTitle = "Memories — / search · Enter view · d forget · Esc close"

// memoryPicker lists the memories of the agent, matching query when it is not "".
func (m *Model) memoryPicker(query string) tea.Cmd {
	agent := m.agent
	return m.call("listing memories (memory/list)", func(ctx context.Context, b Backend) (func(*Model) tea.Cmd, error) {
		var r struct {
			Memories []client.Memory `json:"memories"`
		}
		q := client.MemoryQuery{AgentAlias: agent, Query: query, Limit: 200}
		if err := b.Call(ctx, "memory/list", q, &r); err != nil {
			return nil, err
		}
		title := memoryTitle
		if query != "" {
			title = fmt.Sprintf("Memories matching %q — / search · Enter view · d forget · Esc close", query)
		}
		p := &picker{kind: pickMemory, title: title}
		for _, mem := range r.Memories {
			label := mem.Key
			if label == "" {
				label = mem.ID
			}
			detail := strings.Join(strings.Fields(mem.Content), " ")
			if mem.Score != nil {
				detail = fmt.Sprintf("%.2f · %s", *mem.Score, detail)
			}
			p.items = append(p.items, pickItem{id: mem.ID, label: label, detail: detail, agent: mem.Content})
		}
		return func(m *Model) tea.Cmd { return m.openPicker(pickerMsg{p}) }, nil
	})
}

// memoryKey handles a key in the memory picker: "/" starts a search, typed and
// sent with Enter; Enter on a memory shows it whole; d asks, then y forgets it.
func (p *picker) memoryKey(k tea.KeyPressMsg, m *Model) tea.Cmd {
	s := k.String()
	switch {
	case p.editing:
		switch s {
		case "esc":
			p.editing = false
		case "enter":
			p.editing = false
			m.picker = nil
			return m.memoryPicker(strings.TrimSpace(p.text))
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
	case p.confirm:
		p.confirm = false
		if s == "y" || s == "Y" {
			return m.forgetMemory(p.items[p.cur].id)
		}
		return nil
	}
	switch s {
	case "/":
		p.editing, p.text = true, ""
	case "enter":
		if len(p.items) > 0 {
			it := p.items[p.cur]
			m.picker = nil
			m.notice(fmt.Sprintf("memory %s (%s):\n%s", it.id, it.label, it.agent), false)
		}
	case "d":
		if len(p.items) > 0 {
			p.confirm = true
		}
	case "esc", "q":
		m.picker = nil
	case "up", "k":
		p.cur = max(0, p.cur-1)
	case "down", "j":
		p.cur = min(len(p.items)-1, p.cur+1)
	}
	return nil
}

func (m *Model) forgetMemory(id string) tea.Cmd {
	return m.call("forgetting the memory (memory/delete)", func(ctx context.Context, b Backend) (func(*Model) tea.Cmd, error) {
		if err := b.Call(ctx, "memory/delete", map[string]any{"id": id}, nil); err != nil {
			return nil, err
		}
		return func(m *Model) tea.Cmd {
			if m.picker != nil && m.picker.kind == pickMemory {
				m.picker.drop(id)
			}
			m.notice("forgot memory "+id, false)
			return nil
		}, nil
	})
}
