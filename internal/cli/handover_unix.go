//go:build !windows

package cli

import (
	"fmt"
	"os"
	"syscall"
)

// handOver replaces this process with the program at path, given args: the terminal,
// the signals and the exit status are its own from then on.
func handOver(path string, args []string) error {
	err := syscall.Exec(path, append([]string{path}, args...), os.Environ())
	return fmt.Errorf("running %s: %w", path, err)
}
