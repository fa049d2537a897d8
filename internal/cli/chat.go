package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/chat"
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
History is kept in <data dir>/chat_history. When the connection drops, chat
reconnects (starting its ephemeral daemon again if it had started one), and a turn
that was running goes on; one line says whether the daemon restarted meanwhile
("daemon restarted; session recovered, last turn interrupted").

Without a terminal on stdin: reads one prompt (all of stdin), prints the reply and
exits with a status that says how the turn ended: 0 end_turn, 2 error, 3 cancelled,
4 max_steps, 1 when chat could not run (130 after a second interrupt). Approval
requests are rejected (there is nobody to ask); an interrupt cancels the turn.
--json prints every session/update as one JSON line, then the prompt's result.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			code, err := chat.Run(chat.Options{
				ConfigDir: o.configDir, Agent: o.agent, Session: o.session, JSON: o.json,
				URL: o.remote.url, ClientOptions: o.remote.options(),
				Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
			})
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
