//go:build !linux

package mariadb

import (
	"os"
	"os/exec"
)

// detach does nothing here: without a parent death signal, servers of a test
// process that is killed outright keep running.
func detach(*exec.Cmd) {}

// lockOwner and lockStale stand in for flock: the process directory is
// claimed without a lock, and stale ones are never reaped.
func lockOwner(*os.File) bool { return true }
func lockStale(*os.File) bool { return false }
