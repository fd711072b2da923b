package mariadb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
)

// Accounts every server has. See the package doc for their privileges.
const (
	RootUser     = "root"
	ReplUser     = "repl"
	ReplPassword = "replpass"
	AppUser      = "app"
	AppPassword  = "apppass"
)

const (
	defaultStartTimeout = 60 * time.Second
	stopTimeout         = 30 * time.Second
	portAttempts        = 5
)

// Options configure a server. The zero value is a writable server with
// server_id 1 and MariaDB's defaults for the binlog sizes.
type Options struct {
	// ServerID is @@server_id; 0 means 1 (StartPair: 1 for the primary,
	// primary+1 for the replica).
	ServerID uint32
	// GTIDDomainID is @@gtid_domain_id; 0 is MariaDB's default.
	GTIDDomainID uint32
	// MaxBinlogSize rotates binlog files past this many bytes (at least
	// 4096; the server rounds down to a multiple of 4096). 0 keeps 1 GiB.
	MaxBinlogSize int64
	// BinlogRowEventMaxSize splits a statement's rows into Rows events of
	// about this size (a multiple of 256; startup-only). 0 keeps 8192.
	BinlogRowEventMaxSize int
	// ReadOnly starts the server with read_only=ON (root still writes).
	ReadOnly bool
	// ExtraArgs are appended to mariadbd's command line, where a later
	// option wins over the package's, e.g. "--binlog-annotate-row-events=OFF".
	ExtraArgs []string
	// StartTimeout bounds each wait for readiness; 0 means 60 s.
	StartTimeout time.Duration
}

func (o Options) validate() (Options, error) {
	if o.ServerID == 0 {
		o.ServerID = 1
	}
	if o.MaxBinlogSize != 0 && o.MaxBinlogSize < 4096 {
		return o, fmt.Errorf("mariadb: MaxBinlogSize %d < 4096", o.MaxBinlogSize)
	}
	if o.BinlogRowEventMaxSize != 0 && (o.BinlogRowEventMaxSize < 256 || o.BinlogRowEventMaxSize%256 != 0) {
		return o, fmt.Errorf("mariadb: BinlogRowEventMaxSize %d is not a multiple of 256", o.BinlogRowEventMaxSize)
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = defaultStartTimeout
	}
	return o, nil
}

// Server is one mariadbd on 127.0.0.1. Its methods that take a testing.TB
// call t.Fatal on error and so belong on the test's goroutine; Kill, Term,
// PID, ErrorLog and the accessors may be called from any goroutine.
type Server struct {
	opts     Options
	dir      string
	dataDir  string
	tmpDir   string
	socket   string
	errorLog string
	mariadbd string

	mu   sync.Mutex
	port int
	proc *process
}

// Start copies the template datadir and starts a server on a free loopback
// port, with the accounts of the package doc. It is stopped (SIGKILL) and
// its directory removed by t.Cleanup.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	Require(t)
	began := time.Now()
	s := create(t, opts)
	if err := s.launchOnFreePort(); err != nil {
		t.Fatal(err)
	}
	s.createAccounts(t)
	t.Logf("mariadb: server_id %d on %s ready in %v", s.opts.ServerID, s.Addr(), time.Since(began).Round(time.Millisecond))
	return s
}

func create(t testing.TB, opts Options) *Server {
	t.Helper()
	opts, err := opts.validate()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	built, err := state.setup()
	if err != nil {
		t.Fatal(err)
	}
	if built {
		t.Logf("mariadb: template datadir made in %v", time.Since(began).Round(time.Millisecond))
	}
	dir, err := os.MkdirTemp(state.root, "s")
	if err != nil {
		t.Fatalf("mariadb: %v", err)
	}
	s := &Server{
		opts:     opts,
		dir:      dir,
		dataDir:  filepath.Join(dir, "data"),
		tmpDir:   filepath.Join(dir, "tmp"),
		socket:   filepath.Join(dir, "mysqld.sock"),
		errorLog: filepath.Join(dir, "error.log"),
		mariadbd: state.mariadbd,
	}
	state.register(s)
	t.Cleanup(func() {
		if t.Failed() && s.errorLogExists() {
			t.Logf("mariadb: tail of %s:\n%s", s.errorLog, s.ErrorLog())
		}
		s.destroy()
	})
	if err := os.Mkdir(s.tmpDir, 0o700); err != nil {
		t.Fatalf("mariadb: %v", err)
	}
	if out, err := exec.Command("cp", "-a", state.template, s.dataDir).CombinedOutput(); err != nil {
		t.Fatalf("mariadb: copying template datadir: %v: %s", err, out)
	}
	return s
}

