package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
)

// handOver runs the program at path with args on this console and exits with its
// status (Windows has no exec). Ctrl-C reaches every process of the console: this one
// leaves it to the child, which decides what it means.
func handOver(path string, args []string) error {
	// Notified (to a channel nobody reads), Ctrl-C does not end this process.
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		os.Exit(exit.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("running %s: %w", path, err)
	}
	os.Exit(0)
	return nil
}
