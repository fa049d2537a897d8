//go:build unix

package endpoint

import (
	"fmt"
	"net"
	"runtime"
	"syscall"
)

// PeerOf reads the credentials of c's peer from the kernel, where the platform
// offers them (peerCred). A failure of any kind, including a c that is not a
// socket, yields the "unix:unknown" peer: a log label is never worth an error.
func PeerOf(c net.Conn) Peer {
	unknown := Peer{Label: "unix:unknown", UID: -1, PID: -1}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return unknown
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return unknown
	}
	var pid, uid int
	var credErr error
	if err := raw.Control(func(fd uintptr) { pid, uid, credErr = peerCred(int(fd)) }); err != nil || credErr != nil {
		return unknown
	}
	label := "unix:unknown" // docs/protocol.md, "The daemon process": only Linux labels its peers (SO_PEERCRED)
	if runtime.GOOS == "linux" {
		label = fmt.Sprintf("unix:pid=%d,uid=%d", pid, uid)
	}
	return Peer{Label: label, UID: uid, PID: pid}
}
