// Package tui is the full-screen terminal client behind `zeroclaw` (in a terminal) and
// `zeroclaw tui`, on Bubble Tea v2: the transcript with markdown, tool cards, the
// plan, an input box with history and command completion, a status line, approval
// and elicitation overlays, and pickers for sessions, models and modes. It talks to
// the daemon through the public client package only.
package tui

import (
	"context"
	"strings"
	"time"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// Backend is what the UI needs of the daemon: *client.Client has all of it. Model
// tests give a scripted one.
type Backend interface {
	Prompt(ctx context.Context, sessionID, text string, attachments []client.FileEntry, onUpdate func(client.Update)) (*client.PromptResult, error)
	Cancel(ctx context.Context, sessionID string) (bool, error)
	Approve(ctx context.Context, sessionID, requestID, decision string) (bool, error)
	ListSessions(ctx context.Context, limit int, cursor string) ([]client.ListedSession, string, error)
	NewSession(ctx context.Context, p client.NewSessionParams) (*client.Session, error)
	Attach(ctx context.Context, sessionID string, afterSeq uint64, onUpdate func(client.Update)) (*client.AttachResult, error)
	Call(ctx context.Context, method string, params, result any) error
	Upload(ctx context.Context, sessionID, path string, progress func(done, total int64)) (*client.FileEntry, error)
}

// Connection states shown in the status line.
const (
	connConnecting   = "connecting…"
	connConnected    = "connected"
	connReconnecting = "reconnecting…"
	connRestarted    = "daemon restarted"
	connLost         = "disconnected"
)

// Model is the UI's state; Bubble Tea drives it.
type Model struct {
	opts  Options
	b     Backend
	inbox *inbox
	th    theme
	rend  *renderer
	tr    transcript

	width, height int

	// The session and what the status line says of it.
	sid, agent, title, model, mode string
	fresh                          string // a new session the UI opened and has not used (fresh.go)
	ctxTokens, ctxWindow           int
	ctxEstimated                   bool // ctxTokens scaled by a compaction, until the next usage
	conn                           string

	input   textarea.Model
	history []string
	histPos int    // len(history) when not browsing
	draft   string // what was typed before browsing the history
	hint    string // completion candidates or a one-line message under the input

	running   int // prompts of this client in flight
	streaming bool
	ctrlC     int // Ctrl-C presses in a row
	spinFrame int
	ticking   bool
	cards     map[string]*block
	plan      []planEntry
	attached  []client.FileEntry
	upload    *uploadState
	approvals []client.Update // approval requests waiting, the first one shown
	picker    *picker
	form      *elicitForm
	questions []elicitMsg // questions waiting for the form
	quitting  bool
	after     func(time.Duration, func(time.Time) tea.Msg) tea.Cmd // tea.Tick; model tests stop the clock
}

// Options configure the UI.
type Options struct {
	Agent   string // agent alias of a new session
	Session string // resume this session id (or create it)
	Dark    bool   // the terminal's background is dark
	NoColor bool   // NO_COLOR: no colours, only bold and faint
	// Connect dials the daemon and opens the session; updates and connection
	// events go to the hooks. Run sets it; model tests send connectedMsg instead.
	Connect func(ctx context.Context, h Hooks) (Backend, *client.Session, error)
}

// Hooks are what the client's callbacks call into the UI with.
type Hooks struct {
	Update     func(client.Update)
	Connection func(client.ConnectionEvent)
	Elicit     client.ElicitationHandler
}

// New returns the UI's model; Run runs it.
func New(o Options) *Model {
	if o.Agent == "" {
		o.Agent = "default"
	}
	th := newTheme(o.Dark, o.NoColor)
	ta := textarea.New()
	ta.Prompt = "› "
	ta.Placeholder = "Type a prompt; / for commands, Alt-Enter for a new line"
	ta.ShowLineNumbers = false
	ta.CharLimit = 0 // the daemon bounds a prompt; the box does not
	ta.DynamicHeight, ta.MinHeight, ta.MaxHeight = true, 1, maxInputLines
	ta.MaxContentHeight = 100_000
	ta.KeyMap.InsertNewline.SetKeys("alt+enter", "ctrl+j")
	ta.KeyMap.LinePrevious.SetEnabled(false) // Up/Down: lines, else history (see keys)
	ta.KeyMap.LineNext.SetEnabled(false)
	ta.SetStyles(inputStyles(o.Dark))
	ta.Focus()
	return &Model{
		opts: o, inbox: &inbox{}, th: th, rend: newRenderer(th),
		width: 80, height: 24, agent: o.Agent, conn: connConnecting,
		input: ta, cards: map[string]*block{}, after: tea.Tick,
	}
}

// hooks are the model's callbacks for the client.
func (m *Model) hooks(send func(tea.Msg)) Hooks {
	return Hooks{
		Update:     m.inbox.push,
		Connection: func(e client.ConnectionEvent) { send(connMsg(e)) },
		Elicit: func(ctx context.Context, e client.Elicitation) (client.ElicitationResult, error) {
			reply := make(chan client.ElicitationResult, 1)
			send(elicitMsg{e: e, reply: reply})
			select {
			case r := <-reply:
				return r, nil
			case <-ctx.Done():
				return client.ElicitationResult{Action: "cancel"}, nil
			}
		},
	}
}

type (
	connMsg      client.ConnectionEvent
	connectedMsg struct {
		b   Backend
		s   *client.Session
		err error
	}
	elicitMsg struct {
		e     client.Elicitation
		reply chan client.ElicitationResult
	}
	promptDoneMsg struct {
		r   *client.PromptResult
		err error
	}
	tickMsg   struct{}
	noticeMsg struct {
		text  string
		isErr bool
	}
)

// Init starts connecting.
func (m *Model) Init() tea.Cmd {
	if m.opts.Connect == nil {
		return nil
	}
	return tea.Batch(m.input.Focus(), tea.RequestBackgroundColor, func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		b, s, err := m.opts.Connect(ctx, m.hooks(m.inbox.send))
		return connectedMsg{b: b, s: s, err: err}
	})
}

