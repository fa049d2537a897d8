//go:build unix

package endpoint

import (
	"fmt"
	"os"
	"syscall"
)

// homeEnv names the variable that holds the user's home directory.
const homeEnv = "HOME"

// securePrivateDir makes dir, which must exist, private to us: owned by our
// effective uid and without group/other permission bits. Another user's
// directory is refused rather than used: its owner could swap the socket under us.
func securePrivateDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("inspect data directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("data directory %s is not a directory", dir)
	}
	if uid, me := fi.Sys().(*syscall.Stat_t).Uid, os.Geteuid(); int(uid) != me {
		return fmt.Errorf("data directory %s is owned by uid %d, not by us (uid %d)", dir, uid, me)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("make data directory private: %w", err)
		}
	}
	return nil
}
