//go:build !unix

package binlogstream

import "os"

// lockFile does nothing where there is no flock.
func lockFile(*os.File) error { return nil }
