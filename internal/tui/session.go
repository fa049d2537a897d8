package tui

import (
	"context"
	"encoding/json/v2"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// callTimeout bounds the UI's calls other than prompts and uploads.
const callTimeout = 30 * time.Second

// actionMsg is the end of a call the UI made; done, when set, runs on the model.
type actionMsg struct {
	err  error
	what string // what the call was, for an error line
	done func(m *Model) tea.Cmd
}

// call runs f off the UI's goroutine and reports with an actionMsg.
func (m *Model) call(what string, f func(ctx context.Context, b Backend) (func(m *Model) tea.Cmd, error)) tea.Cmd {
	b := m.b
	if b == nil {
		m.notice("not connected to the daemon yet", true)
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		done, err := f(ctx, b)
		return actionMsg{err: err, what: what, done: done}
	}
}

func (m *Model) actionDone(a actionMsg) tea.Cmd {
	if a.err != nil {
		m.notice(describeError(a.what, a.err), true)
		return nil
	}
	if a.done != nil {
		return a.done(m)
	}
	return nil
}

// describeError says what failed; a method the daemon does not have is said so.
func describeError(what string, err error) string {
	var e *client.Error
	if errors.As(err, &e) && e.Code == client.CodeMethodNotFound {
		return fmt.Sprintf("%s: this daemon does not offer it (%s)", what, e.Message)
	}
	return fmt.Sprintf("%s: %v", what, err)
}

// enterSession shows a session that was just opened or attached: its past turns are
// replayed (session/attach from seq 0); rows of its transcript the replay lacks (a
// fork's copied rows, turns the replay log no longer keeps) are read from
// session/messages; its controls are read. notes are lines shown after the
// session's own.
func (m *Model) enterSession(s *client.Session, notes ...string) tea.Cmd {
	left := m.leave(s.SessionID)
	m.sid, m.agent = s.SessionID, s.AgentAlias
	m.tr.reset()
	m.cards, m.plan, m.approvals, m.attached = map[string]*block{}, nil, nil, nil
	m.title, m.model, m.mode, m.ctxTokens, m.ctxWindow, m.ctxEstimated = "", "", "", 0, 0, false
	m.notice(fmt.Sprintf("session %s · agent %s · /help for keys and commands", s.SessionID, s.AgentAlias), false)
	for _, n := range notes {
		m.notice(n, false)
	}
	sid, agent := s.SessionID, s.AgentAlias
	replay := s.Resumed || s.MessageCount > 0
	push := m.inbox.push
	return tea.Batch(left, m.call("opening the session", func(ctx context.Context, b Backend) (func(*Model) tea.Cmd, error) {
		var rows []client.Message
		var histErr error // the transcript could not be read: said, the session still opens
		if replay {
			seen := &replaySeen{}
			truncated := false
			if _, err := b.Attach(ctx, sid, 0, seen.wrap(push)); err != nil {
				var e *client.Error
				if !errors.As(err, &e) || e.Reason() != "replay_truncated" {
					return nil, err
				}
				truncated = true
				if _, err := b.Attach(ctx, sid, keptAfter(e), seen.wrap(push)); err != nil {
					return nil, err
				}
			}
			rows, histErr = missingRows(ctx, b, sid, seen, truncated)
		}
		info := sessionControls(ctx, b, sid, agent)
		return func(m *Model) tea.Cmd {
			if m.sid != sid {
				return nil
			}
			if histErr != nil {
				m.notice(describeError("reading the session's transcript", histErr), true)
			}
			info.apply(m)
			if len(rows) > 0 {
				m.showHistory(rows)
			}
			return nil
		}, nil
	}))
}

// showHistory puts transcript rows the replay lacked after the session's first line:
// the notices that follow it (such as "forked from") and the replayed turns come
// after them.
func (m *Model) showHistory(rows []client.Message) {
	blocks, cards := historyBlocks(rows)
	head := 0
	if len(m.tr.blocks) > 0 && m.tr.blocks[0].kind == blockNotice {
		head = 1
	}
	all := make([]*block, 0, len(m.tr.blocks)+len(blocks))
	all = append(all, m.tr.blocks[:head]...)
	all = append(all, blocks...)
	m.tr.blocks = append(all, m.tr.blocks[head:]...)
	for id, b := range cards {
		if m.cards[id] == nil {
			m.cards[id] = b
		}
	}
	if m.title == "" {
		for _, r := range rows {
			if r.Role == client.RoleUser {
				first, _, _ := strings.Cut(r.Text, "\n")
				m.title = clip(strings.TrimSpace(first), 80)
				break
			}
		}
	}
	m.tr.follow()
}

// keptAfter is the afterSeq to replay what is still kept after a replay_truncated error.
func keptAfter(e *client.Error) uint64 {
	var d struct {
		OldestSeq uint64 `json:"oldestSeq"`
	}
	if decodeData(e, &d) == nil && d.OldestSeq > 0 {
		return d.OldestSeq - 1
	}
	return 0
}

// controls is what the status line shows of a session, as read when it opens.
type controls struct {
	title, model, mode string
}

// apply shows the controls read; the title, when there is one, replaces the one
// derived from the first prompt replayed (a fork's first replayed prompt is not its
// first).
func (c controls) apply(m *Model) {
	if c.title != "" {
		m.title = c.title
	}
	if m.model == "" {
		m.model = c.model
	}
	if m.mode == "" {
		m.mode = c.mode
	}
}

// sessionControls reads the session's mode, model and title: session/set with no
// change answers them (docs/protocol.md, "session/set"). A daemon without it, or a
// principal it refuses, gets the title from session/list, the agent's model and
// autonomy from agents/list and the current model from models/list.
func sessionControls(ctx context.Context, b Backend, sid, agent string) controls {
	var c controls
	var set struct {
		Mode  string `json:"mode"`
		Model string `json:"model"`
		Title string `json:"title"`
	}
	if b.Call(ctx, "session/set", map[string]any{"sessionId": sid}, &set) == nil && set.Mode != "" {
		return controls{title: set.Title, model: set.Model, mode: set.Mode}
	}
	if list, _, err := b.ListSessions(ctx, 1000, ""); err == nil {
		for _, s := range list {
			if s.SessionID == sid {
				c.title = s.Title
			}
		}
	}
	var agents struct {
		Agents []struct {
			Alias    string `json:"alias"`
			Model    string `json:"model"`
			Autonomy string `json:"autonomy"`
		} `json:"agents"`
	}
	if b.Call(ctx, "agents/list", nil, &agents) == nil {
		for _, a := range agents.Agents {
			if a.Alias == agent {
				c.model, c.mode = a.Model, a.Autonomy
			}
		}
	}
	if models, err := listModels(ctx, b, sid); err == nil {
		for _, md := range models.Models {
			if md.Current {
				c.model = md.ID
			}
		}
	}
	return c
}

// modelList is the result of models/list (docs/protocol.md, "models/list").
type modelList struct {
	Models []struct {
		ID      string `json:"id"`
		Current bool   `json:"current"`
	} `json:"models"`
	Source string `json:"source"`
}

func listModels(ctx context.Context, b Backend, sid string) (*modelList, error) {
	var r modelList
	if err := b.Call(ctx, "models/list", map[string]any{"sessionId": sid}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// setSession calls session/set (docs/protocol.md, "session/set") with one control and
// shows its answer.
func (m *Model) setSession(what, field, value string) tea.Cmd {
	m.use()
	sid := m.sid
	return m.call(what, func(ctx context.Context, b Backend) (func(*Model) tea.Cmd, error) {
		var r struct {
			Mode  string `json:"mode"`
			Model string `json:"model"`
			Title string `json:"title"`
		}
		if err := b.Call(ctx, "session/set", map[string]any{"sessionId": sid, field: value}, &r); err != nil {
			return nil, err
		}
		return func(m *Model) tea.Cmd {
			if m.sid == sid {
				m.mode, m.model, m.title = orKeep(r.Mode, m.mode), orKeep(r.Model, m.model), orKeep(r.Title, m.title)
				m.notice(fmt.Sprintf("%s: %s", field, value), false)
			}
			return nil
		}, nil
	})
}

func orKeep(v, old string) string {
	if v == "" {
		return old
	}
	return v
}

// prompt sends one prompt; its updates arrive through the inbox.
func (m *Model) prompt(text string) tea.Cmd {
	if m.b == nil {
		m.notice("not connected to the daemon yet", true)
		return nil
	}
	m.use()
	b, sid, att := m.b, m.sid, m.attached
	m.attached = nil
	m.running++
	m.ctrlC = 0
	if m.conn == connRestarted {
		m.conn = connConnected
	}
	m.tr.follow()
	push := m.inbox.push
	return tea.Batch(func() tea.Msg {
		r, err := b.Prompt(context.Background(), sid, text, att, push)
		var lag *client.LaggedError
		if errors.As(err, &lag) && r != nil {
			err = nil // the updates it could not deliver are replayed by the client's attach
		}
		return promptDoneMsg{r: r, err: err}
	}, m.tick())
}

func (m *Model) promptDone(d promptDoneMsg) tea.Cmd {
	m.running = max(0, m.running-1)
	m.ctrlC = 0
	if m.running == 0 {
		m.streaming = false
	}
	switch {
	case d.err != nil:
		m.notice("the prompt failed: "+d.err.Error(), true)
	case d.r.StopReason == client.StopEndTurn:
	case d.r.StopReason == client.StopCancelled && d.r.Restarted:
	case d.r.StopReason == client.StopError:
		m.notice("the turn failed: "+d.r.Text, true)
	case d.r.StopReason == client.StopCancelled:
		m.notice("turn cancelled", false)
	case d.r.StopReason == client.StopMaxSteps:
		m.notice("the turn hit the agent's step limit", false)
	}
	if m.running == 0 { // a turn that ended leaves no tool running
		for _, b := range m.cards {
			if c := b.tool; c.state == toolRunning || c.state == toolApproval {
				c.state, c.progress = toolCancelled, "interrupted"
				b.touch()
			}
		}
		m.approvals = nil
	}
	return nil
}

// cancel cancels the session's running turn.
func (m *Model) cancel() tea.Cmd {
	sid := m.sid
	m.notice("cancelling… (Ctrl-C again quits)", false)
	return m.call("cancelling", func(ctx context.Context, b Backend) (func(*Model) tea.Cmd, error) {
		cancelled, err := b.Cancel(ctx, sid)
		if err != nil || cancelled {
			return nil, err
		}
		return func(m *Model) tea.Cmd {
			if m.sid == sid && m.running == 0 {
				m.streaming = false // the turn seen starting (another client's) is over
				m.notice("no turn is running", false)
			}
			return nil
		}, nil
	})
}

// decodeData decodes an error's data member into v.
func decodeData(e *client.Error, v any) error {
	if len(e.Data) == 0 {
		return errors.New("no data")
	}
	return json.Unmarshal(e.Data, v)
}