// Update handles one message. Every message first takes the updates gathered in the
// inbox, so they are applied in the daemon's order and promptly.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	if us := m.inbox.take(); len(us) > 0 {
		cmds = append(cmds, m.applyUpdates(us))
	}
	cmds = append(cmds, m.handle(msg))
	return m, tea.Batch(cmds...)
}

func (m *Model) handle(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case flushMsg:
		return nil
	case tea.WindowSizeMsg:
		m.width, m.height = max(20, msg.Width), max(6, msg.Height)
		m.input.SetWidth(m.width)
		if m.form != nil {
			m.form.resize(m.width)
		}
		return nil
	case tea.BackgroundColorMsg:
		if dark := msg.IsDark(); dark != m.th.dark {
			m.setTheme(dark)
		}
		return nil
	case connectedMsg:
		return m.connected(msg)
	case connMsg:
		m.connection(client.ConnectionEvent(msg))
		return nil
	case promptDoneMsg:
		return m.promptDone(msg)
	case tickMsg:
		m.ticking = false
		m.spinFrame++
		for _, b := range m.cards {
			if b.tool.state == toolRunning {
				b.touch()
			}
		}
		return m.tick()
	case noticeMsg:
		m.notice(msg.text, msg.isErr)
		return nil
	case elicitMsg:
		if m.form != nil { // one question at a time; the next waits its turn
			m.questions = append(m.questions, msg)
			return nil
		}
		m.form = newElicitForm(msg.e, msg.reply, m.width, m.th)
		return m.form.init()
	case uploadMsg:
		return m.uploadProgress(msg)
	case pickerMsg:
		return m.openPicker(msg)
	case actionMsg:
		return m.actionDone(msg)
	case tea.PasteMsg:
		if m.overlayActive() {
			return m.overlayMsg(msg)
		}
		m.input.InsertString(msg.Content)
		return nil
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			m.tr.scrollBy(3)
		case tea.MouseWheelDown:
			m.tr.scrollBy(-3)
		}
		return nil
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	if m.form != nil {
		return m.form.update(msg, m)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return cmd
}

