//go:build !windows

package atomicfile

import (
	"os"
	"syscall"
)

const oNoFollow = syscall.O_NOFOLLOW

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
