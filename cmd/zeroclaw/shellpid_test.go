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
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 && strings.HasSuffix(string(b), "\n") {
			t.Cleanup(func() {
				if p, err := os.FindProcess(pid); err == nil {
					p.Kill()
				}
			})
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shell tool never ran: no pid in %s (%v)", path, err)
		}
		time.Sleep(10 * time.Millisecond) // polling a process's file
	}
}
