package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// memoryCmd is `zeroclaw memory`: the agents' memories of the caller
// (docs/protocol.md, "Memory"), every owner's for an admin.
func memoryCmd() *cobra.Command {
	var configDir, agent string
	var remote remoteFlags
	cmd := &cobra.Command{
		Use:   "memory list|search QUERY|add TEXT|forget ID",
		Short: "List, search, add and forget what an agent remembers",
		Example: `  zeroclaw memory add "The staging host is build-3" --key staging
  zeroclaw memory list
  zeroclaw memory search "staging host"
  zeroclaw memory forget mem_…`,
	}
	run := func(fn func(ctx context.Context, c *client.Client, out io.Writer) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			return withClient(configDir, remote, func(ctx context.Context, c *client.Client) error {
				return fn(ctx, c, cmd.OutOrStdout())
			})
		}
	}
	var limit int
	list := &cobra.Command{
		Use: "list", Short: "List the memories, newest first", Args: cobra.NoArgs,
		RunE: run(func(ctx context.Context, c *client.Client, out io.Writer) error {
			ms, _, err := c.MemoryList(ctx, client.MemoryQuery{AgentAlias: agent, Limit: limit})
			if err != nil {
				return err
			}
			return printMemories(out, ms, false)
		}),
	}
	list.Flags().IntVar(&limit, "limit", 50, "how many at most (1-200)")
	search := &cobra.Command{
		Use: "search QUERY", Short: "The memories that best match QUERY, with their scores", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(func(ctx context.Context, c *client.Client, out io.Writer) error {
				ms, _, err := c.MemoryList(ctx, client.MemoryQuery{AgentAlias: agent, Query: args[0], Limit: limit})
				if err != nil {
					return err
				}
				return printMemories(out, ms, true)
			})(cmd, args)
		},
	}
	search.Flags().IntVar(&limit, "limit", 10, "how many at most (1-200)")
	var key string
	var tags []string
	add := &cobra.Command{
		Use: "add TEXT", Short: "Remember TEXT (with --key, replacing the memory of that key)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(func(ctx context.Context, c *client.Client, out io.Writer) error {
				id, err := c.MemoryPut(ctx, client.NewMemory{AgentAlias: agent, Content: args[0], Key: key, Tags: tags})
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(out, id)
				return err
			})(cmd, args)
		},
	}
	add.Flags().StringVar(&key, "key", "", "a name for the memory: adding under it again replaces it")
	add.Flags().StringSliceVar(&tags, "tag", nil, "a tag (repeat for more)")
	forget := &cobra.Command{
		Use: "forget ID", Short: "Forget the memory ID", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(func(ctx context.Context, c *client.Client, out io.Writer) error {
				if err := c.MemoryDelete(ctx, args[0]); err != nil {
					return err
				}
				_, err := fmt.Fprintln(out, "forgot", args[0])
				return err
			})(cmd, args)
		},
	}
	cmd.AddCommand(list, search, add, forget)
	cmd.PersistentFlags().StringVar(&agent, "agent", "default", "the agent whose memories these are")
	cmd.PersistentFlags().StringVar(&configDir, "config-dir", "", "config directory of the daemon (default $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")
	remote.add(cmd.PersistentFlags())
	return cmd
}

// printMemories prints one memory per line: id, key (or -), score when scored,
// tags, and the content on one line, cut to 100 characters.
func printMemories(out io.Writer, ms []client.Memory, scored bool) error {
	if len(ms) == 0 {
		_, err := fmt.Fprintln(out, "no memories")
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, m := range ms {
		key := m.Key
		if key == "" {
			key = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t", m.ID, key)
		if scored && m.Score != nil {
			fmt.Fprintf(tw, "%.2f\t", *m.Score)
		}
		fmt.Fprintf(tw, "%s\t%s\n", strings.Join(m.Tags, ","), oneLine(m.Content, 100))
	}
	return tw.Flush()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
