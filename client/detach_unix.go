//go:build unix

package client

import "syscall"

// detached puts the daemon in a session of its own: no controlling terminal, so a
// Ctrl-C or hangup of the client's terminal never reaches it.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
