//go:build !linux

// Command zeroclaw-bench is the load generator behind docs/BENCHMARKS.md. It reads
// the daemon's memory from /proc, so it runs on Linux only.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "zeroclaw-bench: Linux only (it reads the daemon's memory from /proc)")
	os.Exit(1)
}
