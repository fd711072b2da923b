package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestEndToEndSnapshotKeyless: --snapshot of every table, on a database
// with keyed tables and two without a key (one with no index, one whose
// only UNIQUE key is nullable), exits 1 at start with no line written,
// naming both tables and the two ways out; --snapshot-keyless skip reads
// the keyed tables and warns once for each keyless one; --tables leaving
// them out reads the keyed tables with no warning.
func TestEndToEndSnapshotKeyless(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE a_keyed (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE b_nokey (v INT)",
		"CREATE TABLE c_unique (u INT NOT NULL, v INT, UNIQUE KEY (u))",
		"CREATE TABLE d_nullable (v INT, UNIQUE KEY (v))",
		"INSERT INTO a_keyed SELECT seq, seq FROM seq_1_to_30",
		"INSERT INTO c_unique SELECT seq, seq FROM seq_1_to_10",
		"INSERT INTO d_nullable SELECT seq FROM seq_1_to_5")
	file, pos := s.MasterStatus(t)
	from := fmt.Sprintf("%s:%d", file, pos) // the keyless table's rows are inserted after
	s.Exec(t, "USE d", "INSERT INTO b_nokey SELECT seq FROM seq_1_to_20")
	dir := t.TempDir()
	run := func(name string, extra ...string) (result, string) {
		t.Helper()
		out := filepath.Join(dir, name)
		r := runBinary(t, context.Background(), append([]string{"--dsn", s.DSN(mariadb.ReplUser), "--out", out,
			"--start", from, "--stop-at-current", "--snapshot", "--server-id", "85"}, extra...)...)
		got, err := os.ReadFile(out)
		if !os.IsNotExist(err) {
			require.NoError(t, err)
		}
		return r, string(got)
	}
	reads := func(out, table string) int {
		return strings.Count(out, `{"type":"read","schema":"d","table":"`+table+`"`)
	}

	r, out := run("refused.jsonl")
	require.Equal(t, 1, r.code, r.stderr)
	// One error line, after info lines at most.
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	for _, l := range lines[:len(lines)-1] {
		f, ok := parseLogLine(l)
		assert.True(t, ok && f["level"] == "info", "an info line: %s", l)
	}
	r.stderr = lines[len(lines)-1]
	assert.Contains(t, r.stderr, "binlog-tail: --snapshot: `d`.`b_nokey`, `d`.`d_nullable`: no primary key and no UNIQUE key of NOT NULL columns")
	assert.Contains(t, r.stderr, "name the tables to read with --tables, leaving these out, or add --snapshot-keyless skip")
	assert.Empty(t, dataLines([]byte(out)), "refused before any line")

	r, out = run("skipped.jsonl", "--snapshot-keyless", "skip")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 30, reads(out, "a_keyed"))
	assert.Equal(t, 10, reads(out, "c_unique"))
	assert.Zero(t, reads(out, "b_nokey")+reads(out, "d_nullable"))
	assert.Equal(t, 20, strings.Count(out, `{"type":"insert","schema":"d","table":"b_nokey"`), "its changes are written")
	for _, tbl := range []string{"d.b_nokey", "d.d_nullable"} {
		assert.Equal(t, 1, strings.Count(r.stderr, "table="+tbl), "one warning naming %s: %s", tbl, r.stderr)
	}
	assert.Equal(t, 2, strings.Count(r.stderr, "level=warning"), r.stderr)
	assert.Contains(t, r.stderr, "its rows are not read, its changes stream as they come")

	r, keyed := run("keyed.jsonl", "--tables", "d.a_keyed,d.c_unique")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "level=warning")
	assert.Equal(t, 30, reads(keyed, "a_keyed"))
	assert.Equal(t, 10, reads(keyed, "c_unique"))

	r, _ = run("bad.jsonl", "--snapshot-keyless", "read")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, `--snapshot-keyless "read": want refuse or skip`)

	// What the README says is what the runs above showed.
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), "`refuse` (default) exits 1 at start, before any line, naming every such table and the ways out "+
		"(`--tables` leaving them out, or `skip`); `skip` writes their changes but not their rows, with a warning naming each")
}
