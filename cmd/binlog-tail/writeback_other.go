//go:build !linux

package main

import (
	"errors"
	"os"
)

// startWriteback is Linux's sync_file_range; elsewhere the fsync at the
// end of the run writes the whole file.
func startWriteback(*os.File) error { return errors.ErrUnsupported }

// flushData is Linux's fdatasync in the background; elsewhere the fsync
// at the end of the run does it all.
func flushData(*os.File) error { return errors.ErrUnsupported }

// reserveBlocks is Linux's fallocate that keeps the size; elsewhere the
// writes allocate the blocks.
func reserveBlocks(*os.File, int64, int64) error { return errors.ErrUnsupported }
