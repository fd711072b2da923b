package mariadb

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// fakeTB records Skip and Fatal instead of ending the test.
type fakeTB struct {
	testing.TB
	skipped, fataled string
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Skip(args ...any)  { f.skipped = fmt.Sprint(args...) }
func (f *fakeTB) Fatal(args ...any) { f.fataled = fmt.Sprint(args...) }

func TestRequire(t *testing.T) {
	missing := func(string) (string, error) { return "", errors.New("not found") }
	found := func(name string) (string, error) { return "/usr/sbin/" + name, nil }
	for _, tc := range []struct {
		env          string
		find         func(string) (string, error)
		skip, fatal  bool
		wantInOutput string
	}{
		{env: "", find: missing, skip: true, wantInOutput: RequireEnv},
		{env: "0", find: missing, skip: true, wantInOutput: RequireEnv},
		{env: "1", find: missing, fatal: true, wantInOutput: "mariadbd and mariadb-install-db"},
		{env: "yes", find: missing, fatal: true},
		{env: "1", find: found},
		{env: "", find: found},
	} {
		t.Run("env="+tc.env, func(t *testing.T) {
			t.Setenv(RequireEnv, tc.env)
			f := &fakeTB{TB: t}
			requireWith(f, tc.find)
			assert.Equal(t, tc.skip, f.skipped != "", "skipped: %q", f.skipped)
			assert.Equal(t, tc.fatal, f.fataled != "", "fataled: %q", f.fataled)
			assert.Contains(t, f.skipped+f.fataled, tc.wantInOutput)
		})
	}
}

func eventTypes(evs []BinlogEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.EventType)
	}
	return out
}

func count(types []string, want string) int {
	n := 0
	for _, t := range types {
		if t == want {
			n++
		}
	}
	return n
}

func TestServerBinlog(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{ServerID: 7, MaxBinlogSize: 16 << 10, BinlogRowEventMaxSize: 1024})
	assert.Equal(t, "", s.GTIDBinlogPos(t), "accounts must not be binlogged")
	assert.Equal(t, "7", s.QueryValue(t, "SELECT @@server_id"))
	assert.Equal(t, "1", s.QueryValue(t, "SELECT @@gtid_strict_mode"))
	assert.Equal(t, "ROW", s.QueryValue(t, "SELECT @@binlog_format"))
	assert.Less(t, len(s.SocketPath()), 107)

	file, pos := s.MasterStatus(t)
	s.Exec(t,
		"CREATE DATABASE d",
		"USE d",
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(200))",
		"INSERT INTO t VALUES (1, 'a'), (2, NULL)",
		// 20 rows of ~200 bytes do not fit one 1024-byte Rows event.
		"INSERT INTO t SELECT seq, REPEAT('x', 200) FROM seq_10_to_29",
	)
	assert.Equal(t, [][]string{{"1", "a"}, {"2", "NULL"}}, s.Query(t, "SELECT id, v FROM d.t WHERE id < 3 ORDER BY id"))
	assert.Equal(t, "0-7-4", s.GTIDBinlogPos(t))

	evs := s.BinlogEvents(t, file)
	types := eventTypes(evs)
	assert.Equal(t, 2, count(types, "Table_map"), "%v", types)
	assert.GreaterOrEqual(t, count(types, "Write_rows_v1"), 1+4, "%v", types)
	assert.Contains(t, types, "Annotate_rows")
	var sawPos bool
	for _, e := range evs {
		if e.Pos == pos {
			sawPos = true
		}
	}
	assert.True(t, sawPos, "MasterStatus position %d is not an event start", pos)

	// The repl account can do what a streamer needs.
	c := s.Conn(t, ReplUser)
	_, err := c.Execute("SHOW MASTER STATUS")
	require.NoError(t, err)
	_, err = c.Execute("SHOW BINLOG EVENTS IN '" + file + "' LIMIT 1")
	require.NoError(t, err)
	_, err = c.Execute("INSERT INTO d.t VALUES (100, 'no')")
	assert.Error(t, err, "repl must not write")
	assert.Contains(t, s.DSN(ReplUser), fmt.Sprintf("repl:replpass@tcp(127.0.0.1:%d)/", s.Port()))

	// Rotation by size and by FLUSH, then PURGE.
	s.Exec(t, "USE d", "INSERT INTO t SELECT seq, REPEAT('y', 200) FROM seq_1000_to_1099")
	s.FlushBinaryLogs(t)
	logs := s.BinaryLogs(t)
	require.GreaterOrEqual(t, len(logs), 3, "%v", logs)
	cur, _ := s.MasterStatus(t)
	assert.Equal(t, logs[len(logs)-1].Name, cur)
	s.PurgeBinaryLogsTo(t, cur)
	after := s.BinaryLogs(t)
	require.Len(t, after, 1)
	assert.Equal(t, cur, after[0].Name)
}

