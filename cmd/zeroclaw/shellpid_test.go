package main

import (
	"os"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/wait"
)

// shellThatWaits is a shell tool command that writes its pid to shell.pid in the
// workspace once it runs, then sleeps as that same process: a test waits for the
// file (waitForShell) to know the tool is running, instead of sleeping.
const shellThatWaits = `echo $$ > shell.pid; exec sleep 30`

// waitForShell polls for the pid file of shellThatWaits under workspace and returns
// the pid. The process is killed when the test ends, in case the daemon left it.
func waitForShell(t *testing.T, workspace string) int {
	t.Helper()
	path := workspace + string(os.PathSeparator) + "shell.pid"
	pid := wait.PIDFile(t, path, 30*time.Second) // a process's file
	t.Cleanup(func() {
		if p, err := os.FindProcess(pid); err == nil {
			p.Kill()
		}
	})
	return pid
}
