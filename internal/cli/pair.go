package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

func pairCmd() *cobra.Command {
	var configDir, user, revoke string
	var list bool
	cmd := &cobra.Command{
		Use:   "pair [--user NAME] | --list | --revoke USER",
		Short: "Mint, list or revoke pairing tokens for remote (WSS) clients",
		Long: `Ask the running daemon for a pairing token: a WSS client presents it as authToken in
initialize. Without --user the token acts as the operator; with --user NAME it acts as
[users.NAME]. The token is printed once, as the last line of output; the daemon keeps
only its hash. --list shows who holds tokens; --revoke USER removes every token of
USER and closes the connections they opened.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			switch {
			case list && (user != "" || revoke != ""), user != "" && revoke != "":
				return fmt.Errorf("--user, --list and --revoke do not combine")
			case list:
				return withClient(configDir, remoteFlags{}, func(ctx context.Context, c *client.Client) error {
					var res struct {
						Pairings []struct {
							User      *string `json:"user"`
							CreatedAt string  `json:"createdAt"`
						} `json:"pairings"`
					}
					if err := c.Call(ctx, "pairing/list", map[string]any{}, &res); err != nil {
						return err
					}
					if len(res.Pairings) == 0 {
						_, err := fmt.Fprintln(out, "no pairing tokens")
						return err
					}
					tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "USER\tCREATED")
					for _, p := range res.Pairings {
						fmt.Fprintf(tw, "%s\t%s\n", userLabel(p.User), p.CreatedAt)
					}
					return tw.Flush()
				})
			case revoke != "":
				return withClient(configDir, remoteFlags{}, func(ctx context.Context, c *client.Client) error {
					var res struct {
						Revoked bool `json:"revoked"`
					}
					if err := c.Call(ctx, "pairing/revoke", map[string]any{"user": revoke}, &res); err != nil {
						return err
					}
					msg := "revoked the pairing tokens of " + revoke
					if !res.Revoked {
						msg = revoke + " had no pairing tokens"
					}
					_, err := fmt.Fprintln(out, msg)
					return err
				})
			}
			return withClient(configDir, remoteFlags{}, func(ctx context.Context, c *client.Client) error {
				params := map[string]any{}
				if user != "" {
					params["user"] = user
				}
				var res struct {
					Token       string  `json:"token"`
					User        *string `json:"user"`
					Fingerprint string  `json:"fingerprint"`
				}
				if err := c.Call(ctx, "pairing/create", params, &res); err != nil {
					return err
				}
				fmt.Fprintf(out, "Pairing token for %s. It is shown only this once; the daemon keeps only its hash.\n", userLabel(res.User))
				if res.Fingerprint != "" {
					fmt.Fprintf(out, "Server certificate fingerprint: %s\n", res.Fingerprint)
				}
				_, err := fmt.Fprintln(out, res.Token) // the last line, for scripts: zeroclaw pair | tail -n1
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&configDir, "config-dir", "", "config directory of the daemon (default $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")
	f.StringVar(&user, "user", "", "mint a token acting as [users.NAME] (default: the operator)")
	f.BoolVar(&list, "list", false, "list who holds pairing tokens")
	f.StringVar(&revoke, "revoke", "", "revoke every token of USER")
	return cmd
}

func userLabel(user *string) string {
	if user == nil {
		return "the operator"
	}
	return "user " + *user
}
