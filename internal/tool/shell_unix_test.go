//go:build unix

package tool

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/wait"
)

func TestShell(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, ws, map[string]string{"here.txt": "present\n"})
	tests := []struct {
		name    string
		command string
		want    string
		isError bool
	}{
		{"stdout", "echo hello", "hello\n", false},
		{"stdout and stderr combined", "echo out; echo err >&2", "out\nerr\n", false},
		{"no output", "true", "", false},
		{"exit status", "echo partial; exit 3", "partial\nexit status 3", true},
		{"exit status without output", "exit 1", "exit status 1", true},
		{"killed by a signal", "kill -9 $$", "signal: killed", true},
		{"runs in the workspace", "pwd; cat here.txt", ws + "\npresent\n", false},
		{"PWD is the workspace", `echo "$PWD"`, ws + "\n", false},
		{"stdin is empty", "cat; echo done", "done\n", false},
		{"invalid UTF-8 replaced", `printf 'a\377b'`, "a\uFFFDb", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, Shell{}, ws, `{"command":`+jsonString(t, tt.command)+`}`)
			if r.Output != tt.want || r.IsError != tt.isError || r.Truncated {
				t.Fatalf("got %q (error %v, truncated %v), want %q (error %v)", r.Output, r.IsError, r.Truncated, tt.want, tt.isError)
			}
		})
	}
}

func TestShellOutputIsCapped(t *testing.T) {
	ws := t.TempDir()
	const total = 3_000_000 // far beyond the cap, and beyond a pipe buffer: draining must go on
	r := run(t, Shell{}, ws, fmt.Sprintf(`{"command":"head -c %d /dev/zero | tr '\\0' a; echo; exit 2"}`, total))
	if !r.Truncated || !r.IsError {
		t.Fatalf("Truncated %v, IsError %v; want both", r.Truncated, r.IsError)
	}
	want := strings.Repeat("a", MaxShellOutput) + "\n" +
		fmt.Sprintf("[output truncated: %d bytes dropped after the first %d]\n", total+1-MaxShellOutput, MaxShellOutput) +
		"exit status 2"
	if r.Output != want {
		t.Fatalf("output …%q, want …%q", tail(r.Output), tail(want))
	}
}

func TestShellTimeoutKeepsPartialOutput(t *testing.T) {
	ws := t.TempDir()
	// Without the timeout the sleep would end on its own, and say nothing of one.
	r := run(t, Shell{}, ws, `{"command":"echo partial; sleep 30","timeout_secs":1}`)
	if !r.IsError || r.Output != "partial\ntimed out after 1s" {
		t.Fatalf("got %q (error %v), want the partial output and the timeout", r.Output, r.IsError)
	}
}

// TestShellCancelKillsTheProcessGroup cancels a command whose shell waits for a
// background child, and checks that the child dies (it would live five minutes) and
// the call then returns a cancellation.
func TestShellCancelKillsTheProcessGroup(t *testing.T) {
	ws := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() {
		done <- Shell{}.Run(ctx, Env{Workspace: ws}, jsontext.Value(`{"command":"sleep 300 & echo $! > pid; wait"}`))
	}()
	pid := wait.PIDFile(t, filepath.Join(ws, "pid"), 10*time.Second)
	cancel()
	waitDead(t, pid)
	r := <-done
	if !r.IsError || !strings.HasSuffix(r.Output, "cancelled") {
		t.Fatalf("got %q (error %v), want a cancelled error", r.Output, r.IsError)
	}
}

// TestShellKillsWhatItLeavesBehind: a background process that outlives the shell is
// killed when the shell exits (it would live five minutes, holding the output pipe
// open), and the call returns the shell's output.
func TestShellKillsWhatItLeavesBehind(t *testing.T) {
	ws := t.TempDir()
	done := make(chan Result, 1)
	go func() {
		done <- Shell{}.Run(context.Background(), Env{Workspace: ws}, jsontext.Value(`{"command":"sleep 300 & echo $! > pid; echo started"}`))
	}()
	waitDead(t, wait.PIDFile(t, filepath.Join(ws, "pid"), 10*time.Second))
	if r := <-done; r.IsError || r.Output != "started\n" {
		t.Fatalf("got %q (error %v)", r.Output, r.IsError)
	}
}

func TestShellWithholdsSecretsFromCommands(t *testing.T) {
	t.Setenv("FOO_API_KEY", "x")
	t.Setenv("ZEROCLAW_AUTH_TOKEN", "y")
	t.Setenv("ZEROCLAW_TEST_PLAIN", "visible")
	r := mustOK(t, run(t, Shell{}, t.TempDir(),
		`{"command":"echo ${FOO_API_KEY:-none} ${ZEROCLAW_AUTH_TOKEN:-none} $ZEROCLAW_TEST_PLAIN"}`))
	if r.Output != "none none visible\n" {
		t.Fatalf("got %q", r.Output)
	}
}

func TestShellCancelledBeforeStart(t *testing.T) {
	ws := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Shell{}.Run(ctx, Env{Workspace: ws}, jsontext.Value(`{"command":"touch ran"}`))
	mustFail(t, r, "cancelled")
	if _, err := os.Stat(filepath.Join(ws, "ran")); !os.IsNotExist(err) {
		t.Fatalf("the command ran after the cancel: %v", err)
	}
}

func TestReadFileRefusesAFifo(t *testing.T) {
	ws := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	mustFail(t, run(t, ReadFile{}, ws, `{"path":"fifo"}`), "not a regular file")
}

// waitDead polls until process pid is gone, or a zombie nobody has reaped yet (init
// in a container may not reap orphans): either way it is no longer running.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) || isZombie(pid) {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d is still running (kill 0: %v)", pid, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isZombie reports whether Linux's /proc says pid has exited but is not reaped.
func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// TestShellDoesNotWaitForAnEscapedHolderOfThePipe: a process that left the group
// (setsid) and keeps the output pipe open cannot hold the call: after a short drain
// delay the pipe is closed and the call returns, while that process still runs (it
// would for an hour; the test kills it).
func TestShellDoesNotWaitForAnEscapedHolderOfThePipe(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid command")
	}
	ws := t.TempDir()
	r := run(t, Shell{}, ws, `{"command":"setsid sh -c 'echo $$ > pid; exec sleep 3600' & while [ ! -s pid ]; do sleep 0.01; done; echo done"}`)
	pid := wait.PIDFile(t, filepath.Join(ws, "pid"), 10*time.Second)
	defer syscall.Kill(pid, syscall.SIGKILL) // it escaped the group on purpose: clean up
	if err := syscall.Kill(pid, 0); err != nil || isZombie(pid) {
		t.Fatalf("the escaped process is gone (%v): the call may have waited for it", err)
	}
	if r.IsError || r.Output != "done\n" {
		t.Fatalf("got %q (error %v)", r.Output, r.IsError)
	}
}
