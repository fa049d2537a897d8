package fullfs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func mount(dir string, size int64) error {
	if os.Getuid() != 0 {
		return errors.New("not running as root")
	}
	return unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size))
}

func unmount(dir string) error { return unix.Unmount(dir, 0) }
