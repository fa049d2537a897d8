package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// gone reports whether pid no longer runs (a zombie waiting for its new parent to
// reap it counts as gone).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// waitGone waits at most within for pid, which need not be a child of the test, to
// end, and reports whether it did: on its pidfd, which becomes readable once the
// process exits (a zombie has), instead of polling.
func waitGone(t *testing.T, pid int, within time.Duration) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(within)
	for {
		wait := time.Until(deadline)
		if wait <= 0 {
			return false
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(wait.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll on the pidfd of %d: %v", pid, err)
		}
		return n > 0
	}
}
