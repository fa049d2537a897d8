package main

import (
	_ "github.com/Microsoft/go-winio"
	_ "github.com/pelletier/go-toml/v2"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/sys/unix"
)

func main() {}
