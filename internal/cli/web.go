package cli

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/web"
)

func webCmd() *cobra.Command {
	var cfg web.Config
	cmd := &cobra.Command{
		Use:   "web [--listen 127.0.0.1:7781] [--open]",
		Short: "Serve the web client: the daemon in a browser tab",
		Long: `Serve the web client on --listen and bridge each browser tab to the daemon, over
a local connection of the tab's own. Like chat, it starts an ephemeral daemon when none
answers and reconnects when the connection drops; it stops when interrupted.

On a loopback address it prints http://127.0.0.1:7781/#token=<random>: open that link
(--open does), and the page trades the token for a cookie. On any other address it
serves https (--cert/--key, or a self-signed certificate in the data dir), and a
person logs in with a pairing token (zeroclaw pair [--user NAME]), whose principal
the tab's connection then has.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg.Stdout = cmd.OutOrStdout()
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			return web.Run(ctx, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", web.DefaultListen, "address to serve on (off loopback: TLS and pairing tokens)")
	f.BoolVar(&cfg.Open, "open", false, "open the login link in the desktop's browser")
	f.StringVar(&cfg.ConfigDir, "config-dir", "", "config directory of the daemon (default $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")
	f.StringVar(&cfg.Cert, "cert", "", "TLS certificate (PEM) off loopback")
	f.StringVar(&cfg.Key, "key", "", "TLS key (PEM) off loopback")
	return cmd
}
