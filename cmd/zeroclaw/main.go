// Command zeroclaw is the ZeroClaw agent daemon and its clients.
package main

import (
	"fmt"
	"os"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/cli"
)

func main() {
	if err := cli.Root(os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "zeroclaw:", err)
		os.Exit(1)
	}
}
