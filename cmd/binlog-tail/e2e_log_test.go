package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestStderrIsLogLines: a run that warns (a --tables pattern that matches
// no table yet, a keyless table skipped by the snapshot, reconnects to a
// server that died), logs progress and fails (the only failover server is
// down) writes nothing on stderr but logrus lines, and then its error as
// the one plain line "binlog-tail: ...". The progress lines carry the
// GTID position and the snapshot's tables, reads and rows left.
func TestStderrIsLogLines(t *testing.T) {
	mariadb.Require(t)
	bin := binary(t)
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE a (id INT PRIMARY KEY, pad VARCHAR(40))", "CREATE TABLE k (v INT)",
		"INSERT INTO a SELECT seq, 'x' FROM seq_1_to_30000", "INSERT INTO k VALUES (1)",
		"ANALYZE TABLE a") // the estimate of its rows (TABLE_ROWS) is known before binlog-tail asks
	out := filepath.Join(t.TempDir(), "out.jsonl")
	cmd := exec.Command(bin, "--dsn", s.DSN(mariadb.ReplUser), "--gtid", "--start", "current", "--out", out, "--server-id", "96",
		"--failover-to", "repl:unused@tcp(127.0.0.1:1)/",
		"--tables", "d.*,later.t", "--tables-created-later", "--snapshot", "--snapshot-keyless", "skip",
		"--snapshot-readers", "1", "--snapshot-chunk-rows", "100", "--progress-every", "20ms")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()
	waitFile(t, out, exited, "the snapshot's reads", func(b []byte) bool {
		return bytes.Count(b, []byte(`{"type":"read","schema":"d","table":"a"`)) == 30000
	})
	time.Sleep(200 * time.Millisecond) // progress lines past the snapshot
	s.Kill()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, stderr.String())
		assert.Equal(t, 1, ee.ExitCode())
	case <-time.After(60 * time.Second):
		t.Fatal("binlog-tail did not give up")
	}

	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	assert.True(t, strings.HasPrefix(last, "binlog-tail: "), last)
	assert.Contains(t, last, "failover")
	_, ok := parseLogLine(last)
	assert.False(t, ok, "the error is a plain line: %s", last)
	levels := map[string]int{}
	var snapshot, leftLines int
	var progress string
	for _, l := range lines[:len(lines)-1] {
		f, ok := parseLogLine(l)
		require.True(t, ok, "a logrus line: %q\nstderr:\n%s", l, stderr.String())
		levels[f["level"]]++
		if f["msg"] != "progress" {
			continue
		}
		progress = l
		assert.Equal(t, "info", f["level"], l)
		assert.True(t, strings.HasPrefix(f["at"], "gtid "), "the GTID position: %s", l)
		for _, k := range []string{"rows", "rows_per_s", "lag"} {
			assert.NotEmpty(t, f[k], "%s in %s", k, l)
		}
		if f["snapshot_tables"] != "" {
			snapshot++
			assert.NotEmpty(t, f["snapshot_reads"], l)
			assert.NotEmpty(t, f["snapshot_reads_per_s"], l)
			assert.NotEmpty(t, f["snapshot_tables_done"], l)
			if f["snapshot_rows_left"] != "" {
				leftLines++
			}
		}
	}
	t.Logf("%d lines by level %v, %d with the snapshot, %d with its rows left; the last progress line: %s; the error: %s",
		len(lines), levels, snapshot, leftLines, progress, last)
	assert.NotZero(t, snapshot, "progress lines with the snapshot")
	assert.NotZero(t, leftLines, "progress lines with the rows left")
	assert.Contains(t, stderr.String(), "later.t matches no table yet")
	assert.Contains(t, stderr.String(), "table=d.k")
	assert.GreaterOrEqual(t, levels["warning"], 3, "the two warnings at the start and a reconnect's")
}
