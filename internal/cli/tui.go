package cli

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tui"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/version"
)

type tuiOptions struct {
	configDir, agent, session string
	remote                    remoteFlags
}

const tuiLong = `A full-screen client of the daemon: the transcript with markdown and highlighted
code, tool calls as cards, approvals as an overlay, questions as forms, and a status
line (session title, agent, model, mode, context used, connection). When no daemon
answers on the local endpoint it starts an ephemeral one, as zeroclaw chat does, and
it reconnects when the connection drops.

Keys: Enter sends, Alt-Enter inserts a new line, Up/Down walk the history, Tab
completes a command, Ctrl-C cancels the running turn (twice quits), PgUp/PgDn and the
mouse wheel scroll, Ctrl-O unfolds tool output and thoughts. Approvals: y or Enter
allows once, a always (this tool, this session), n or Esc rejects.

Commands: /sessions (Enter resumes, r renames, d deletes, f forks), /new, /model,
/mode, /attach PATH, /compact [INSTRUCTIONS], /title TEXT, /help, /quit. A / line that
is none of these is sent as the prompt (so /tool and /think reach the echo provider).

zeroclaw with no subcommand runs this in a terminal; without one it prints help.`

func tuiCmd() *cobra.Command {
	var o tuiOptions
	cmd := &cobra.Command{
		Use:   "tui [--agent A] [--session ID]",
		Short: "The full-screen terminal client (also zeroclaw with no subcommand, in a terminal)",
		Long:  tuiLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runTUI(o) },
	}
	o.addFlags(cmd)
	return cmd
}

func (o *tuiOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.configDir, "config-dir", "", "config directory of the daemon (default $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")
	f.StringVar(&o.agent, "agent", "default", "agent alias of a new session")
	f.StringVar(&o.session, "session", "", "resume this session id (or create it)")
	o.remote.add(f)
}

func runTUI(o tuiOptions) error {
	if !interactiveTerminal() {
		return errors.New("zeroclaw tui needs a terminal; zeroclaw chat reads a prompt from stdin")
	}
	dirs, err := endpoint.ResolveDirs(o.configDir, nil)
	if err != nil {
		return err
	}
	history := ""
	if dirs.Ensure() == nil {
		history = filepath.Join(dirs.DataDir, "tui_history")
	}
	return tui.Run(tui.RunOptions{
		Agent: o.agent, Session: o.session, URL: o.remote.url, ConfigDir: o.configDir,
		ClientOptions: o.remote.options(), HistoryFile: history,
		ClientName: "zeroclaw-tui", ClientVer: version.Version,
	})
}

// interactiveTerminal reports whether stdin and stdout are both a terminal.
func interactiveTerminal() bool {
	return term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stdout.Fd()))
}
