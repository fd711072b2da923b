package clikit

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// ReadPasswordFile returns the first line of path (without its line
// end), named flagName in errors. A password in a DSN shows in ps and in
// shell histories; a file does not, so it must give no access to group or
// others (as chmod 600), be at most 4096 bytes and have a non-empty first
// line.
func ReadPasswordFile(flagName, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	if m := st.Mode().Perm(); m&0o077 != 0 {
		return "", fmt.Errorf("%s %s: mode %04o gives group or others access; run chmod 600 %s", flagName, path, m, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4097))
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", flagName, path, err)
	}
	if len(b) > 4096 {
		return "", fmt.Errorf("%s %s: longer than 4096 bytes, not a password file", flagName, path)
	}
	pw, _, _ := strings.Cut(string(b), "\n")
	pw = strings.TrimSuffix(pw, "\r")
	if pw == "" {
		return "", fmt.Errorf("%s %s: the first line is empty", flagName, path)
	}
	return pw, nil
}

// DefaultPassword is the password of the DSNs that have none: the first
// line of the --password-file path when given (ReadPasswordFile), else
// $MYSQL_PWD (as the MySQL clients read it), else "".
func DefaultPassword(path string) (string, error) {
	if path == "" {
		return os.Getenv("MYSQL_PWD"), nil
	}
	return ReadPasswordFile("--password-file", path)
}
