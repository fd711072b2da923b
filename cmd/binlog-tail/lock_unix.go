//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockOutput takes an exclusive advisory lock (flock) on the output file,
// creating it, and holds it until release: two binlog-tails on one file
// would cut each other's lines. The kernel drops the lock when the process
// dies, however it dies, so a killed run never blocks the next one.
func lockOutput(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	// A lock still held is retried for a second: a process forking just as
	// the previous holder closed the file keeps it until the child's exec.
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	for deadline := time.Now().Add(time.Second); errors.Is(err, syscall.EWOULDBLOCK) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is in use by another binlog-tail (it holds a lock on the file): stop that one, or use another --out", path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
