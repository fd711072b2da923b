package mariadb

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RequireEnv names the environment variable that turns a missing MariaDB
// into a test failure instead of a skip.
const RequireEnv = "BINLOGSTREAM_REQUIRE_MARIADB"

// Require skips t when the MariaDB server binaries are not installed, or
// fails it when RequireEnv is set to anything but "" or "0".
func Require(t testing.TB) {
	t.Helper()
	requireWith(t, findBinary)
}

func requireWith(t testing.TB, find func(name string) (string, error)) {
	t.Helper()
	var missing []string
	for _, name := range []string{"mariadbd", "mariadb-install-db"} {
		if _, err := find(name); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("mariadb: %s not found on PATH; set %s=1 to fail instead of skipping",
		strings.Join(missing, " and "), RequireEnv)
	if required() {
		t.Fatal(msg)
		return // for a testing.TB whose Fatal returns
	}
	t.Skip(msg)
}

func required() bool {
	v := os.Getenv(RequireEnv)
	return v != "" && v != "0"
}

// findBinary looks on PATH, then in the sbin and libexec directories where
// distributions put mariadbd and which a non-root PATH often lacks.
func findBinary(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/libexec"} {
		c := filepath.Join(dir, name)
		if fi, statErr := os.Stat(c); statErr == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	return "", err
}
