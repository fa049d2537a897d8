// Package chat is the terminal client behind `zeroclaw chat`: interactive with line
// editing in a terminal, one prompt from stdin otherwise. It talks to the daemon
// through the client package only; it never opens the daemon's files.
package chat

import (
	"context"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/peterh/liner"
	"golang.org/x/term"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/version"
)

// Exit statuses of `zeroclaw chat` without a terminal: how the turn ended.
const (
	ExitEndTurn   = 0
	ExitFailure   = 1 // the command could not run: no daemon, a refused call, bad flags
	ExitTurnError = 2 // stopReason "error"
	ExitCancelled = 3 // stopReason "cancelled"
	ExitMaxSteps  = 4 // stopReason "max_steps"
	ExitInterrupt = 130
)

// Options say where chat connects and what it runs.
type Options struct {
	ConfigDir string // --config-dir; also where an auto-started daemon's config is
	Agent     string // agent alias of a new session
	Session   string // resume this session id (or create it)
	JSON      bool   // print every update as NDJSON, then the result (without a terminal)
	// URL is a remote daemon's wss:// endpoint; empty means the local endpoint, with
	// an ephemeral daemon started when none answers.
	URL string
	// ClientOptions go to client.Dial (a remote daemon's token and fingerprint).
	ClientOptions []client.Option
	Stdin         io.Reader
	Stdout        io.Writer
	Stderr        io.Writer
}

// Run runs chat until the user leaves (in a terminal) or the one prompt read from
// stdin has its answer; it returns the exit status (see the Exit constants).
func Run(o Options) (int, error) {
	dirs, err := endpoint.ResolveDirs(o.ConfigDir, nil)
	if err != nil {
		return 0, err
	}
	addr := o.URL
	opts := o.ClientOptions
	if addr == "" {
		addr = endpoint.Address(dirs, nil)
		opts = append(opts, client.WithAutoStart(client.AutoStart{ConfigDir: o.ConfigDir}))
	}
	interactive := isTerminal(os.Stdin) && !o.JSON
	var prompt string
	if !interactive {
		// Read the prompt before starting anything: a daemon started for nothing
		// would be a surprise when stdin fails.
		b, err := io.ReadAll(o.Stdin)
		if err != nil {
			return 0, fmt.Errorf("reading the prompt from stdin: %w", err)
		}
		prompt = strings.TrimRight(string(b), "\r\n")
		if strings.TrimSpace(prompt) == "" {
			return 0, errors.New("no prompt on stdin: pipe one in (echo hello | zeroclaw chat), or run it in a terminal")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch := &chat{out: o.Stdout, errOut: o.Stderr, dataDir: dirs.DataDir, interactiveMode: interactive}
	if interactive {
		opts = append(opts, client.WithElicitationHandler(ch.elicit))
	}
	// A lost connection is not the end of a chat: the client reconnects, and a turn
	// in flight goes on (or ends as the restarted daemon recovered it).
	opts = append(opts, client.WithReconnect(client.Reconnect{Notify: ch.connection}))
	c, err := client.Dial(ctx, addr, append(opts, client.WithClientInfo("zeroclaw-chat", version.Version))...)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	ch.c = c
	if _, err := c.Initialize(ctx); err != nil {
		return 0, err
	}
	s, err := c.NewSession(ctx, client.NewSessionParams{AgentAlias: o.Agent, SessionID: o.Session, KeepSiblings: true})
	if err != nil {
		return 0, err
	}
	ch.sid = s.SessionID
	if interactive {
		return 0, ch.interactive(s)
	}
	return ch.once(prompt, o.JSON)
}

// isTerminal asks the terminal driver, not the file mode: /dev/null is a character
// device too, and a script that redirects from it has no terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// chat is one chat session of the command.
type chat struct {
	c       *client.Client
	sid     string
	out     io.Writer
	errOut  io.Writer
	dataDir string

	interactiveMode bool

	// Interactive only.
	line        *liner.State
	term        sync.Mutex // one writer or question on the terminal at a time
	typedAhead  []string   // lines typed while a turn ran; only turn's watcher adds, after it the loop takes
	midLine     bool       // the last output did not end a line
	attachments []client.FileEntry
	answered    map[string]bool // approval requests this client answered
}

// once runs one prompt without a terminal.
func (ch *chat) once(prompt string, asJSON bool) (int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
		case <-ctx.Done():
			return
		}
		fmt.Fprintln(ch.errOut, "zeroclaw: cancelling the turn (interrupt again to leave)")
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		ch.c.Cancel(cctx, ch.sid)
		ccancel()
		select {
		case <-sigs:
			os.Exit(ExitInterrupt)
		case <-ctx.Done():
		}
	}()
	wrote := false
	res, err := ch.c.Prompt(ctx, ch.sid, prompt, nil, func(u client.Update) {
		if asJSON {
			fmt.Fprintf(ch.out, "%s\n", u.Raw)
		}
		switch u.Type {
		case client.AgentMessageChunk:
			if !asJSON {
				io.WriteString(ch.out, u.Text)
				wrote = wrote || u.Text != ""
			}
		case client.ApprovalRequest:
			fmt.Fprintf(ch.errOut, "zeroclaw: rejected %s %s: approvals need a terminal (or autonomy = \"full\")\n", u.Name, u.RawInput)
			ch.c.Approve(ctx, ch.sid, u.RequestID, client.RejectOnce)
		}
	})
	if err != nil {
		return 0, err
	}
	if asJSON {
		b, err := jsonLine(res)
		if err != nil {
			return 0, err
		}
		ch.out.Write(b)
	} else if wrote {
		fmt.Fprintln(ch.out)
	}
	switch res.StopReason {
	case client.StopEndTurn:
		return ExitEndTurn, nil
	case client.StopCancelled:
		if res.Restarted {
			fmt.Fprintln(ch.errOut, "zeroclaw: the daemon restarted during the turn, which it interrupted")
		} else {
			fmt.Fprintln(ch.errOut, "zeroclaw: the turn was cancelled")
		}
		return ExitCancelled, nil
	case client.StopMaxSteps:
		fmt.Fprintln(ch.errOut, "zeroclaw: the turn hit the agent's step limit")
		return ExitMaxSteps, nil
	default:
		fmt.Fprintf(ch.errOut, "zeroclaw: the turn failed: %s\n", res.Text)
		return ExitTurnError, nil
	}
}

// jsonLine encodes v as one compact JSON line.
func jsonLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	return append(b, '\n'), err
}

// connection tells the user, in one line each, that the connection was lost, that
// it is back, and whether the daemon restarted meanwhile.
func (ch *chat) connection(e client.ConnectionEvent) {
	var msg string
	switch e.Kind {
	case client.ConnectionLost:
		msg = "connection to the daemon lost; reconnecting…"
		if e.InFlight {
			msg += " (Ctrl-C still cancels the turn)"
		}
	case client.Reconnected:
		switch {
		case e.Restarted && e.InFlight:
			msg = "daemon restarted; session recovered, last turn interrupted"
		case e.Restarted:
			msg = "daemon restarted; session recovered"
		case e.InFlight:
			msg = "reconnected; the turn goes on"
		default:
			msg = "reconnected"
		}
	case client.GaveUp:
		msg = fmt.Sprintf("could not reconnect to the daemon: %v", e.Err)
	default:
		return
	}
	if !ch.interactiveMode {
		fmt.Fprintln(ch.errOut, "zeroclaw: "+msg)
		return
	}
	ch.endLine()
	ch.printf("%s%s%s\n", faint, msg, reset)
}
