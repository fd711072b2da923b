package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mdev35643 is MariaDB's test binlog whose last event rotates to a file of
// another name (testdata/mariadb/README.md).
const mdev35643 = "mdev35643_mysql_80_binlog.000001"

// mdevDir is a directory holding only mdev35643.
func mdevDir(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "mariadb", mdev35643))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, mdev35643), data, 0o644))
	return dir
}

// runBounded runs binlog-tail, killed after a while: a run that never
// ends fails the test instead of hanging it.
func runBounded(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := runBinary(t, ctx, args...)
	require.NoError(t, ctx.Err(), "binlog-tail %v never ended: %s", args, r.stderr)
	return r
}

// TestBinlogDirStopAtCurrentAfterRotateToAnotherName: --binlog-dir with
// --stop-at-current ends at the end of the last file present at start
// when that file's Rotate names a file of another name, and a rerun on
// the same output ends too, adding nothing. --tables test.t1 leaves out
// the table the file changes with a statement.
func TestBinlogDirStopAtCurrentAfterRotateToAnotherName(t *testing.T) {
	dir := mdevDir(t)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	args := []string{"--binlog-dir", dir, "--out", out, "--start", "oldest", "--stop-at-current", "--tables", "test.t1", "--quiet"}
	r := runBounded(t, args...)
	require.Equal(t, 0, r.code, r.stderr)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, 105, strings.Count(string(got), `"type":"insert","schema":"test","table":"t1"`))
	assert.Contains(t, string(got), `"file":"`+mdev35643+`"`)

	r = runBounded(t, args...)
	require.Equal(t, 0, r.code, r.stderr)
	again, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, string(got), string(again), "the rerun adds nothing")
}

// TestBinlogDirStartsAtOldest: without --start, --binlog-dir alone reads
// the files from their first event (the output of --start oldest), and
// --dsn starts at the server's current position, as -h and the README
// say.
func TestBinlogDirStartsAtOldest(t *testing.T) {
	dir := mdevDir(t)
	run := func(extra ...string) string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out.jsonl")
		r := runBounded(t, append([]string{"--binlog-dir", dir, "--out", out, "--stop-at-current", "--tables", "test.t1", "--quiet"}, extra...)...)
		require.Equal(t, 0, r.code, r.stderr)
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		return string(got)
	}
	def := run()
	assert.Equal(t, 105, strings.Count(def, `"type":"insert"`), "every row of the files")
	assert.True(t, run("--start", "oldest") == def, "the output of --start oldest")
	assert.Empty(t, run("--start", "current"), "current is the end of the files")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--binlog-dir", dir}, "oldest"},
		{[]string{"--dsn", "u@tcp(127.0.0.1:1)/"}, "current"},
		{[]string{"--dsn", "u@tcp(127.0.0.1:1)/", "--binlog-dir", dir}, "current"}, // DIR archives what the server purged
	} {
		o, err := parseFlags(append(c.args, "--out", "x"), io.Discard)
		require.NoError(t, err)
		assert.Equal(t, c.want, o.Start, "%v", c.args)
	}

	var help bytes.Buffer
	_, err := parseFlags([]string{"-h"}, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	assert.Contains(t, strings.Join(strings.Fields(help.String()), " "),
		"Default: current with --dsn; oldest with --binlog-dir alone")
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), "Default: `current` with `--dsn`; `oldest` with `--binlog-dir` alone")
}
