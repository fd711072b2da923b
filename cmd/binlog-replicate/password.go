package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// readPasswordFile returns the first line of path, a file no one but its
// owner may read (a password in a DSN shows in ps and shell history).
func readPasswordFile(flagName, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return "", fmt.Errorf("%s %s: mode %04o gives group or others access; run chmod 600 %s", flagName, path, m, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4097))
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", flagName, path, err)
	}
	if len(b) > 4096 {
		return "", fmt.Errorf("%s %s: longer than 4096 bytes, not a password file", flagName, path)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return string(bytes.TrimSuffix(line, []byte("\r"))), nil
}
