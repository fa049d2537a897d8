package tui

import (
	"context"

	tea "charm.land/bubbletea/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// A session the UI opened for the user (at start without --session, or by /new)
// and left without using it is deleted as it is left: starting the UI to look at
// something, or /new by mistake, would otherwise leave an empty session in every
// list. Used means: a prompt, a title, mode or model chosen, a file attached, a
// compaction. The daemon must also say the session has no transcript row, so that
// nothing another client did in it is lost.

// markFresh makes s the fresh session when it is new and empty.
func (m *Model) markFresh(s *client.Session) {
	if !s.Resumed && s.MessageCount == 0 {
		m.fresh = s.SessionID
	}
}

// use marks the open session as used: it stays when the UI leaves it.
func (m *Model) use() {
	if m.fresh == m.sid {
		m.fresh = ""
	}
}

// leave is the command that deletes the fresh session when the UI goes to next.
func (m *Model) leave(next string) tea.Cmd {
	sid, b := m.fresh, m.b
	if sid == "" || sid == next || b == nil {
		return nil
	}
	m.fresh = ""
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		discardEmpty(ctx, b, sid)
		return nil
	}
}

// Discard deletes the fresh session as the UI quits; Run calls it.
func (m *Model) Discard(ctx context.Context) {
	if m.fresh != "" && m.b != nil && (m.conn == connConnected || m.conn == connRestarted) { // not waiting for a daemon that is gone
		discardEmpty(ctx, m.b, m.fresh)
		m.fresh = ""
	}
}

// discardEmpty deletes session sid if the daemon says it has no transcript row.
func discardEmpty(ctx context.Context, b Backend, sid string) bool {
	var r struct {
		Total *int `json:"total"`
	}
	if err := b.Call(ctx, "session/messages", map[string]any{"sessionId": sid, "limit": 1}, &r); err != nil || r.Total == nil || *r.Total != 0 {
		return false
	}
	return b.Call(ctx, "session/delete", map[string]any{"sessionId": sid}, nil) == nil
}
