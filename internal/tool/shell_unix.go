//go:build unix

package tool

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// shellCommand runs command with /bin/sh, which every Unix has at that path, rather
// than whatever "sh" the daemon's PATH finds first.
func shellCommand(ctx context.Context, command string) *exec.Cmd {
	return exec.CommandContext(ctx, "/bin/sh", "-c", command)
}

// procGroup is the process group a command runs in: the shell leads a new group
// (Setpgid), its children inherit it, and one SIGKILL to -pgid reaches them all.
type procGroup struct {
	cmd *exec.Cmd
}

func newProcGroup(cmd *exec.Cmd) (*procGroup, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return &procGroup{cmd: cmd}, nil
}

// started is called after a successful Start. On Unix the group exists from the
// first instant (the child calls setpgid before exec), so there is nothing to do.
func (g *procGroup) started() error { return nil }

// kill sends SIGKILL to the whole group. It is cmd.Cancel, and is called again once
// the shell has exited, for what it left behind.
func (g *procGroup) kill() error {
	err := syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

func (g *procGroup) release() {}