// destroy kills the server and removes its directory; SIGTERM's clean
// shutdown buys nothing for a directory about to go.
func (s *Server) destroy() {
	s.Kill()
	_ = os.RemoveAll(s.dir)
	state.unregister(s)
}

func (s *Server) errorLogExists() bool {
	_, err := os.Stat(s.errorLog)
	return err == nil
}

func (s *Server) args(port int) []string {
	o := s.opts
	a := []string{
		"--no-defaults", // must come first; keeps Debian's /etc/mysql out
		"--datadir=" + s.dataDir,
		"--socket=" + s.socket,
		"--pid-file=" + filepath.Join(s.dir, "mysqld.pid"),
		"--log-error=" + s.errorLog,
		"--tmpdir=" + s.tmpDir,
		"--bind-address=127.0.0.1",
		"--port=" + strconv.Itoa(port),
		"--skip-name-resolve",
		"--server-id=" + strconv.FormatUint(uint64(o.ServerID), 10),
		"--gtid-domain-id=" + strconv.FormatUint(uint64(o.GTIDDomainID), 10),
		"--log-bin=mysql-bin",
		"--relay-log=relay-bin",
		"--binlog-format=ROW",
		"--binlog-row-image=FULL",
		"--log-slave-updates=ON",
		"--gtid-strict-mode=ON",
		"--innodb-buffer-pool-size=64M",
		"--loose-innodb-buffer-pool-size-max=64M",
		"--innodb-log-file-size=8M",
		"--innodb-temp-data-file-path=ibtmp1:1M:autoextend", // not 12 MB written per start
		"--innodb-flush-log-at-trx-commit=2",
		"--sync-binlog=0",
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_general_ci",
	}
	if os.Geteuid() == 0 {
		a = append(a, "--user=root")
	}
	if o.MaxBinlogSize != 0 {
		a = append(a, "--max-binlog-size="+strconv.FormatInt(o.MaxBinlogSize, 10))
	}
	if o.BinlogRowEventMaxSize != 0 {
		a = append(a, "--binlog-row-event-max-size="+strconv.Itoa(o.BinlogRowEventMaxSize))
	}
	if o.ReadOnly {
		a = append(a, "--read-only=ON")
	}
	return append(a, o.ExtraArgs...)
}

// launchOnFreePort picks a free port and starts the server, again on another
// port when someone else took the first one in between.
func (s *Server) launchOnFreePort() error {
	var err error
	for range portAttempts {
		var port int
		if port, err = freePort(); err != nil {
			return err
		}
		if err = s.launch(port); !errors.Is(err, errPortInUse) {
			return err
		}
	}
	return err
}

var errPortInUse = errors.New("port in use")

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("mariadb: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// launch starts mariadbd on port and waits until it answers on its socket.
func (s *Server) launch(port int) error {
	s.mu.Lock()
	if s.proc != nil {
		s.mu.Unlock()
		return fmt.Errorf("mariadb: server in %s is already running", s.dir)
	}
	logStart := fileSize(s.errorLog)
	p, err := startProcess(s.mariadbd, s.args(port), filepath.Join(s.dir, "stdout.log"))
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("mariadb: starting %s: %w", s.mariadbd, err)
	}
	s.port, s.proc = port, p
	s.mu.Unlock()

	err = s.waitReady(p)
	if err == nil {
		return nil
	}
	s.Kill()
	newLog := readFrom(s.errorLog, logStart)
	if strings.Contains(newLog, "Address already in use") {
		return fmt.Errorf("mariadb: port %d: %w", port, errPortInUse)
	}
	return fmt.Errorf("%w\n--- %s:\n%s", err, s.errorLog, tailString(newLog, 30))
}

