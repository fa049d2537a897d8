package cli

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/version"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/peterh/liner"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
)

// Exit statuses of `zeroclaw chat` without a terminal: how the turn ended.
const (
	exitEndTurn   = 0
	exitFailure   = 1 // the command could not run: no daemon, a refused call, bad flags
	exitTurnError = 2 // stopReason "error"
	exitCancelled = 3 // stopReason "cancelled"
	exitMaxSteps  = 4 // stopReason "max_steps"
	exitInterrupt = 130
)

type chatOptions struct {
	configDir, agent, session string
	remote                    remoteFlags
	json                      bool
}

func chatCmd() *cobra.Command {
	var o chatOptions
	cmd := &cobra.Command{
		Use:   "chat [--agent A] [--session ID] [--json]",
		Short: "Talk to an agent: interactive in a terminal, one prompt from stdin otherwise",
		Long: `Talk to an agent of the daemon. When no daemon answers on the local endpoint, chat
starts an ephemeral one (zeroclaw daemon --ephemeral, same environment; its log is
<data dir>/ephemeral-daemon.log) that exits a second after the last client leaves.

In a terminal: type a prompt; the reply streams as it arrives (thoughts dimmed, tool
calls and results on one line each). Approvals are asked inline (y = allow once,
a = always for this tool in this session, n = reject); questions of the ask_user tool
show their choices as a numbered menu. Ctrl-C or /cancel (typed while the reply
streams) cancels the running turn; other lines typed meanwhile run after it; a second
Ctrl-C leaves. Commands: /attach FILE, /cancel, /sessions, /resume ID, /help, /quit.
History is kept in <data dir>/chat_history.

Without a terminal on stdin: reads one prompt (all of stdin), prints the reply and
exits with a status that says how the turn ended: 0 end_turn, 2 error, 3 cancelled,
4 max_steps, 1 when chat could not run (130 after a second interrupt). Approval
requests are rejected (there is nobody to ask); an interrupt cancels the turn.
--json prints every session/update as one JSON line, then the prompt's result.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			code, err := runChat(cmd, o)
			if err != nil {
				return err
			}
			if code != 0 {
				// cobra has no exit statuses besides 0 and 1; the status is the answer.
				os.Exit(code)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.configDir, "config-dir", "", "config directory of the daemon (default $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")
	f.StringVar(&o.agent, "agent", "default", "agent alias of a new session")
	f.StringVar(&o.session, "session", "", "resume this session id (or create it)")
	o.remote.add(f)
	f.BoolVar(&o.json, "json", false, "print every update as NDJSON, then the result (without a terminal)")
	return cmd
}

func runChat(cmd *cobra.Command, o chatOptions) (int, error) {
	dirs, err := endpoint.ResolveDirs(o.configDir, nil)
	if err != nil {
		return 0, err
	}
	addr := o.remote.url
	opts := o.remote.options()
	if !o.remote.remote() {
		addr = endpoint.Address(dirs, nil)
		opts = append(opts, client.WithAutoStart(client.AutoStart{ConfigDir: o.configDir}))
	}
	interactive := isTerminal(os.Stdin) && !o.json
	var prompt string
	if !interactive {
		// Read the prompt before starting anything: a daemon started for nothing
		// would be a surprise when stdin fails.
		b, err := io.ReadAll(cmd.InOrStdin())
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
	ch := &chat{out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), dataDir: dirs.DataDir}
	if interactive {
		opts = append(opts, client.WithElicitationHandler(ch.elicit))
	}
	c, err := client.Dial(ctx, addr, append(opts, client.WithClientInfo("zeroclaw-chat", version.Version))...)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	ch.c = c
	if _, err := c.Initialize(ctx); err != nil {
		return 0, err
	}
	s, err := c.NewSession(ctx, client.NewSessionParams{AgentAlias: o.agent, SessionID: o.session, KeepSiblings: true})
	if err != nil {
		return 0, err
	}
	ch.sid = s.SessionID
	if interactive {
		return 0, ch.interactive(s)
	}
	return ch.once(prompt, o.json)
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
			os.Exit(exitInterrupt)
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
		return exitEndTurn, nil
	case client.StopCancelled:
		fmt.Fprintln(ch.errOut, "zeroclaw: the turn was cancelled")
		return exitCancelled, nil
	case client.StopMaxSteps:
		fmt.Fprintln(ch.errOut, "zeroclaw: the turn hit the agent's step limit")
		return exitMaxSteps, nil
	default:
		fmt.Fprintf(ch.errOut, "zeroclaw: the turn failed: %s\n", res.Text)
		return exitTurnError, nil
	}
}

const (
	faint = "\x1b[2m"
	bold  = "\x1b[1m"
	reset = "\x1b[0m"
)

const chatHelp = `Type a prompt and press Enter. Ctrl-C cancels the running turn; twice leaves.
  /attach FILE   upload FILE into the session's workspace; it goes with the next prompt
  /cancel        cancel the session's running turn
  /sessions      list your sessions
  /resume ID     switch to session ID, replaying the updates this client missed
  /help          this help
  /quit          leave (also Ctrl-D)`

// interactive runs the terminal client until the user leaves.
func (ch *chat) interactive(s *client.Session) error {
	ch.line = liner.NewLiner()
	defer ch.line.Close()
	ch.line.SetCtrlCAborts(true)
	history := filepath.Join(ch.dataDir, "chat_history")
	if f, err := os.Open(history); err == nil {
		ch.line.ReadHistory(f)
		f.Close()
	}
	defer func() {
		if f, err := os.OpenFile(history, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600); err == nil {
			ch.line.WriteHistory(f)
			f.Close()
		}
	}()
	// Updates of turns this client did not start (another client's, or replays)
	// render the same way.
	ch.c.SetUpdateHandler(ch.render)

	// Interrupts: during a turn the first cancels it and the second leaves; at the
	// prompt liner reads Ctrl-C itself (ErrPromptAborted).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)

	resumed := ""
	if s.Resumed || s.MessageCount > 0 {
		resumed = fmt.Sprintf(", %d messages so far", s.MessageCount)
	}
	ch.printf("%sconnected to %s: session %s (agent %s%s). /help for help.%s\n", faint, ch.c.Endpoint(), s.SessionID, s.AgentAlias, resumed, reset)
	aborted := false
	for {
		var text string
		var err error
		if len(ch.typedAhead) > 0 { // lines typed during the last turn, in order
			text, ch.typedAhead = ch.typedAhead[0], ch.typedAhead[1:]
			ch.printf("> %s\n", text)
		} else {
			text, err = ch.line.Prompt("> ")
		}
		switch {
		case errors.Is(err, liner.ErrPromptAborted):
			if aborted {
				return nil
			}
			aborted = true
			ch.printf("%s(Ctrl-C again, Ctrl-D or /quit to leave)%s\n", faint, reset)
			continue
		case errors.Is(err, io.EOF):
			ch.printf("\n")
			return nil
		case err != nil:
			return err
		}
		aborted = false
		if strings.TrimSpace(text) == "" {
			continue
		}
		ch.line.AppendHistory(text)
		if strings.HasPrefix(text, "/") && !strings.HasPrefix(text, "/think") && !strings.HasPrefix(text, "/tool") {
			if quit := ch.command(text); quit {
				return nil
			}
			continue
		}
		if leave := ch.turn(text, sigs); leave {
			return nil
		}
	}
}

// turn runs one prompt, with interrupts cancelling it. It reports whether the user
// asked to leave (a second interrupt).
func (ch *chat) turn(text string, sigs chan os.Signal) (leave bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type answer struct {
		r   *client.PromptResult
		err error
	}
	done := make(chan answer, 1)
	attachments := ch.attachments
	ch.attachments = nil
	go func() {
		r, err := ch.c.Prompt(ctx, ch.sid, text, attachments, ch.render)
		done <- answer{r, err}
	}()
	// Lines typed while the turn streams: /cancel cancels it.
	watchCtx, stopWatching := context.WithCancel(ctx)
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		ch.watchTyped(watchCtx, func(line string) {
			switch line {
			case "":
			case "/cancel":
				ch.endLine()
				ch.printf("%scancelling…%s\n", faint, reset)
				go ch.c.Cancel(ctx, ch.sid)
			default: // typed ahead: it runs when this turn is over
				ch.typedAhead = append(ch.typedAhead, line)
				ch.endLine()
				ch.printf("%s(queued after this turn; /cancel or Ctrl-C stops the turn)%s\n", faint, reset)
			}
		})
	}()
	defer func() {
		stopWatching()
		<-watching // no read may outlive the turn: the next prompt's input is liner's
	}()
	interrupts := 0
	for {
		select {
		case a := <-done:
			ch.endLine()
			switch {
			case a.err != nil:
				ch.printf("error: %v\n", a.err)
			case a.r.StopReason == client.StopEndTurn:
			case a.r.StopReason == client.StopError:
				ch.printf("%s[error: %s]%s\n", bold, a.r.Text, reset)
			default:
				ch.printf("%s[%s]%s\n", faint, a.r.StopReason, reset)
			}
			return leave
		case <-sigs:
			interrupts++
			if interrupts > 1 {
				return true // leaving closes the connection; the daemon ends nothing else
			}
			ch.endLine()
			ch.printf("%s^C cancelling… (Ctrl-C again to leave)%s\n", faint, reset)
			go ch.c.Cancel(ctx, ch.sid)
		case <-ch.c.Done():
			ch.printf("the daemon closed the connection\n")
			return true
		}
	}
}

// command runs one slash command; it reports whether to leave.
func (ch *chat) command(text string) (quit bool) {
	name, arg, _ := strings.Cut(strings.TrimSpace(text), " ")
	arg = strings.TrimSpace(arg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	switch name {
	case "/quit", "/exit":
		return true
	case "/help":
		ch.printf("%s\n", chatHelp)
	case "/cancel":
		ok, err := ch.c.Cancel(ctx, ch.sid)
		switch {
		case err != nil:
			ch.printf("error: %v\n", err)
		case ok:
			ch.printf("cancelled the running turn\n")
		default:
			ch.printf("no turn is running\n")
		}
	case "/attach":
		if arg == "" {
			ch.printf("usage: /attach FILE\n")
			break
		}
		entry, err := ch.c.Upload(ctx, ch.sid, arg, ch.progress(filepath.Base(arg)))
		ch.endLine()
		if err != nil {
			ch.printf("error: %v\n", err)
			break
		}
		ch.attachments = append(ch.attachments, *entry)
		ch.printf("attached %s (%d bytes); it goes with your next prompt\n", entry.WorkspacePath, entry.SizeBytes)
	case "/sessions":
		list, _, err := ch.c.ListSessions(ctx, 100, "")
		if err != nil {
			ch.printf("error: %v\n", err)
			break
		}
		ch.term.Lock()
		tw := tabwriter.NewWriter(ch.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  SESSION\tAGENT\tSTATE\tMESSAGES\tLAST ACTIVITY")
		for _, s := range list {
			mark := " "
			if s.SessionID == ch.sid {
				mark = "*"
			}
			fmt.Fprintf(tw, "%s %s\t%s\t%s\t%d\t%s\n", mark, s.SessionID, s.AgentAlias, s.State, s.MessageCount, s.LastActivity)
		}
		tw.Flush()
		ch.term.Unlock()
	case "/resume":
		if arg == "" {
			ch.printf("usage: /resume ID\n")
			break
		}
		after := ch.c.LastSeq(arg)
		res, err := ch.c.Attach(ctx, arg, after, ch.render)
		ch.endLine()
		if err != nil {
			ch.printf("error: %v\n", err)
			break
		}
		ch.sid = arg
		ch.attachments = nil
		ch.printf("%sresumed session %s: replayed %d updates after seq %d (last seq %d)%s\n", faint, arg, res.Replayed, after, res.LastSeq, reset)
	default:
		ch.printf("unknown command %s; /help lists them\n", name)
	}
	return false
}

// render shows one update on the terminal.
func (ch *chat) render(u client.Update) {
	switch u.Type {
	case client.AgentMessageChunk:
		ch.write(u.Text)
	case client.AgentThoughtChunk:
		ch.write(faint + u.Text + reset)
	case client.ToolCall:
		ch.endLine()
		ch.printf("%s⚙ %s %s%s\n", faint, u.Name, clip(string(u.RawInput), 100), reset)
	case client.ToolResult:
		ch.endLine()
		mark := "→"
		if u.IsError {
			mark = "✗"
		}
		ch.printf("%s  %s %s%s\n", faint, mark, clip(u.RawOutput, 100), reset)
	case client.ApprovalRequest:
		ch.approve(u)
	case client.RequestResolved:
		ch.term.Lock()
		mine := ch.answered[u.RequestID]
		delete(ch.answered, u.RequestID)
		ch.term.Unlock()
		if mine {
			return
		}
		ch.endLine()
		ch.printf("%s(request %s was answered by another client)%s\n", faint, u.RequestID, reset)
	case client.HistoryTrimmed:
		ch.endLine()
		ch.printf("%s(history trimmed: %d older messages leave the model's context, %d kept)%s\n", faint, u.Dropped, u.Kept, reset)
	}
}

// approve asks the user about one approval request and answers it.
func (ch *chat) approve(u client.Update) {
	ch.term.Lock()
	defer ch.term.Unlock()
	ch.endLineLocked()
	fmt.Fprintf(ch.out, "%sApprove %s %s?%s\n", bold, u.Name, clip(string(u.RawInput), 200), reset)
	decision := ""
	for decision == "" {
		a, err := ch.line.Prompt("[y] allow once, [a] always, [n] reject: ")
		if err != nil { // Ctrl-C or Ctrl-D: no
			decision = client.RejectOnce
			break
		}
		switch strings.ToLower(strings.TrimSpace(a)) {
		case "y", "yes":
			decision = client.AllowOnce
		case "a", "always":
			decision = client.AllowAlways
		case "n", "no":
			decision = client.RejectOnce
		}
	}
	if ch.answered == nil {
		ch.answered = make(map[string]bool)
	}
	ch.answered[u.RequestID] = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ok, err := ch.c.Approve(ctx, u.SessionID, u.RequestID, decision)
	switch {
	case err != nil:
		fmt.Fprintf(ch.out, "error: %v\n", err)
	case !ok:
		fmt.Fprintf(ch.out, "%s(too late: the request was already answered or expired)%s\n", faint, reset)
	}
}

// elicit answers elicitation/create: a numbered menu when there are choices.
func (ch *chat) elicit(ctx context.Context, e client.Elicitation) (client.ElicitationResult, error) {
	choices := schemaChoices(e.RequestedSchema)
	ch.term.Lock()
	defer ch.term.Unlock()
	ch.endLineLocked()
	fmt.Fprintf(ch.out, "%s%s%s\n", bold, e.Message, reset)
	for i, c := range choices {
		fmt.Fprintf(ch.out, "  %d) %s\n", i+1, c)
	}
	for {
		prompt := "answer (empty to decline): "
		if len(choices) > 0 {
			prompt = fmt.Sprintf("choose 1-%d (empty to decline): ", len(choices))
		}
		a, err := ch.line.Prompt(prompt)
		if err != nil {
			return client.ElicitationResult{Action: "cancel"}, nil
		}
		a = strings.TrimSpace(a)
		if a == "" {
			return client.ElicitationResult{Action: "decline"}, nil
		}
		if len(choices) == 0 {
			return client.ElicitationResult{Action: "accept", Content: map[string]any{"answer": a}}, nil
		}
		var n int
		if _, err := fmt.Sscanf(a, "%d", &n); err == nil && n >= 1 && n <= len(choices) {
			return client.ElicitationResult{Action: "accept", Content: map[string]any{"answer": choices[n-1]}}, nil
		}
	}
}

// progress draws an upload's progress bar on one line.
func (ch *chat) progress(name string) func(done, total int64) {
	return func(done, total int64) {
		const width = 30
		filled := width
		pct := 100
		if total > 0 {
			filled = int(done * width / total)
			pct = int(done * 100 / total)
		}
		ch.term.Lock()
		fmt.Fprintf(ch.out, "\r%s [%s%s] %3d%% %s/%s", name, strings.Repeat("#", filled), strings.Repeat("-", width-filled), pct, byteSize(done), byteSize(total))
		ch.midLine = true
		ch.term.Unlock()
	}
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func (ch *chat) write(s string) {
	if s == "" {
		return
	}
	ch.term.Lock()
	defer ch.term.Unlock()
	io.WriteString(ch.out, s)
	ch.midLine = !strings.HasSuffix(s, "\n") && !strings.HasSuffix(s, "\n"+reset)
}

func (ch *chat) printf(format string, args ...any) {
	ch.term.Lock()
	defer ch.term.Unlock()
	fmt.Fprintf(ch.out, format, args...)
	ch.midLine = false
}

// endLine ends a line the stream left open.
func (ch *chat) endLine() {
	ch.term.Lock()
	defer ch.term.Unlock()
	ch.endLineLocked()
}

func (ch *chat) endLineLocked() {
	if ch.midLine {
		io.WriteString(ch.out, "\n")
		ch.midLine = false
	}
}

// clip shortens s to one line of at most n runes.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// schemaChoices returns the enum of the "answer" property of an elicitation schema.
func schemaChoices(schema jsontext.Value) []string {
	var s struct {
		Properties struct {
			Answer struct {
				Enum []string `json:"enum"`
			} `json:"answer"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	return s.Properties.Answer.Enum
}
