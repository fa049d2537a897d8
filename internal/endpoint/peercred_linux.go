//go:build linux

package endpoint

import "golang.org/x/sys/unix"

// peerCred reads SO_PEERCRED: the peer's pid and uid as of its connect.
func peerCred(fd int) (pid, uid int, err error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return 0, 0, err
	}
	return int(cred.Pid), int(cred.Uid), nil
}
