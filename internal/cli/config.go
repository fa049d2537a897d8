package cli

import (
	"context"
	"encoding/json/jsontext"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

func configCmd() *cobra.Command {
	var configDir string
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Read and change the running daemon's configuration",
		Long: `Read and change the configuration of the daemon serving on the local endpoint.
Properties are dotted paths with map keys inline: rpc.max_local_connections,
agents.default.model, users.example.uid. Secrets are shown as "***".`,
	}
	cmd.PersistentFlags().StringVar(&configDir, "config-dir", "", "config directory of the daemon (default $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")

	get := &cobra.Command{
		Use:   "get [PROP]",
		Short: "Print one property as JSON, or the whole configuration",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(configDir, remoteFlags{}, func(ctx context.Context, c *client.Client) error {
				if len(args) == 0 {
					var all jsontext.Value
					if err := c.Call(ctx, "config/get", map[string]any{}, &all); err != nil {
						return err
					}
					return printJSON(cmd, all, true)
				}
				var res struct {
					Value jsontext.Value `json:"value"`
				}
				if err := c.Call(ctx, "config/get", map[string]any{"prop": args[0]}, &res); err != nil {
					return err
				}
				return printJSON(cmd, res.Value, false)
			})
		},
	}
	set := &cobra.Command{
		Use:   "set PROP VALUE",
		Short: "Set one property",
		Long: `Set one property. VALUE is JSON (7, true, "text", ["a","b"]); anything that is not
valid JSON is taken as a string, so  zeroclaw config set agents.default.model gpt-4o
works without quotes.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			value := jsonArg(args[1])
			return withClient(configDir, remoteFlags{}, func(ctx context.Context, c *client.Client) error {
				if err := c.Call(ctx, "config/set", map[string]any{"prop": args[0], "value": value}, nil); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "set %s\n", args[0])
				return err
			})
		},
	}
	cmd.AddCommand(get, set)
	return cmd
}

// jsonArg is arg as JSON when it parses as JSON, else arg as a JSON string.
func jsonArg(arg string) jsontext.Value {
	if v := jsontext.Value(arg); v.IsValid() {
		return v
	}
	q, _ := jsontext.AppendQuote(nil, arg)
	return q
}

func printJSON(cmd *cobra.Command, v jsontext.Value, indent bool) error {
	v = v.Clone()
	if indent {
		if err := v.Indent(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n", v)
	return err
}