func TestKillAndRestart(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{})
	s.Exec(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1)")
	port, pid := s.Port(), s.PID()
	require.NotZero(t, pid)
	before := s.GTIDBinlogPos(t)

	s.Kill()
	assert.Zero(t, s.PID())
	assert.Error(t, s.TryExec("SELECT 1"))
	s.Kill() // no-op when stopped

	s.Restart(t)
	assert.Equal(t, port, s.Port())
	assert.NotEqual(t, pid, s.PID())
	assert.Equal(t, before, s.GTIDBinlogPos(t))
	assert.Equal(t, "1", s.QueryValue(t, "SELECT COUNT(*) FROM d.t"))
	s.Exec(t, "INSERT INTO d.t VALUES (2)")
	assert.Equal(t, "0-1-4", s.GTIDBinlogPos(t))

	s.Term()
	assert.Contains(t, s.ErrorLog(), "Shutdown complete")
	s.Restart(t)
	assert.Equal(t, "2", s.QueryValue(t, "SELECT COUNT(*) FROM d.t"))
	// A clean restart and a crash restart each open a new binlog file.
	assert.Len(t, s.BinaryLogs(t), 3)
}

func TestStartFailsFast(t *testing.T) {
	t.Parallel()
	Require(t)
	s := create(t, Options{ExtraArgs: []string{"--no-such-option"}})
	began := time.Now()
	err := s.launchOnFreePort()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no-such-option", "the error log tail")
	assert.Less(t, time.Since(began), 10*time.Second)
	assert.Zero(t, s.PID())
}

func TestPortInUse(t *testing.T) {
	t.Parallel()
	Require(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	s := create(t, Options{})
	err = s.launch(l.Addr().(*net.TCPAddr).Port)
	assert.ErrorIs(t, err, errPortInUse)
	assert.Zero(t, s.PID())
}

func TestPairReplicatesAndPromotes(t *testing.T) {
	t.Parallel()
	p := StartPair(t, Options{})
	pr, rp := p.Primary, p.Replica
	assert.Equal(t, "1", rp.QueryValue(t, "SELECT @@read_only"))
	assert.Equal(t, "2", rp.QueryValue(t, "SELECT @@server_id"))

	app := pr.Conn(t, AppUser)
	for _, q := range []string{
		"CREATE DATABASE d",
		"CREATE TABLE d.t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO d.t VALUES (1, 1), (2, 2)",
		"UPDATE d.t SET v = v + 1",
	} {
		_, err := app.Execute(q)
		require.NoError(t, err, q)
	}
	p.WaitReplicaCaughtUp(t)
	assert.Equal(t, [][]string{{"1", "2"}, {"2", "3"}}, rp.Query(t, "SELECT id, v FROM d.t ORDER BY id"))
	assert.Equal(t, pr.GTIDBinlogPos(t), rp.GTIDBinlogPos(t), "log_slave_updates")

	_, err := rp.Conn(t, AppUser).Execute("INSERT INTO d.t VALUES (3, 3)")
	assert.ErrorContains(t, err, "read-only")

	primaryPos := pr.GTIDBinlogPos(t)
	pr.Kill()
	promoted := p.Promote(t)
	require.Same(t, rp, promoted)
	assert.Equal(t, "0", rp.QueryValue(t, "SELECT @@read_only"))
	assert.Nil(t, rp.SlaveStatus(t))

	_, err = rp.Conn(t, AppUser).Execute("INSERT INTO d.t VALUES (3, 3)")
	require.NoError(t, err)
	after := rp.GTIDBinlogPos(t)
	assert.Equal(t, "0-2-5", after)
	want, err := mysql.ParseMariadbGTIDSet(primaryPos)
	require.NoError(t, err)
	got, err := mysql.ParseMariadbGTIDSet(after)
	require.NoError(t, err)
	assert.True(t, got.Contain(want), "%s does not contain %s", after, primaryPos)
	assert.True(t, strings.HasPrefix(primaryPos, "0-1-"), primaryPos)
}

// TestFixtures: MixedTable writes the rows asked for, a tenth of d NULL,
// in statements of at most 100k rows; StartEstimated's estimate is the
// settled TABLE_ROWS of its two tables.
func TestFixtures(t *testing.T) {
	Require(t)
	s, est := StartEstimated(t)
	assert.InDelta(t, 25000, est, 5000)
	s.MixedTable(t, "m", 1234)
	assert.Equal(t, "1234 123 1234", s.QueryValue(t, "SELECT CONCAT_WS(' ', COUNT(*), SUM(d IS NULL), MAX(id)) FROM m.t"))
}
