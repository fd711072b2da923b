package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestEndToEndSnapshot: --snapshot writes one read line per row the
// tables held, then streams; kill -9 at random moments (inside chunks
// included) and a rerun leave the file as an uninterrupted run does.
func TestEndToEndSnapshot(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024})
	const rows = 10000
	s.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE s (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, amount DECIMAL(10,2))",
		"CREATE TABLE other (id INT PRIMARY KEY)",
		fmt.Sprintf("INSERT INTO s SELECT seq, CONCAT('n', seq), seq / 4 FROM seq_1_to_%d", rows),
		"INSERT INTO other VALUES (1)")
	dir := t.TempDir()
	args := func(out string) []string {
		return []string{"--dsn", s.DSN(mariadb.ReplUser), "--out", out, "--start", "current", "--stop-at-current",
			"--snapshot", "--tables", "d.s", "--server-id", "84", "--quiet"}
	}
	full := filepath.Join(dir, "full.jsonl")
	r := runBinary(t, context.Background(), args(full)...)
	require.Equal(t, 0, r.code, r.stderr)
	out, err := os.ReadFile(full)
	require.NoError(t, err)
	lines := dataLines(out)
	require.Len(t, lines, rows)
	var first struct {
		Type, Schema, Table string
		Row                 map[string]any
		Resume              string
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.Equal(t, "read", first.Type)
	require.Equal(t, map[string]any{"id": 1.0, "name": "n1", "amount": "0.25"}, first.Row)
	require.True(t, strings.HasPrefix(lines[0], `{"type":"read","schema":"d","table":"s","row":{"id":1,"name":"n1","amount":"0.25"},"file":`), lines[0])
	require.NotContains(t, string(out), `"table":"other"`)

	killAtRandomComparing(t, out, filepath.Join(dir, "killed.jsonl"), 20, args,
		func(t *testing.T, want, got []byte) { require.Equal(t, dataLines(want), dataLines(got)) })
}

// TestSnapshotProgressLine: while --snapshot reads two tables, the
// progress line shows the tables done, the rows read and, from the
// server's estimate of the tables' rows (information_schema.TABLES,
// settled here by ANALYZE TABLE), the rows left: read + left is the
// estimate on every line that shows them.
func TestSnapshotProgressLine(t *testing.T) {
	mariadb.Require(t)
	s, est := mariadb.StartEstimated(t) // the estimate the command reads
	r := runBinary(t, context.Background(), "--dsn", s.DSN(mariadb.ReplUser), "--out", filepath.Join(t.TempDir(), "out.jsonl"),
		"--start", "current", "--stop-at-current", "--snapshot", "--tables", "d.*", "--snapshot-readers", "1",
		"--snapshot-chunk-rows", "100", "--progress-every", "20ms")
	require.Equal(t, 0, r.code, r.stderr)

	var snapLines, withLeft int
	var last string
	var keys []string // of the last line with the rows left
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		f, ok := parseLogLine(l)
		require.True(t, ok, "a logrus line: %s", l)
		if f["msg"] != "progress" || f["snapshot_tables"] == "" {
			continue
		}
		assert.Equal(t, "info", f["level"], l)
		assert.Equal(t, "2", f["snapshot_tables"], l)
		assert.Regexp(t, `^[0-2]$`, f["snapshot_tables_done"], l)
		assert.Regexp(t, `^\d+$`, f["snapshot_reads_per_s"], l)
		read, err := strconv.Atoi(f["snapshot_reads"])
		require.NoError(t, err, l)
		snapLines++
		last = l
		if f["snapshot_rows_left"] != "" {
			left, err := strconv.Atoi(f["snapshot_rows_left"])
			require.NoError(t, err, l)
			if f["snapshot_tables_done"] != "2" || left != 0 {
				assert.Equal(t, est, read+left, "read + left is the estimate: %s", l)
			}
			withLeft++
			keys = slices.Sorted(maps.Keys(f))
		}
	}
	require.NotZero(t, withLeft, "a line with the rows left:\n%s", r.stderr)
	// The README's example has the fields of such a line.
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	example := regexp.MustCompile(`(?m)^level=info msg=progress .*$`).FindString(string(readme))
	f, ok := parseLogLine(example)
	require.True(t, ok, "the README's progress line: %q", example)
	assert.Equal(t, keys, slices.Sorted(maps.Keys(f)), example)
	t.Logf("%d snapshot progress lines, %d with the rows left (estimate %d for 25000 rows); the last: %s",
		snapLines, withLeft, est, last)
}
