package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/daemon"
)

func daemonCmd() *cobra.Command {
	var opts daemon.Options
	var level string
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Serve JSON-RPC on the local endpoint",
		Long: `Serve JSON-RPC 2.0 (NDJSON) on the local endpoint: ZEROCLAW_SOCKET, or
<data dir>/daemon.sock. The data dir is ZEROCLAW_DATA_DIR, or <config dir>/data; the
config dir is --config-dir, ZEROCLAW_CONFIG_DIR, or ~/.zeroclaw. Runs until SIGINT or
SIGTERM; with --ephemeral, also exits one second after the last client leaves.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var lv slog.Level
			if err := lv.UnmarshalText([]byte(level)); err != nil {
				return fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
			}
			opts.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: lv}))
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() { // a second signal falls through to the default action: exit now
				<-ctx.Done()
				stop()
			}()
			return daemon.Run(ctx, opts)
		},
	}
	cmd.Flags().StringVar(&opts.ConfigDir, "config-dir", "", "config directory (default $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")
	cmd.Flags().BoolVar(&opts.Ephemeral, "ephemeral", false, "exit 1 s after the last client disconnects")
	cmd.Flags().StringVar(&level, "log-level", "info", "log level: "+strings.Join([]string{"debug", "info", "warn", "error"}, ", "))
	return cmd
}
