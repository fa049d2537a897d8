package cli

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/acp"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/rpc"
)

func acpCmd() *cobra.Command {
	var configDir, agent string
	cmd := &cobra.Command{
		Use:   "acp [--agent ALIAS]",
		Short: "Serve the Agent Client Protocol (v1) on stdin/stdout, for editors (Zed, JetBrains, Neovim, Emacs)",
		Long: "zeroclaw acp is what an editor starts as its agent: ACP v1 frames on stdin and stdout,\n" +
			"its log on stderr. Sessions are the daemon's; when no daemon answers, an ephemeral one\n" +
			"is started (it leaves about a second after the editor does).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dirs, err := endpoint.ResolveDirs(configDir, nil)
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			b := acp.New(acp.Options{
				Agent:     agent,
				Endpoint:  endpoint.Address(dirs, nil),
				AutoStart: &client.AutoStart{ConfigDir: configDir},
				Version:   rpc.ServerVersion,
				Logger:    log,
			})
			return b.Serve(cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&configDir, "config-dir", "", "config directory of the daemon (default $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")
	cmd.Flags().StringVar(&agent, "agent", "default", "agent alias of the sessions it opens")
	return cmd
}
