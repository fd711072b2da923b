package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestReplicateStopsAtStatementLogging: binlog_format STATEMENT and
// binlog_row_image MINIMAL are refused before anything is copied; on a
// ROW server, a session's UPDATE logged as a statement stops the run
// before it with exit 1, the target holding every change before it; a
// restart refuses again and changes nothing.
func TestReplicateStopsAtStatementLogging(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	src := mariadb.Start(t, mariadb.Options{})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	src.Exec(t, "CREATE DATABASE d", "CREATE TABLE d.a (id INT PRIMARY KEY, v INT)", "INSERT INTO d.a VALUES (1, 1), (2, 2)")
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", "d.a", "--quiet"}}

	for _, c := range []struct{ set, want string }{
		{"SET GLOBAL binlog_format=STATEMENT", "has binlog_format=STATEMENT"},
		{"SET GLOBAL binlog_row_image=MINIMAL", "has binlog_row_image=MINIMAL"},
	} {
		src.Exec(t, c.set)
		res := r.run(t, "--stop-at-current")
		src.Exec(t, "SET GLOBAL binlog_format=ROW", "SET GLOBAL binlog_row_image=FULL")
		require.Equal(t, 1, res.code, res.stderr)
		assert.Contains(t, res.stderr, c.want)
		assert.Empty(t, tgt.Query(t, "SHOW DATABASES LIKE 'd'"), "%s: nothing copied", c.set)
	}

	res := r.run(t, "--stop-at-current")
	require.Equal(t, 0, res.code, res.stderr)
	src.Exec(t, "INSERT INTO d.a VALUES (3, 3)")
	before := dump(t, src, "d.a", "id")
	src.Exec(t, "SET SESSION binlog_format=STATEMENT", "UPDATE d.a SET v = v + 10 WHERE id = 1")
	src.Exec(t, "INSERT INTO d.a VALUES (4, 4)")

	for range 2 {
		res = r.run(t, "--stop-at-current")
		require.Equal(t, 1, res.code, res.stderr)
		assert.Contains(t, res.stderr, "a row change logged as a statement at mysql-bin.")
		assert.Contains(t, res.stderr, "UPDATE d.a SET v = v + 10 WHERE id = 1")
		assert.Equal(t, before, dump(t, tgt, "d.a", "id"), "the target holds what came before the statement, once")
	}
}
