package mcp

import (
	"os"
	"syscall"
)

// sysProcAttr: on Windows a server learns of the daemon's death from its stdin
// ending.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// terminateSignal: Windows has no SIGTERM; the kill that follows ends it.
func terminateSignal(*os.Process) {}
