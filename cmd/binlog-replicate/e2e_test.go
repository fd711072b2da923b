package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

func TestMain(m *testing.M) {
	code := m.Run()
	mariadb.Cleanup()
	th.CleanupCommand()
	os.Exit(code)
}

// binary is the built binlog-replicate (testhelpers.Command).
func binary(t testing.TB) string { return th.Command(t, "binlog-replicate") }

// rootDSN is root over the server's unix socket (root has no TCP account).
func rootDSN(s *mariadb.Server) string { return "root:@unix(" + s.SocketPath() + ")/" }

// rig is a source and a target server and the replicator's arguments.
type rig struct {
	src, tgt *mariadb.Server
	args     []string
	// bin, when set, is the binlog-replicate binary runFor runs (a
	// benchmark's baseline); otherwise this tree's.
	bin string
}

func (r *rig) baseArgs(extra ...string) []string {
	return append(append([]string{"--source", r.src.DSN(mariadb.ReplUser), "--target", rootDSN(r.tgt)}, r.args...), extra...)
}

type result struct {
	code   int
	stderr string
}

// run runs the replicator to its end.
func (r *rig) run(t testing.TB, extra ...string) result {
	t.Helper()
	return r.runFor(t, 60*time.Second, extra...)
}

// runFor runs the replicator to its end, killed after timeout.
func (r *rig) runFor(t testing.TB, timeout time.Duration, extra ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	bin := r.bin
	if bin == "" {
		bin = binary(t)
	}
	cmd := exec.CommandContext(ctx, bin, r.baseArgs(extra...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	began := time.Now()
	err := cmd.Run()
	if _, ok := t.(*testing.T); ok {
		t.Logf("binlog-replicate %v: %v", extra, time.Since(began).Round(time.Millisecond))
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run: %v", err)
	}
	return result{cmd.ProcessState.ExitCode(), stderr.String()}
}

// start starts the replicator in the background.
func (r *rig) start(t *testing.T, extra ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(binary(t), r.baseArgs(extra...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	return cmd, &stderr
}

// dump is every row of a table in primary key order, one line each.
func dump(t *testing.T, s *mariadb.Server, table, order string) []string {
	t.Helper()
	rows := s.Query(t, "SELECT * FROM "+table+" ORDER BY "+order)
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.Join(r, "\t")
	}
	return out
}

// conn is a root connection over the socket, for workloads on their own
// goroutine (mariadb.Server's helpers call t.Fatal).
func conn(s *mariadb.Server) (*client.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return client.ConnectWithContext(ctx, s.SocketPath(), "root", "", "", 5*time.Second)
}

// stat reads a field of the replicator's final log line.
func stat(t testing.TB, stderr, field string) int {
	t.Helper()
	i := strings.LastIndex(stderr, "binlog-replicate stopped")
	require.GreaterOrEqual(t, i, 0, "no final log line in:\n%s", stderr)
	line := stderr[i:]
	j := strings.Index(line, " "+field+"=")
	require.GreaterOrEqual(t, j, 0, "no %s in %s", field, line)
	var n int
	_, err := fmt.Sscanf(line[j+len(field)+2:], "%d", &n)
	require.NoError(t, err)
	return n
}

func TestReplicateSnapshotThenStream(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	src.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(100), n INT UNSIGNED, ts TIMESTAMP(3) NULL, b VARBINARY(8))",
		"CREATE TABLE other (id INT PRIMARY KEY)",
		"INSERT INTO a SELECT seq, REPEAT('x', seq % 90), 4000000000 + seq, '2024-01-02 03:04:05.678', UNHEX('00FF') FROM seq_1_to_3000",
		// a long unique key: a hidden hash column ends its row images
		"CREATE TABLE lu (id INT PRIMARY KEY, t TEXT, UNIQUE (t))", "INSERT INTO lu SELECT seq, CONCAT('t', seq) FROM seq_1_to_100")
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", "d.a,d.lu", "--chunk", "700", "--quiet"}}
	res := r.run(t, "--stop-at-current")
	require.Equal(t, 0, res.code, res.stderr)
	src.Exec(t, "USE d",
		"INSERT INTO a SELECT seq, 'new', seq, NULL, NULL FROM seq_5001_to_5100",
		"UPDATE a SET v = 'u' WHERE id % 7 = 0",
		"UPDATE a SET id = id + 100000 WHERE id BETWEEN 20 AND 40",
		"DELETE FROM a WHERE id % 11 = 0",
		"INSERT INTO other VALUES (1)",
		"INSERT INTO lu VALUES (101, 'new')", "UPDATE lu SET t = CONCAT(t, '-u') WHERE id % 3 = 0", "DELETE FROM lu WHERE id % 5 = 0")
	res = r.run(t, "--stop-at-current")
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, dump(t, src, "d.a", "id"), dump(t, tgt, "d.a", "id"))
	require.Equal(t, dump(t, src, "d.lu", "id"), dump(t, tgt, "d.lu", "id"))
	require.Empty(t, tgt.Query(t, "SHOW TABLES FROM d LIKE 'other'"), "other tables are not replicated")

	// The target connection counts found rows: an UPDATE to the same
	// values finds its row (1), where the default would say 0 and look
	// like a missing row.
	dsn, err := binlogstream.ParseDSN(rootDSN(tgt))
	require.NoError(t, err)
	for _, found := range []bool{true, false} {
		c, err := connect(context.Background(), dsn, found)
		require.NoError(t, err)
		res, err := c.Execute("UPDATE d.a SET v = v WHERE id = 1")
		require.NoError(t, err)
		assert.Equal(t, map[bool]uint64{true: 1, false: 0}[found], res.AffectedRows, "found rows %v", found)
		c.Close()
	}

	// DDL on a replicated table stops the run, naming it.
	src.Exec(t, "USE d", "ALTER TABLE a ADD COLUMN extra INT")
	res = r.run(t, "--stop-at-current")
	require.Equal(t, 1, res.code, res.stderr)
	require.Contains(t, res.stderr, "DDL on replicated table d.a at mysql-bin.")
	require.Contains(t, res.stderr, "ALTER TABLE a ADD COLUMN extra INT")
}