func (s *Server) waitReady(p *process) error {
	deadline := time.Now().Add(s.opts.StartTimeout)
	for {
		select {
		case <-p.done:
			return fmt.Errorf("mariadb: mariadbd exited during startup: %v", p.waitErr)
		default:
		}
		c, err := s.rootConn()
		if err == nil {
			err = c.Ping()
			quit(c)
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mariadb: not ready after %v: %v", s.opts.StartTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createAccounts adds ReplUser and AppUser outside the binlog, so that a
// replica made from the same template does not replay them.
func (s *Server) createAccounts(t testing.TB) {
	t.Helper()
	c := s.connRoot(t)
	defer quit(c)
	mustExec(t, c,
		"SET SESSION sql_log_bin = 0",
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", ReplUser, ReplPassword),
		fmt.Sprintf("GRANT REPLICATION SLAVE, SELECT ON *.* TO '%s'@'%%'", ReplUser),
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", AppUser, AppPassword),
		fmt.Sprintf("GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX, "+
			"CREATE VIEW, SHOW VIEW, TRIGGER, REFERENCES, LOCK TABLES, CREATE TEMPORARY TABLES, "+
			"EXECUTE, CREATE ROUTINE, ALTER ROUTINE ON *.* TO '%s'@'%%'", AppUser),
	)
	// Privileges that only some MariaDB versions know; REPLICA MONITOR is
	// the newer name of SLAVE MONITOR.
	for _, priv := range []string{"BINLOG MONITOR", "SLAVE MONITOR", "REPLICA MONITOR", "REPLICATION CLIENT"} {
		_, _ = c.Execute(fmt.Sprintf("GRANT %s ON *.* TO '%s'@'%%'", priv, ReplUser))
	}
}

// Host is the address the server listens on: always 127.0.0.1.
func (s *Server) Host() string { return "127.0.0.1" }

// Port is the server's TCP port; it stays the same across Restart.
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.port
}

// Addr is Host:Port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host(), strconv.Itoa(s.Port())) }

// ServerID is the server's @@server_id.
func (s *Server) ServerID() uint32 { return s.opts.ServerID }

// Dir is the server's directory (datadir, socket, logs).
func (s *Server) Dir() string { return s.dir }

// DataDir is the server's datadir, where its binlog files and
// mysql-bin.index are.
func (s *Server) DataDir() string { return s.dataDir }

// SocketPath is the server's unix socket.
func (s *Server) SocketPath() string { return s.socket }

// ReplUser is the non-root streaming account's name.
func (s *Server) ReplUser() string { return ReplUser }

// ReplPassword is ReplUser's password.
func (s *Server) ReplPassword() string { return ReplPassword }

// Password is the password of one of the package's accounts, "" for others.
func (s *Server) Password(user string) string {
	switch user {
	case ReplUser:
		return ReplPassword
	case AppUser:
		return AppPassword
	}
	return ""
}

// DSN is "user:password@tcp(127.0.0.1:port)/" for one of the package's
// accounts (root, ReplUser, AppUser).
func (s *Server) DSN(user string) string {
	return fmt.Sprintf("%s:%s@tcp(%s)/", user, s.Password(user), s.Addr())
}

// Conn opens a go-mysql connection over TCP as user (see DSN), closed by
// t.Cleanup.
func (s *Server) Conn(t testing.TB, user string) *client.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.ConnectWithContext(ctx, s.Addr(), user, s.Password(user), "", 10*time.Second)
	if err != nil {
		t.Fatalf("mariadb: connecting to %s as %s: %v", s.Addr(), user, err)
	}
	t.Cleanup(func() { quit(c) })
	return c
}

func (s *Server) rootConn() (*client.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.ConnectWithContext(ctx, s.socket, RootUser, "", "", 10*time.Second)
}

func (s *Server) connRoot(t testing.TB) *client.Conn {
	t.Helper()
	c, err := s.rootConn()
	if err != nil {
		t.Fatalf("mariadb: connecting to %s as root: %v", s.socket, err)
	}
	return c
}

// Exec runs statements in order as root in one session (so "USE db" carries
// over to the next statement of the same call).
func (s *Server) Exec(t testing.TB, sql ...string) {
	t.Helper()
	c := s.connRoot(t)
	defer quit(c)
	mustExec(t, c, sql...)
}

// TryExec is Exec that returns the first error instead of failing the test.
func (s *Server) TryExec(sql ...string) error {
	c, err := s.rootConn()
	if err != nil {
		return err
	}
	defer quit(c)
	for _, q := range sql {
		if _, err := c.Execute(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// quit ends a session with COM_QUIT; a bare Close makes the server log
// "Aborted connection".
func quit(c *client.Conn) {
	if c.Quit() != nil {
		c.Close()
	}
}

func mustExec(t testing.TB, c *client.Conn, sql ...string) {
	t.Helper()
	for _, q := range sql {
		if _, err := c.Execute(q); err != nil {
			t.Fatalf("mariadb: %s: %v", q, err)
		}
	}
}

// Query runs one statement as root and returns its rows as strings; NULL
// reads as "NULL".
func (s *Server) Query(t testing.TB, sql string) [][]string {
	t.Helper()
	_, rows := s.query(t, sql)
	return rows
}

// QueryValue runs a statement that returns one value.
func (s *Server) QueryValue(t testing.TB, sql string) string {
	t.Helper()
	rows := s.Query(t, sql)
	if len(rows) != 1 || len(rows[0]) != 1 {
		t.Fatalf("mariadb: %s: want one value, got %v", sql, rows)
	}
	return rows[0][0]
}

// QueryMaps runs one statement as root and returns each row keyed by column
// name.
func (s *Server) QueryMaps(t testing.TB, sql string) []map[string]string {
	t.Helper()
	cols, rows := s.query(t, sql)
	out := make([]map[string]string, len(rows))
	for i, r := range rows {
		m := make(map[string]string, len(cols))
		for j, c := range cols {
			m[c] = r[j]
		}
		out[i] = m
	}
	return out
}

func (s *Server) query(t testing.TB, sql string) (cols []string, rows [][]string) {
	t.Helper()
	c := s.connRoot(t)
	defer quit(c)
	res, err := c.Execute(sql)
	if err != nil {
		t.Fatalf("mariadb: %s: %v", sql, err)
	}
	defer res.Close()
	if res.Resultset == nil {
		return nil, nil
	}
	for _, f := range res.Fields {
		cols = append(cols, string(f.Name))
	}
	rows = make([][]string, res.RowNumber())
	for i := range rows {
		row := make([]string, len(cols))
		for j := range cols {
			v, err := res.GetValue(i, j)
			if err == nil && v == nil {
				row[j] = "NULL"
				continue
			}
			// GetString aliases the result's buffer, which res.Close hands
			// back to a pool shared by every connection: copy it.
			v2, err := res.GetString(i, j)
			if err != nil {
				t.Fatalf("mariadb: %s: row %d column %d: %v", sql, i, j, err)
			}
			row[j] = strings.Clone(v2)
		}
		rows[i] = row
	}
	return cols, rows
}

// GTIDBinlogPos is @@gtid_binlog_pos: the last GTID per domain in the binlog.
func (s *Server) GTIDBinlogPos(t testing.TB) string {
	t.Helper()
	return s.QueryValue(t, "SELECT @@GLOBAL.gtid_binlog_pos")
}

// GTIDCurrentPos is @@gtid_current_pos: the binlog's GTIDs plus what the
// server applied as a replica.
func (s *Server) GTIDCurrentPos(t testing.TB) string {
	t.Helper()
	return s.QueryValue(t, "SELECT @@GLOBAL.gtid_current_pos")
}

// MasterStatus is SHOW MASTER STATUS: the binlog file being written and the
// offset of its end.
func (s *Server) MasterStatus(t testing.TB) (file string, pos uint64) {
	t.Helper()
	rows := s.Query(t, "SHOW MASTER STATUS")
	if len(rows) != 1 || len(rows[0]) < 2 {
		t.Fatalf("mariadb: SHOW MASTER STATUS: %v (is the binlog on?)", rows)
	}
	pos, err := strconv.ParseUint(rows[0][1], 10, 64)
	if err != nil {
		t.Fatalf("mariadb: SHOW MASTER STATUS position %q: %v", rows[0][1], err)
	}
	return rows[0][0], pos
}

// BinaryLog is a row of SHOW BINARY LOGS.
type BinaryLog struct {
	Name string
	Size uint64
}

// BinaryLogs is SHOW BINARY LOGS, oldest first.
func (s *Server) BinaryLogs(t testing.TB) []BinaryLog {
	t.Helper()
	var out []BinaryLog
	for _, r := range s.Query(t, "SHOW BINARY LOGS") {
		size, err := strconv.ParseUint(r[1], 10, 64)
		if err != nil {
			t.Fatalf("mariadb: SHOW BINARY LOGS size %q: %v", r[1], err)
		}
		out = append(out, BinaryLog{Name: r[0], Size: size})
	}
	return out
}

// BinlogEvent is a row of SHOW BINLOG EVENTS. Pos is the event's start
// offset, EndLogPos its end (the header's LogPos).
type BinlogEvent struct {
	LogName   string
	Pos       uint64
	EventType string // e.g. "Gtid", "Table_map", "Write_rows_v1", "Xid"
	ServerID  uint32
	EndLogPos uint64
	Info      string
}

// BinlogEvents is SHOW BINLOG EVENTS IN file.
func (s *Server) BinlogEvents(t testing.TB, file string) []BinlogEvent {
	t.Helper()
	var out []BinlogEvent
	for _, r := range s.Query(t, fmt.Sprintf("SHOW BINLOG EVENTS IN '%s'", file)) {
		pos, err1 := strconv.ParseUint(r[1], 10, 64)
		sid, err2 := strconv.ParseUint(r[3], 10, 32)
		end, err3 := strconv.ParseUint(r[4], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("mariadb: SHOW BINLOG EVENTS row %v: %v", r, err)
		}
		out = append(out, BinlogEvent{LogName: r[0], Pos: pos, EventType: r[2], ServerID: uint32(sid), EndLogPos: end, Info: r[5]})
	}
	return out
}

// FlushBinaryLogs closes the current binlog file and opens the next one.
func (s *Server) FlushBinaryLogs(t testing.TB) {
	t.Helper()
	s.Exec(t, "FLUSH BINARY LOGS")
}

// PurgeBinaryLogsTo deletes the binlog files before file, and fails the test
// if they are still there after 10 s. MariaDB silently keeps a file until
// InnoDB has checkpointed its transactions (up to about a second with
// innodb_flush_log_at_trx_commit=2) and while a dump thread reads it, so
// this repeats the PURGE until it takes effect.
func (s *Server) PurgeBinaryLogsTo(t testing.TB, file string) {
	t.Helper()
	q := fmt.Sprintf("PURGE BINARY LOGS TO '%s'", file)
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.Exec(t, q)
		logs := s.BinaryLogs(t)
		if len(logs) == 0 || logs[0].Name >= file {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mariadb: %s: still have %v after 10 s", q, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SlaveStatus is SHOW SLAVE STATUS by column name, nil when the server does
// not replicate.
func (s *Server) SlaveStatus(t testing.TB) map[string]string {
	t.Helper()
	rows := s.QueryMaps(t, "SHOW SLAVE STATUS")
	if len(rows) == 0 {
		return nil
	}
	return rows[0]
}

// PID is the mariadbd process id, 0 when it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	select {
	case <-s.proc.done:
		return 0 // died on its own
	default:
		return s.proc.cmd.Process.Pid
	}
}

// Kill sends SIGKILL and waits for the process to exit. It does nothing
// when the server is not running.
func (s *Server) Kill() { s.stop(syscall.SIGKILL) }

// Term sends SIGTERM and waits for the clean shutdown, falling back to
// SIGKILL after 30 s. It does nothing when the server is not running.
func (s *Server) Term() { s.stop(syscall.SIGTERM) }

func (s *Server) stop(sig syscall.Signal) {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	// os.Process signals through a pidfd: never a recycled PID.
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Restart starts the stopped server again on the same datadir and port and
// waits until it is ready. A running server is stopped with SIGTERM first.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Term()
	began := time.Now()
	if err := s.launch(s.Port()); err != nil {
		t.Fatal(err)
	}
	t.Logf("mariadb: server_id %d restarted in %v", s.opts.ServerID, time.Since(began).Round(time.Millisecond))
}

// ErrorLog is the tail (last 50 lines) of the server's error log.
func (s *Server) ErrorLog() string {
	return tailString(readFrom(s.errorLog, max(0, fileSize(s.errorLog)-64<<10)), 50)
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func readFrom(path string, off int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// process is one run of mariadbd.
type process struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	waitErr error         // valid after done
}

// startProcess runs name on a goroutine locked to its OS thread: the parent
// death signal (see detach) fires when that thread exits, so the thread must
// live as long as the server.
func startProcess(name string, args []string, logPath string) (*process, error) {
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own descriptor
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	detach(cmd)
	p := &process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}