func (m *Model) setTheme(dark bool) {
	m.th = newTheme(dark, m.opts.NoColor)
	m.rend = newRenderer(m.th)
	m.input.SetStyles(inputStyles(dark))
	for _, b := range m.tr.blocks {
		b.segLines, b.segEnd, b.segWidth = nil, 0, 0
	}
	m.invalidate()
}

// inputStyles: the textarea's default styles, with a steady cursor and no
// highlighted cursor line.
func inputStyles(dark bool) textarea.Styles {
	st := textarea.DefaultStyles(dark)
	st.Focused.CursorLine = st.Focused.Text
	st.Cursor.Blink = false
	return st
}

func (m *Model) invalidate() {
	for _, b := range m.tr.blocks {
		b.touch()
	}
}

// connected: the client is up and the session open (or not).
func (m *Model) connected(msg connectedMsg) tea.Cmd {
	if msg.err != nil {
		m.conn = connLost
		m.notice("could not connect: "+msg.err.Error(), true)
		return nil
	}
	m.b, m.conn = msg.b, connConnected
	cmd := m.enterSession(msg.s)
	if m.opts.Session == "" {
		m.markFresh(msg.s)
	}
	return cmd
}

// connection shows what became of the connection.
func (m *Model) connection(e client.ConnectionEvent) {
	switch e.Kind {
	case client.ConnectionLost:
		m.conn = connReconnecting
		m.notice("connection to the daemon lost; reconnecting…", false)
	case client.Reconnected:
		m.conn = connConnected
		msg := "reconnected"
		if e.Restarted {
			m.conn = connRestarted
			msg = "daemon restarted; session recovered"
			if e.InFlight {
				msg += ", last turn interrupted"
			}
		}
		m.notice(msg, false)
	case client.GaveUp:
		m.conn = connLost
		m.notice("could not reconnect to the daemon: "+errText(e.Err), true)
	}
}

func errText(err error) string {
	if err == nil {
		return "gave up"
	}
	return err.Error()
}

// notice adds a line of the UI's own to the transcript.
func (m *Model) notice(text string, isErr bool) {
	k := blockNotice
	if isErr {
		k = blockError
	}
	b := &block{kind: k}
	b.text.WriteString(text)
	m.tr.add(b)
	m.tr.follow()
}

// tick keeps the spinner turning while something runs.
func (m *Model) tick() tea.Cmd {
	if m.ticking || (m.running == 0 && !m.anyToolRunning()) {
		return nil
	}
	m.ticking = true
	return m.after(120*time.Millisecond, func(time.Time) tea.Msg { return tickMsg{} })
}

func (m *Model) anyToolRunning() bool {
	for _, b := range m.cards {
		if b.tool.state == toolRunning {
			return true
		}
	}
	return false
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// View draws the screen.
func (m *Model) View() tea.View {
	m.rend.spin = spinnerFrames[m.spinFrame%len(spinnerFrames)]
	v := tea.NewView(m.screen())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "zeroclaw"
	if m.title != "" {
		v.WindowTitle = "zeroclaw · " + m.title
	}
	return v
}

// screen lays out the screen: transcript, plan, overlay or input, status line.
func (m *Model) screen() string {
	w, h := m.width, m.height
	status := m.statusLine(w)
	var bottom []string
	if ov := m.overlayView(w, h-4); ov != "" {
		bottom = strings.Split(ov, "\n")
	} else {
		bottom = append(bottom, m.th.faint.Render(strings.Repeat("─", w)))
		bottom = append(bottom, strings.Split(m.input.View(), "\n")...)
		if m.upload != nil {
			bottom = append(bottom, m.uploadView(w))
		}
		if m.hint != "" {
			bottom = append(bottom, m.th.faint.Render(clip(m.hint, w)))
		}
	}
	plan := m.planView(w, max(0, h-len(bottom)-6))
	rest := h - 1 - len(bottom) - len(plan)
	lines := m.tr.window(w, max(1, rest), m.rend.render)
	lines = append(lines, plan...)
	lines = append(lines, bottom...)
	lines = append(lines, status)
	if len(lines) > h {
		lines = lines[len(lines)-h:]
	}
	return strings.Join(lines, "\n")
}