// A new table that --tables matches stops the run as DDL on a replicated
// table does: the table list is the snapshot's.
func TestReplicateNewMatchingTableStops(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	src.Exec(t, "CREATE DATABASE d", "CREATE TABLE d.a1 (id INT PRIMARY KEY)", "INSERT INTO d.a1 VALUES (1)")
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", "d.a*", "--quiet"}}
	res := r.run(t, "--stop-at-current")
	require.Equal(t, 0, res.code, res.stderr)
	cmd, stderr := r.start(t) // streaming when the table comes
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	require.Eventually(t, func() bool {
		return src.QueryValue(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'") != "0"
	}, 20*time.Second, 5*time.Millisecond, "no binlog dump")
	// A second replicator under the same name is refused.
	second := r.run(t)
	require.Equal(t, 1, second.code, second.stderr)
	require.Contains(t, second.stderr, `another binlog-replicate is running with --name "default" and --state-db "binlogstream" on this target`)
	src.Exec(t, "CREATE TABLE d.unrelated (id INT PRIMARY KEY)", "CREATE TABLE d.a2 (id INT PRIMARY KEY)")
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("still running:\n%s", stderr)
	}
	require.Equal(t, 1, cmd.ProcessState.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), "DDL on d.a2, which matches --tables but is not in the snapshot, at mysql-bin.")
	res = r.run(t, "--stop-at-current") // and at a restart, before streaming
	require.Equal(t, 1, res.code, res.stderr)
	require.Contains(t, res.stderr, "table d.a2 matches --tables but was not in the snapshot")
}

// Tables binlog-replicate cannot apply by primary key are refused at the
// start, each with its reason: a MariaDB system-versioned table (its
// binlog holds the history rows too), a view, a table without a primary
// key.
func TestReplicateRefusesTables(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	src.Exec(t, "CREATE DATABASE d", "CREATE TABLE d.ok (id INT PRIMARY KEY)",
		"CREATE TABLE d.sv (id INT PRIMARY KEY, a INT) WITH SYSTEM VERSIONING",
		"CREATE VIEW d.vw AS SELECT id FROM d.ok", "CREATE TABLE d.nopk (a INT)")
	for table, want := range map[string]string{
		"d.sv":   "source: table d.sv is system-versioned (MariaDB): binlog-replicate does not replicate such tables",
		"d.vw":   "source: d.vw is a view, not a base table",
		"d.nopk": "source: table d.nopk has no primary key",
	} {
		r := &rig{src: src, tgt: tgt, args: []string{"--tables", "d.ok," + table, "--quiet"}}
		res := r.run(t, "--stop-at-current")
		require.Equal(t, 1, res.code, res.stderr)
		require.Contains(t, res.stderr, want)
	}
}

// A target that diverged from the source (a row deleted or added behind
// the replicator's back) stops the run with the table, the position and
// what is wrong, and the checkpoint does not move past the change: the
// same error comes again until the target is repaired.
func TestReplicateDivergenceStops(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	src.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE d.a (id INT PRIMARY KEY, v INT)",
		"INSERT INTO d.a SELECT seq, seq FROM seq_1_to_10")
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", "d.a", "--quiet"}}
	res := r.run(t, "--stop-at-current")
	require.Equal(t, 0, res.code, res.stderr)
	// A stop at the target is no warning: --quiet shows nothing.
	require.Empty(t, res.stderr)

	tgt.Exec(t, "DELETE FROM d.a WHERE id = 2")
	src.Exec(t, "UPDATE d.a SET v = 20 WHERE id = 2")
	for range 2 {
		res = r.run(t, "--stop-at-current")
		require.Equal(t, 1, res.code, res.stderr)
		require.Regexp(t, `update d\.a at mysql-bin\.\d+:\d+ \(gtid 0-1-\d+\): the target has no row with primary key id=2 \(the target diverged`, res.stderr)
	}
	tgt.Exec(t, "INSERT INTO d.a VALUES (2, 2)") // repaired: the update applies
	res = r.run(t, "--stop-at-current")
	require.Equal(t, 0, res.code, res.stderr)

	tgt.Exec(t, "INSERT INTO d.a VALUES (11, 0)")
	src.Exec(t, "INSERT INTO d.a VALUES (11, 11)")
	res = r.run(t, "--stop-at-current")
	require.Equal(t, 1, res.code, res.stderr)
	require.Contains(t, res.stderr, "insert into d.a at mysql-bin.")
	require.Contains(t, res.stderr, "duplicate key (the target diverged from the source)")
	tgt.Exec(t, "DELETE FROM d.a WHERE id = 11")
	loud := &rig{src: src, tgt: tgt, args: []string{"--tables", "d.a"}}
	res = loud.run(t, "--stop-at-current")
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stderr, `level=info msg="binlog-replicate stopped"`)
	require.NotContains(t, res.stderr, "level=warning")
	require.Equal(t, dump(t, src, "d.a", "id"), dump(t, tgt, "d.a", "id"))
}
