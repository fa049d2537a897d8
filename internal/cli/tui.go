package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
)

// TUIConfig is what the command line tells the full-screen client.
type TUIConfig struct {
	Agent, Session string
	URL            string // a remote daemon's wss:// endpoint; "" is the local one
	ConfigDir      string // --config-dir, for a daemon the client starts
	ClientOptions  []client.Option
	HistoryFile    string // the input history kept between runs ("" keeps none)
	// Daemon is the zeroclaw binary an ephemeral daemon is started from: the one
	// installed beside this program, or "" (this program, which has every command).
	Daemon string
}

// TUIRunner runs the full-screen client in this process (zeroclaw-tui supplies one).
type TUIRunner func(TUIConfig) error

// tuiProgram is the program the full-screen client is, installed beside zeroclaw.
const tuiProgram = "zeroclaw-tui"

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

zeroclaw with no subcommand runs this in a terminal; without one it prints help. The
client is the zeroclaw-tui program, found beside zeroclaw or on PATH (go install
./cmd/zeroclaw ./cmd/zeroclaw-tui installs both); it takes every command zeroclaw takes.`

func tuiCmd(run TUIRunner) *cobra.Command {
	var o tuiOptions
	cmd := &cobra.Command{
		Use:   "tui [--agent A] [--session ID]",
		Short: "The full-screen terminal client (also zeroclaw with no subcommand, in a terminal)",
		Long:  tuiLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runTUI(o, run) },
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

// runTUI runs the full-screen client: in this process when it has the UI (run), else
// by handing the terminal and the same command line to zeroclaw-tui.
func runTUI(o tuiOptions, run TUIRunner) error {
	if run == nil {
		path, err := findTUI()
		if err != nil {
			return err
		}
		return handOver(path, os.Args[1:])
	}
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
	return run(TUIConfig{
		Agent: o.agent, Session: o.session, URL: o.remote.url, ConfigDir: o.configDir,
		ClientOptions: o.remote.options(), HistoryFile: history, Daemon: beside("zeroclaw"),
	})
}

// findTUI finds zeroclaw-tui: beside this program (what `go install ./cmd/...`
// does), else on PATH.
func findTUI() (string, error) {
	if p := beside(tuiProgram); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath(tuiProgram); err == nil {
		return p, nil
	}
	self, _ := os.Executable()
	return "", fmt.Errorf("the full-screen client is the %s program, and it is neither beside %s nor on PATH: "+
		"install it with `go install ./cmd/zeroclaw-tui` (or run `go run ./cmd/zeroclaw-tui`); zeroclaw chat is the line client",
		tuiProgram, self)
}

// beside is the path of the program name in this program's directory (symbolic links
// resolved), or "" when there is none.
func beside(name string) string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	p := filepath.Join(filepath.Dir(self), name)
	if st, err := os.Stat(p); err != nil || st.IsDir() || p == self {
		return ""
	}
	return p
}

// interactiveTerminal reports whether stdin and stdout are both a terminal.
func interactiveTerminal() bool {
	return term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stdout.Fd()))
}
