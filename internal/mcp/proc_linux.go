package mcp

import (
	"os"
	"syscall"
)

// sysProcAttr makes the kernel kill a stdio server when the daemon dies, even by
// SIGKILL (its closed stdin tells it too, but not every server listens).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

func terminateSignal(p *os.Process) { p.Signal(syscall.SIGTERM) }
