package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
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
	pid := 0
	waitFor(t, "the shell tool's pid in "+path, 30*time.Second, func() bool { // a process's file
		b, err := os.ReadFile(path)
		p, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && perr == nil && p > 0 && strings.HasSuffix(string(b), "\n") {
			pid = p
		}
		return pid > 0
	})
	t.Cleanup(func() {
		if p, err := os.FindProcess(pid); err == nil {
			p.Kill()
		}
	})
	return pid
}
