package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestTailRefusesStatementLogging: a server that logs STATEMENT or MIXED
// is refused before anything is written, and --snapshot refuses
// binlog_row_image=MINIMAL; each message names the variable, its value
// and what to set. The negative control is binlog_format=ROW, which runs.
func TestTailRefusesStatementLogging(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v INT)", "INSERT INTO app.t VALUES (1, 1)")
	dsn := s.DSN(mariadb.ReplUser)
	cases := []struct {
		set, want string
		extra     []string
	}{
		{"SET GLOBAL binlog_format=STATEMENT", "has binlog_format=STATEMENT", nil},
		{"SET GLOBAL binlog_format=MIXED", "has binlog_format=MIXED", nil},
		{"SET GLOBAL binlog_row_image=MINIMAL", "has binlog_row_image=MINIMAL", []string{"--snapshot", "--tables", "app.t"}},
		{"SET GLOBAL binlog_row_image=MINIMAL", "", nil}, // rows without --snapshot: Absent columns, not refused
		{"SET GLOBAL binlog_format=ROW", "", []string{"--snapshot", "--tables", "app.t"}},
	}
	for _, c := range cases {
		s.Exec(t, c.set)
		out := filepath.Join(t.TempDir(), "out.jsonl")
		r := runBinary(t, context.Background(), append([]string{"--dsn", dsn, "--out", out, "--start", "oldest", "--stop-at-current", "--server-id", "77", "--quiet"}, c.extra...)...)
		s.Exec(t, "SET GLOBAL binlog_format=ROW", "SET GLOBAL binlog_row_image=FULL")
		if c.want == "" {
			require.Equal(t, 0, r.code, "%s: %s", c.set, r.stderr)
			continue
		}
		require.Equal(t, 1, r.code, "%s: %s", c.set, r.stderr)
		assert.Contains(t, r.stderr, c.want, c.set)
		assert.Contains(t, r.stderr, "SET GLOBAL "+strings.Fields(c.want)[1][:strings.Index(strings.Fields(c.want)[1], "=")], c.set)
		got, _ := os.ReadFile(out)
		assert.Empty(t, got, "%s: nothing written", c.set)
	}
}

// TestTailStopsAtSessionStatement: on a ROW server, a session logs an
// UPDATE of a selected table as a statement. binlog-tail stops before
// it with exit 1, the file holding every row before it once; the same
// command refuses again and leaves the file as it was. A statement on a
// table --tables leaves out passes.
func TestTailStopsAtSessionStatement(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE app", "CREATE DATABASE percona",
		"CREATE TABLE app.t (id INT PRIMARY KEY, v INT)", "CREATE TABLE percona.checksums (id INT PRIMARY KEY, c INT)",
		"INSERT INTO app.t VALUES (1, 1), (2, 2)")
	s.Exec(t, "SET SESSION binlog_format=STATEMENT", "REPLACE INTO percona.checksums SELECT 1, COUNT(*) FROM app.t")
	s.Exec(t, "INSERT INTO app.t VALUES (3, 3)")
	s.Exec(t, "SET SESSION binlog_format=STATEMENT", "UPDATE app.t SET v = v + 10 WHERE id = 1")
	s.Exec(t, "INSERT INTO app.t VALUES (4, 4)")
	dsn := s.DSN(mariadb.ReplUser)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	args := []string{"--dsn", dsn, "--out", out, "--start", "oldest", "--stop-at-current", "--server-id", "77", "--quiet", "--tables", "app.*"}

	r := runBinary(t, context.Background(), args...)
	require.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "a row change logged as a statement at mysql-bin.")
	assert.Contains(t, r.stderr, "UPDATE app.t SET v = v + 10 WHERE id = 1")
	assert.Contains(t, r.stderr, "--tables")
	first, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, []string{"1", "2", "3"}, insertedIDs(t, first), "the rows before the statement, once")
	assert.Contains(t, string(first), `"query":"REPLACE INTO percona.checksums`, "the unselected table's statement passes as a query line")

	r = runBinary(t, context.Background(), args...)
	require.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "UPDATE app.t SET v = v + 10 WHERE id = 1")
	again, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, string(first), string(again), "a restart writes nothing more and nothing twice")
}

// insertedIDs is the "id" of every insert line, in order.
func insertedIDs(t *testing.T, file []byte) []string {
	t.Helper()
	var ids []string
	for _, line := range bytes.Split(bytes.TrimSpace(file), []byte("\n")) {
		l := string(line)
		if !strings.Contains(l, `"type":"insert"`) {
			continue
		}
		i := strings.Index(l, `"id":`)
		require.GreaterOrEqual(t, i, 0, l)
		rest := l[i+5:]
		ids = append(ids, rest[:strings.IndexAny(rest, ",}")])
	}
	return ids
}
