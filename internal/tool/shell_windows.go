//go:build windows

package tool

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// shellCommand runs command with cmd.exe. The command line is given verbatim:
// cmd.exe does its own parsing, which the C runtime quoting of os/exec would break.
// /d skips AutoRun commands from the registry; /s with the outer quotes makes cmd
// strip exactly those two quotes and keep the rest as written.
//
// The shell gets a process group of its own, as on Unix (Setpgid): a Ctrl-C in the
// daemon's console then reaches the daemon, which cancels the turn and ends the
// tool's processes, and not the tool, whose death the turn would take for a result
// and go on with. Its children inherit the group, and Ctrl-C disabled with it.
func shellCommand(ctx context.Context, command string) *exec.Cmd {
	comspec := os.Getenv("ComSpec")
	if comspec == "" {
		comspec = `C:\Windows\System32\cmd.exe`
	}
	cmd := exec.CommandContext(ctx, comspec)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CmdLine:       `cmd.exe /d /s /c "` + command + `"`,
		HideWindow:    true,
		CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP,
	}
	return cmd
}

// procGroup is a job object holding the command's process tree: terminating the job
// ends every process in it, and closing its last handle does too
// (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE), so nothing outlives the call. The process is
// assigned right after Start; a child it spawns before that instant would escape the
// job, which cmd.exe does not do that fast.
type procGroup struct {
	cmd *exec.Cmd
	job windows.Handle
}

func newProcGroup(cmd *exec.Cmd) (*procGroup, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("job object: %w", err)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("job object: %w", err)
	}
	return &procGroup{cmd: cmd, job: job}, nil
}

// started puts the started process into the job.
func (g *procGroup) started() error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE,
		false, uint32(g.cmd.Process.Pid))
	if err != nil {
		return fmt.Errorf("job object: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(g.job, h); err != nil {
		return fmt.Errorf("job object: %w", err)
	}
	return nil
}

// kill terminates the job, and the shell itself in case it is not in the job yet.
func (g *procGroup) kill() error {
	windows.TerminateJobObject(g.job, 1)
	return g.cmd.Process.Kill()
}

// release closes the job, which kills whatever is still in it.
func (g *procGroup) release() { windows.CloseHandle(g.job) }
