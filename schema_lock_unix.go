//go:build unix

package binlogstream

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock (flock) without waiting.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP) {
		return nil // a file system without locks: nothing to enforce with
	}
	return err
}
