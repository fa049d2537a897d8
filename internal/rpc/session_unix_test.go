//go:build unix

package rpc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/wait"
)

func TestCancelKillsARunningShell(t *testing.T) {
	h := sessionServer(t, session.Options{})
	p := h.peer(t, "")
	sid := p.newSession(`{"agentAlias":"full"}`)
	// The shell writes its pid once it runs, then becomes the sleep.
	resp := p.start("session/prompt", prompt(sid, `/tool shell {"command":"echo $$ > shell.pid; exec sleep 30"}`))
	p.updateOf("tool_call")
	pid := wait.PIDFile(t, filepath.Join(h.srv.cfg.DataDir, "workspaces", "full", "shell.pid"), 10*time.Second)
	c := p.must("session/cancel", fmt.Sprintf(`{"sessionId":%q}`, sid))
	if c["cancelled"] != true {
		t.Fatalf("cancel = %v", c)
	}
	res, err := p.await(resp)
	if err != nil || res["stopReason"] != "cancelled" {
		t.Fatalf("prompt = %v, %v", res, err)
	}
	r := p.updateOf("tool_result")
	if r["isError"] != true || r["rawOutput"] != "cancelled" {
		t.Errorf("tool_result = %v", r)
	}
	wait.For(t, "the shell to be killed", 10*time.Second, func() bool { return !processAlive(pid) }) // the shell was killed, not left to finish its sleep
	if c := p.must("session/cancel", fmt.Sprintf(`{"sessionId":%q}`, sid)); c["cancelled"] != false {
		t.Errorf("cancel with no turn = %v", c)
	}
}

// processAlive reports whether pid names a process that has not exited (a zombie
// nobody reaped counts as exited: signal 0 still reaches it, so look at its state).
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err) // no /proc (not Linux): signal 0 reached it
	}
	// pid (comm) STATE …: the state follows the last ')'.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}
