package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// RunOptions say where the UI connects.
type RunOptions struct {
	Agent   string // agent alias of a new session (default "default")
	Session string // resume this session id (or create it)
	// URL is a remote daemon's wss:// endpoint; empty means the local endpoint,
	// with an ephemeral daemon started when none answers (as `zeroclaw chat` does).
	URL string
	// ConfigDir is the daemon's config directory (--config-dir); empty means the
	// default.
	ConfigDir string
	// AutoStart says how a daemon is started when none answers on the local
	// endpoint (its ConfigDir defaults to ConfigDir).
	AutoStart client.AutoStart
	// ClientOptions go to client.Dial (a remote daemon's token and fingerprint).
	ClientOptions []client.Option
	// HistoryFile keeps the input history between runs ("" keeps none).
	HistoryFile string
	ClientName  string // clientInfo name and version
	ClientVer   string
	Stdin       io.Reader
	Stdout      io.Writer
}

// Run runs the full-screen UI until the user quits.
func Run(o RunOptions) error {
	opts := append([]client.Option{}, o.ClientOptions...)
	if o.URL == "" {
		start := o.AutoStart
		if start.ConfigDir == "" {
			start.ConfigDir = o.ConfigDir
		}
		opts = append(opts, client.WithAutoStart(start))
	}
	if o.ClientName != "" {
		opts = append(opts, client.WithClientInfo(o.ClientName, o.ClientVer))
	}
	var c *client.Client
	m := New(Options{
		Agent: o.Agent, Session: o.Session, Dark: true, NoColor: os.Getenv("NO_COLOR") != "",
		Connect: func(ctx context.Context, h Hooks) (Backend, *client.Session, error) {
			dial := append(opts,
				client.WithUpdateHandler(h.Update),
				client.WithElicitationHandler(h.Elicit),
				client.WithReconnect(client.Reconnect{Notify: h.Connection}))
			var err error
			if c, err = client.Dial(ctx, o.URL, dial...); err != nil {
				return nil, nil, err
			}
			if _, err := c.Initialize(ctx); err != nil {
				return nil, nil, err
			}
			agent := o.Agent
			if agent == "" {
				agent = "default"
			}
			s, err := c.NewSession(ctx, client.NewSessionParams{AgentAlias: agent, SessionID: o.Session, KeepSiblings: true})
			if err != nil {
				return nil, nil, err
			}
			return c, s, nil
		},
	})
	m.history = loadHistory(o.HistoryFile)
	m.histPos = len(m.history)
	popts := []tea.ProgramOption{}
	if o.Stdin != nil {
		popts = append(popts, tea.WithInput(o.Stdin))
	}
	if o.Stdout != nil {
		popts = append(popts, tea.WithOutput(o.Stdout))
	}
	p := tea.NewProgram(m, popts...)
	m.inbox.send = p.Send
	_, err := p.Run()
	saveHistory(o.HistoryFile, m.history)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	m.Discard(ctx) // the empty session it opened, not used
	cancel()
	if c != nil {
		c.Close()
	}
	if errors.Is(err, tea.ErrInterrupted) {
		return nil
	}
	return err
}

// historyKeep is how many inputs the history file keeps.
const historyKeep = 500

func loadHistory(path string) []string {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var h []string
	for _, l := range strings.Split(string(b), "\n") {
		if s, err := strconv.Unquote(l); err == nil && s != "" {
			h = append(h, s)
		}
	}
	return h
}

func saveHistory(path string, h []string) {
	if path == "" || len(h) == 0 {
		return
	}
	h = h[max(0, len(h)-historyKeep):]
	var b strings.Builder
	for _, l := range h {
		b.WriteString(strconv.Quote(l) + "\n") // one line per input, multi-line ones too
	}
	os.WriteFile(path, []byte(b.String()), 0o600)
}
