package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/rpc"
)

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the server version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), rpc.ServerVersion)
			return err
		},
	}
}
