package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// syncFileRangeWrite is SYNC_FILE_RANGE_WRITE: start writing the range's
// dirty pages, wait for none.
const syncFileRangeWrite = 2

// startWriteback starts the disk writes of every page of f not written
// yet (sync_file_range over the whole file: only its dirty pages cost).
func startWriteback(f *os.File) error {
	return control(f, func(fd int) error { return syscall.SyncFileRange(fd, 0, 0, syncFileRangeWrite) })
}

// flushData writes f's data to stable storage and waits for it
// (fdatasync). A file that cannot be synced (EINVAL: a pipe, a special
// file) gives an error that is errors.ErrUnsupported.
func flushData(f *os.File) error {
	err := control(f, syscall.Fdatasync)
	if errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("%w: fdatasync: %w", errors.ErrUnsupported, err)
	}
	return err
}

// control calls do with f's descriptor.
func control(f *os.File, do func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var derr error
	if err := rc.Control(func(fd uintptr) { derr = do(int(fd)) }); err != nil {
		return err
	}
	return derr
}

// fallocKeepSize is FALLOC_FL_KEEP_SIZE: reserve the blocks, leave the
// file's size as it is.
const fallocKeepSize = 1

// reserveBlocks reserves the disk blocks of f's bytes [off, off+n) without
// changing its size (fallocate with FALLOC_FL_KEEP_SIZE). A file whose
// file system cannot (EOPNOTSUPP) or that is not a regular file gives an
// error that is errors.ErrUnsupported.
func reserveBlocks(f *os.File, off, n int64) error {
	err := control(f, func(fd int) error { return syscall.Fallocate(fd, fallocKeepSize, off, n) })
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ESPIPE) {
		return fmt.Errorf("%w: fallocate: %w", errors.ErrUnsupported, err)
	}
	return err
}
