package cli

import (
	"context"
	"encoding/json/jsontext"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

func statusCmd() *cobra.Command {
	var configDir string
	var asJSON bool
	var remote remoteFlags
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "Show the running daemon: version, endpoint, uptime, connections, sessions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			return withClient(configDir, remote, func(ctx context.Context, c *client.Client) error {
				if asJSON {
					var raw jsontext.Value
					if err := c.Call(ctx, "status", nil, &raw); err != nil {
						return err
					}
					raw.Indent(jsontext.WithIndent("  "))
					_, err := fmt.Fprintf(out, "%s\n", raw)
					return err
				}
				st, err := c.Status(ctx)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "version:\t%s (protocol %d)\n", st.ServerVersion, st.ProtocolVersion)
				fmt.Fprintf(tw, "endpoint:\t%s\n", st.Endpoint)
				fmt.Fprintf(tw, "pid:\t%d\n", st.PID)
				fmt.Fprintf(tw, "data dir:\t%s\n", st.DataDir)
				fmt.Fprintf(tw, "uptime:\t%s\n", (time.Duration(st.UptimeMs) * time.Millisecond).Round(time.Second))
				fmt.Fprintf(tw, "connections:\t%d\n", st.Connections)
				fmt.Fprintf(tw, "sessions:\t%d live\n", st.ActiveSessions)
				for _, s := range st.Sessions {
					fmt.Fprintf(tw, "\t%s  %s  %s\n", s.SessionID, s.AgentAlias, s.State)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&configDir, "config-dir", "", "config directory of the daemon (default $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the raw status result as JSON")
	remote.add(cmd.Flags())
	return cmd
}
