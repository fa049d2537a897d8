//go:build unix && !linux

package mcp

import (
	"os"
	"syscall"
)

// sysProcAttr: without PR_SET_PDEATHSIG, a server learns of the daemon's death
// from its stdin ending.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func terminateSignal(p *os.Process) { p.Signal(syscall.SIGTERM) }
