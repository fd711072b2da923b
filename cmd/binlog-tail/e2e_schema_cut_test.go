package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestEndToEndCutSchemaHistory: FILE.schema cut inside its last record,
// the record of an ALTER whose query line and later rows are in FILE, is
// refused (exit 1, both files left as they were), at every sampled
// offset inside the record. The same cut with FILE also cut back to
// before the ALTER's line, what a crash while the record was written
// leaves, is accepted: the rerun reads the ALTER again, and FILE and
// FILE.schema equal an uninterrupted run's.
func TestEndToEndCutSchemaHistory(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO d.t VALUES (1, 'a')",
		"ALTER TABLE d.t ADD COLUMN w INT", "INSERT INTO d.t VALUES (2, 'b', 2)")
	dir := t.TempDir()
	args := func(out string) []string {
		return []string{"--dsn", s.DSN(mariadb.ReplUser), "--out", out, "--start", "oldest", "--stop-at-current", "--server-id", "83"}
	}
	ref := filepath.Join(dir, "ref.jsonl")
	r := runBinary(t, context.Background(), args(ref)...)
	require.Equal(t, 0, r.code, r.stderr)
	refLines, err := os.ReadFile(ref)
	require.NoError(t, err)
	refHist, err := os.ReadFile(ref + ".schema")
	require.NoError(t, err)
	last := bytes.LastIndexByte(refHist[:len(refHist)-1], '\n') + 1 // the last record's first byte
	require.Contains(t, string(refHist[last:]), "ALTER TABLE d.t ADD COLUMN w INT")
	alter := bytes.Index(refLines, []byte(`{"type":"query","schema":"","query":"ALTER TABLE d.t`))
	require.Greater(t, alter, 0)

	n := len(refHist) - last
	var offsets []int
	for k := 1; k < n; k += max(1, n/10) {
		offsets = append(offsets, k)
	}
	offsets = append(offsets, n-1)
	out := filepath.Join(dir, "out.jsonl")
	for _, k := range offsets {
		cut := refHist[:last+k]
		require.NoError(t, os.WriteFile(out, refLines, 0o600))
		require.NoError(t, os.WriteFile(out+".schema", cut, 0o600))
		r := runBinary(t, context.Background(), args(out)...)
		assert.Equal(t, 1, r.code, "cut at %d of %d: %s", k, n, r.stderr)
		assert.Contains(t, r.stderr, out+".schema ends in a cut record, and "+out+" has lines past the DDL statement that record held "+
			"(ALTER TABLE d.t ADD COLUMN w INT at mysql-bin.000001:")
		assert.Contains(t, r.stderr, "restore "+out+".schema as it was written with "+out+", or move both aside and start again (--start)")
		lines, _ := os.ReadFile(out)
		hist, _ := os.ReadFile(out + ".schema")
		assert.Equal(t, refLines, lines, "refused: %s left as it was", out)
		assert.Equal(t, cut, hist, "refused: %s.schema left as it was", out)

		// A crash while the record was written: no line of the ALTER yet.
		require.NoError(t, os.WriteFile(out, refLines[:alter], 0o600))
		r = runBinary(t, context.Background(), args(out)...)
		require.Equal(t, 0, r.code, "cut at %d, FILE before the ALTER: %s", k, r.stderr)
		lines, _ = os.ReadFile(out)
		hist, _ = os.ReadFile(out + ".schema")
		assert.Equal(t, string(refLines), string(lines), "cut at %d: the rerun writes what an uninterrupted run does", k)
		assert.Equal(t, string(refHist), string(hist), "cut at %d: the ALTER's record written again", k)
	}
	t.Logf("%d cuts of a %d-byte last record: each refused with its lines; accepted and rewritten without", len(offsets), n)
}
