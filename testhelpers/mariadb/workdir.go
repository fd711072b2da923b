package mariadb

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DirEnv names an optional environment variable: the directory under which
// servers live instead of os.TempDir(), e.g. /dev/shm: on a tmpfs a
// server starts without waiting for the disk, and its datadir takes
// memory.
const DirEnv = "BINLOGSTREAM_MARIADB_DIR"

const (
	rootPrefix = "binlogstream-mariadb-"
	lockName   = "owner.lock"
	// maxRootLen keeps <root>/<server dir>/mysqld.sock under the 107-byte
	// sun_path limit, at which mariadbd aborts.
	maxRootLen = 64
)

// procState is what one test process shares between its servers.
type procState struct {
	once     sync.Once
	root     string   // $TMPDIR/binlogstream-mariadb-<pid>
	lock     *os.File // flock'ed for the process lifetime; see doc.go
	template string   // datadir made by mariadb-install-db
	mariadbd string
	err      error

	mu      sync.Mutex
	servers map[*Server]struct{}
}

var state = &procState{servers: map[*Server]struct{}{}}

// setup makes the process directory and the template datadir, once. built
// is true for the one caller that made them.
func (st *procState) setup() (built bool, err error) {
	st.once.Do(func() {
		built = true
		st.err = st.doSetup()
	})
	return built, st.err
}

func (st *procState) doSetup() error {
	base := os.Getenv(DirEnv)
	if base == "" {
		base = os.TempDir()
	}
	if len(base) > maxRootLen-len(rootPrefix)-8 {
		base = "/tmp"
	}
	reapStale(base)

	root := filepath.Join(base, rootPrefix+strconv.Itoa(os.Getpid()))
	// A directory of a dead process with our PID may exist (PID reuse).
	if err := os.RemoveAll(root); err != nil {
		return fmt.Errorf("mariadb: clearing %s: %w", root, err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	lock, err := os.Create(filepath.Join(root, lockName))
	if err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	if !lockOwner(lock) {
		lock.Close()
		return fmt.Errorf("mariadb: cannot lock %s", lock.Name())
	}
	st.root, st.lock = root, lock

	if st.mariadbd, err = findBinary("mariadbd"); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	installDB, err := findBinary("mariadb-install-db")
	if err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	st.template, err = installTemplate(installDB, filepath.Join(root, "template"))
	return err
}

// installTemplate runs mariadb-install-db once; servers start from copies.
// MariaDB has no server_uuid, so copies of one datadir are fine for a
// primary and its replicas.
func installTemplate(installDB, dir string) (string, error) {
	data, tmp := filepath.Join(dir, "data"), filepath.Join(dir, "tmp")
	// A starting server deletes #sql* files in its tmpdir: never share one.
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return "", fmt.Errorf("mariadb: %w", err)
	}
	args := []string{
		"--no-defaults", // must come first; keeps Debian's /etc/mysql out
		"--datadir=" + data,
		"--tmpdir=" + tmp,
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
		"--skip-name-resolve",
		"--innodb-log-file-size=8M",
		"--innodb-buffer-pool-size=64M",
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, installDB, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("mariadb: %s failed after %v: %w\n%s",
			installDB, time.Since(start).Round(time.Millisecond), err, tailString(out.String(), 40))
	}
	if _, err := os.Stat(filepath.Join(data, "mysql", "user.frm")); err != nil {
		return "", fmt.Errorf("mariadb: %s left no grant tables in %s\n%s",
			installDB, data, tailString(out.String(), 40))
	}
	return data, nil
}

// reapStale removes the directories of earlier test processes that are gone:
// their lock file is no longer held.
func reapStale(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, rootPrefix+"*"))
	for _, d := range dirs {
		if _, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), rootPrefix)); err != nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(d, lockName), os.O_RDWR, 0)
		if err != nil {
			// No lock file: a setup that died before making it, or not ours.
			continue
		}
		if lockStale(f) {
			_ = os.RemoveAll(d)
		}
		f.Close()
	}
}

func (st *procState) register(s *Server) {
	st.mu.Lock()
	st.servers[s] = struct{}{}
	st.mu.Unlock()
}

func (st *procState) unregister(s *Server) {
	st.mu.Lock()
	delete(st.servers, s)
	st.mu.Unlock()
}

// Cleanup kills every server this process still runs and removes the
// process's directory, template included. Call it from TestMain after
// m.Run; Start after Cleanup fails. Without it, the directory is removed by
// the first Start of a later test process (see the package doc).
func Cleanup() {
	st := state
	st.mu.Lock()
	servers := make([]*Server, 0, len(st.servers))
	for s := range st.servers {
		servers = append(servers, s)
	}
	st.mu.Unlock()
	for _, s := range servers {
		s.destroy()
	}
	// Make a later setup fail rather than use a removed template.
	st.once.Do(func() {})
	st.err = fmt.Errorf("mariadb: Start after Cleanup")
	if st.root != "" {
		_ = os.RemoveAll(st.root)
	}
	if st.lock != nil {
		st.lock.Close()
		st.lock = nil
	}
}

func tailString(s string, lines int) string {
	s = strings.TrimRight(s, "\n")
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
