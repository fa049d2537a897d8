//go:build darwin

package endpoint

import "golang.org/x/sys/unix"

// peerCred reads LOCAL_PEERCRED (the peer's uid as of its connect) and
// LOCAL_PEERPID. A peer whose uid cannot be read is refused at initialize
// (auth.Policy.Resolve), so macOS needs real credentials, not a guess.
func peerCred(fd int) (pid, uid int, err error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return 0, 0, err
	}
	pid, err = unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		pid = -1
	}
	return pid, int(cred.Uid), nil
}
