package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/peterh/liner"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

const (
	faint = "\x1b[2m"
	bold  = "\x1b[1m"
	reset = "\x1b[0m"
)

const chatHelp = `Type a prompt and press Enter. Ctrl-C cancels the running turn; twice leaves.
While a turn streams, Enter steers it: the line joins the turn before its next model
call. A line ending in Tab (Tab, then Enter) waits for the next prompt instead.
  /steer TEXT    join TEXT to the session's running turn (another client's too), else start one
  /queue TEXT    while a turn streams: run TEXT as the next prompt
  /attach FILE   upload FILE into the session's workspace; it goes with the next prompt
  /cancel        cancel the session's running turn
  /sessions      list your sessions
  /resume ID     switch to session ID, replaying the updates this client missed
` + controlsHelp + `
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
		if isCommand(text) || strings.HasPrefix(text, "/steer ") {
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
	var turnID atomic.Value // string: the running turn's, from its updates
	go func() {
		r, err := ch.c.Prompt(ctx, ch.sid, text, attachments, func(u client.Update) {
			if u.TurnID != "" {
				turnID.Store(u.TurnID)
			}
			ch.render(u)
		})
		done <- answer{r, err}
	}()
	// Steers of lines typed meanwhile name the turn: one that ended before it took
	// the line is refused, and the line runs as the next prompt, through this loop.
	steerCtx, stopSteering := context.WithCancel(context.Background())
	var steering sync.WaitGroup
	var requeueMu sync.Mutex
	var requeued []string
	// Lines typed while the turn streams: /cancel cancels it.
	watchCtx, stopWatching := context.WithCancel(ctx)
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		ch.watchTyped(watchCtx, func(typed string) {
			line := strings.TrimSpace(typed)
			queued, isQueue := strings.CutPrefix(line, "/queue ")
			switch {
			case line == "":
			case line == "/cancel":
				ch.endLine()
				ch.printf("%scancelling…%s\n", faint, reset)
				go ch.c.Cancel(ctx, ch.sid)
			case isQueue || strings.HasSuffix(strings.TrimRight(typed, " "), "\t") || isCommand(line) ||
				turnID.Load() == nil: // after the turn (one not begun yet has nothing to steer)
				if !isQueue {
					queued = line
				}
				if queued = strings.TrimSpace(queued); queued == "" {
					break
				}
				ch.typedAhead = append(ch.typedAhead, queued)
				ch.endLine()
				ch.printf("%s(queued after this turn; /cancel or Ctrl-C stops the turn)%s\n", faint, reset)
			default: // steers the running turn
				text := strings.TrimPrefix(line, "/steer ")
				id := turnID.Load().(string)
				ch.endLine()
				ch.printf("%s(steering the turn: it takes the line before its next model call)%s\n", faint, reset)
				steering.Add(1)
				go func() {
					defer steering.Done()
					if ch.steer(steerCtx, text, id) {
						requeueMu.Lock()
						requeued = append(requeued, text)
						requeueMu.Unlock()
					}
				}()
			}
		})
	}()
	defer func() {
		stopWatching()
		<-watching // no read may outlive the turn: the next prompt's input is liner's
		if leave {
			stopSteering()
		}
		// The daemon answers every steer by the turn's end: joined, or refused.
		steering.Wait()
		stopSteering()
		ch.typedAhead = append(ch.typedAhead, requeued...)
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
			case a.r.Restarted && a.r.StopReason == client.StopCancelled:
				// the restart interrupted it: the reconnect line said so
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

// isCommand reports whether a line is one of chat's commands, not a prompt: a line
// starting with "/" but for the echo provider's "/think" and "/tool" lines (and
// "/steer TEXT", whose TEXT steers the running turn).
func isCommand(line string) bool {
	return strings.HasPrefix(line, "/") && !strings.HasPrefix(line, "/think") && !strings.HasPrefix(line, "/tool") &&
		!strings.HasPrefix(line, "/steer ")
}

// steer sends text to the session's running turn (or, with no expectedTurnID,
// starts one when none runs) and says how it went. It reports whether the turn it
// named had ended before it took the text: the caller runs it as the next prompt.
func (ch *chat) steer(ctx context.Context, text, expectedTurnID string) (requeue bool) {
	r, err := ch.c.Steer(ctx, ch.sid, text, expectedTurnID)
	ch.endLine()
	var e *client.Error
	switch {
	case errors.As(err, &e) && expectedTurnID != "" && e.Code == client.CodeInvalidParams && strings.Contains(string(e.Data), "stale_turn"):
		ch.printf("%s(the turn had ended: the line runs as the next prompt)%s\n", faint, reset)
		return true
	case err != nil:
		ch.printf("error: %v\n", err)
	case r.Outcome == client.SteerInjected:
		ch.printf("%s(joined turn %s)%s\n", faint, r.TurnID, reset)
	default:
		ch.printf("%s(no turn was running: started turn %s)%s\n", faint, r.TurnID, reset)
	}
	return false
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
	case "/steer":
		if arg == "" {
			ch.printf("usage: /steer TEXT\n")
			break
		}
		ch.steer(ctx, arg, "")
	case "/queue":
		ch.printf("no turn is running: type the prompt itself\n")
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
		if !ch.control(ctx, name, arg) {
			ch.printf("unknown command %s; /help lists them\n", name)
		}
	}
	return false
}
