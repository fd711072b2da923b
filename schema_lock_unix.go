//go:build unix

package binlogstream

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive advisory lock (flock). A lock still held
// is retried for a second: a process forking at the moment its previous
// holder closed the file keeps the lock until the child's exec, a few
// milliseconds; a real second writer holds it for good.
func lockFile(f *os.File) error {
	deadline := time.Now().Add(time.Second)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP):
			return nil // a file system without locks: nothing to enforce with
		case errors.Is(err, syscall.EWOULDBLOCK) && time.Now().Before(deadline):
			time.Sleep(5 * time.Millisecond)
		default:
			return err
		}
	}
}
