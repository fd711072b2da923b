package main

import (
	"os"
	"syscall"
)

// syncFileRangeWrite is SYNC_FILE_RANGE_WRITE: start writing the range's
// dirty pages, wait for none.
const syncFileRangeWrite = 2

// startWriteback starts the disk writes of every page of f not written
// yet (sync_file_range over the whole file: only its dirty pages cost).
func startWriteback(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	if err := rc.Control(func(fd uintptr) {
		werr = syscall.SyncFileRange(int(fd), 0, 0, syncFileRangeWrite)
	}); err != nil {
		return err
	}
	return werr
}
