package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// mcpCmd is `zeroclaw mcp`: the daemon's MCP servers with their state and tool
// count; `zeroclaw mcp tools [--agent A]` lists an agent's tools.
func mcpCmd() *cobra.Command {
	var configDir string
	var remote remoteFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "List the daemon's MCP servers: state, tools, pid or error",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			return withClient(configDir, remote, func(ctx context.Context, c *client.Client) error {
				servers, err := c.MCPStatus(ctx)
				if err != nil {
					return err
				}
				if len(servers) == 0 {
					fmt.Fprintln(out, "no MCP servers configured ([mcp.servers.<name>] in config.toml)")
					return nil
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tTRANSPORT\tSTATE\tTOOLS\tDETAIL")
				for _, s := range servers {
					detail := s.Error
					if s.PID != 0 {
						detail = fmt.Sprintf("pid %d", s.PID)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.Name, s.Transport, s.State, s.Tools, detail)
				}
				return tw.Flush()
			})
		},
	}
	cmd.PersistentFlags().StringVar(&configDir, "config-dir", "", "config directory of the daemon (default $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")
	remote.add(cmd.PersistentFlags())

	var agent string
	tools := &cobra.Command{
		Use:   "tools [--agent ALIAS]",
		Short: "List an agent's tools: built-in and from its MCP servers (which start if they never ran)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			return withClient(configDir, remote, func(ctx context.Context, c *client.Client) error {
				list, err := c.ListTools(ctx, "", agent)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSOURCE\tACCESS\tDESCRIPTION")
				for _, t := range list {
					source, access := t.Source, "changes"
					if t.Server != "" {
						source += ":" + t.Server
					}
					if t.ReadOnly {
						access = "read-only"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, source, access, firstLine(t.Description, 80))
				}
				return tw.Flush()
			})
		},
	}
	tools.Flags().StringVar(&agent, "agent", "default", "the agent whose tools to list")
	cmd.AddCommand(tools)
	return cmd
}

// firstLine is s up to its first newline, cut to n characters.
func firstLine(s string, n int) string {
	for i, r := range s {
		if r == '\n' {
			s = s[:i]
			break
		}
	}
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
