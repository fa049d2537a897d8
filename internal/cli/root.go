// Package cli builds the zeroclaw command line: one file per subcommand. Commands
// parse flags and call into the daemon or a client; they hold no logic of their own.
package cli

import (
	"io"

	"github.com/spf13/cobra"
)

// Root returns the zeroclaw command with every subcommand attached. Its full-screen
// client (no subcommand in a terminal, or `tui`) runs the zeroclaw-tui program, which
// is installed beside it: the UI's libraries stay out of the daemon's binary, whose
// start-up and memory they would otherwise cost.
func Root(stdout, stderr io.Writer) *cobra.Command { return root(stdout, stderr, nil) }

// RootWithTUI is Root with the full-screen client run in this process by run: the
// zeroclaw-tui program, which takes every command zeroclaw takes.
func RootWithTUI(stdout, stderr io.Writer, run TUIRunner) *cobra.Command {
	return root(stdout, stderr, run)
}

func root(stdout, stderr io.Writer, run TUIRunner) *cobra.Command {
	root := &cobra.Command{
		Use:           "zeroclaw",
		Short:         "ZeroClaw agent daemon and its clients",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
	}
	// With no subcommand: the full-screen client in a terminal, the help otherwise
	// (piped, as before).
	var o tuiOptions
	o.addFlags(root)
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if !interactiveTerminal() {
			return cmd.Help()
		}
		return runTUI(o, run)
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(daemonCmd(), versionCmd(), configCmd(), pairCmd(), chatCmd(), statusCmd(), rpcCmd())
	root.AddCommand(uploadCmd())
	root.AddCommand(acpCmd())
	root.AddCommand(memoryCmd())
	root.AddCommand(tuiCmd(run))
	root.AddCommand(mcpCmd())
	root.AddCommand(webCmd())
	return root
}
