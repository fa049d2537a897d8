// Package wait is the tests' one poll: for what another process or the file
// system does, which no event of ours tells (a tool's shell writing its pid, a
// socket appearing, a process exiting), with a deadline. Everything the daemon
// tells of in a line or a message is waited for by reading that instead.
package wait

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// For polls cond until it holds, at most within, and fails t naming what it
// waited for.
func For(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// PIDFile waits, at most within, for a whole line holding a positive pid in the
// file at path (a shell writes it once it runs) and returns the pid.
func PIDFile(t testing.TB, path string, within time.Duration) int {
	t.Helper()
	pid := 0
	For(t, "a pid in "+path, within, func() bool {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		p, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && p > 0 {
			pid = p
		}
		return pid > 0
	})
	return pid
}
