// Command zeroclaw-tui is ZeroClaw's full-screen terminal client, the program
// `zeroclaw` (in a terminal) and `zeroclaw tui` run. It is a program of its own so
// that the UI's libraries (markdown, highlighting, forms) cost the daemon nothing; it
// takes every command zeroclaw takes, so `go run ./cmd/zeroclaw-tui` works alone.
package main

import (
	"fmt"
	"os"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/cli"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/tui"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/version"
)

func main() {
	if err := cli.RootWithTUI(os.Stdout, os.Stderr, run).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "zeroclaw:", err)
		os.Exit(1)
	}
}

func run(c cli.TUIConfig) error {
	return tui.Run(tui.RunOptions{
		Agent: c.Agent, Session: c.Session, URL: c.URL, ConfigDir: c.ConfigDir,
		ClientOptions: c.ClientOptions, HistoryFile: c.HistoryFile,
		AutoStart:  client.AutoStart{Executable: c.Daemon},
		ClientName: "zeroclaw-tui", ClientVer: version.Version,
	})
}
