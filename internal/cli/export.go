package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

func exportCmd() *cobra.Command {
	var configDir, format string
	var remote remoteFlags
	cmd := &cobra.Command{
		Use:   "export ID [--format markdown|jsonl]",
		Short: "Print a session's transcript, with its tool calls and results, as Markdown or JSON lines",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != client.ExportMarkdown && format != client.ExportJSONL {
				return fmt.Errorf("--format %q: want markdown or jsonl", format)
			}
			return withClient(configDir, remote, func(ctx context.Context, c *client.Client) error {
				content, err := c.Export(ctx, args[0], format)
				if err != nil {
					return err
				}
				_, err = io.WriteString(cmd.OutOrStdout(), content)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&configDir, "config-dir", "", "config directory of the daemon (default $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")
	cmd.Flags().StringVar(&format, "format", client.ExportMarkdown, "markdown or jsonl")
	remote.add(cmd.Flags())
	return cmd
}
