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

// TestEndToEndResumeWithoutSchemaHistory: a non-empty output whose
// FILE.schema is missing is refused, online and with --binlog-dir, before
// anything touches the output (a partial last line included), with a
// message naming the missing file, why it matters and the way out. The
// same cut output with its history restored resumes to the uninterrupted
// run's bytes (the negative control: only the missing history is
// refused). An empty output, or one holding only a partial line, starts
// afresh whether or not a stale FILE.schema lies beside it.
//
// On MariaDB 10.11's default binlog_row_metadata=NO_LOG the column names
// come from the history only: rebuilt after the cut point, the rows of t
// there would be positional (offline: t's CREATE is before the cut; online:
// the ALTER after the cut leaves the new snapshot's t unproven there).
func TestEndToEndResumeWithoutSchemaHistory(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO t SELECT seq, CONCAT('v', seq) FROM seq_1_to_20",
		"CREATE TABLE marker (id INT)",
		"INSERT INTO t SELECT seq, CONCAT('v', seq) FROM seq_21_to_40",
		"ALTER TABLE t ADD COLUMN w INT",
		"INSERT INTO t SELECT seq, 'late', seq FROM seq_41_to_60",
	)
	dsn := s.DSN(mariadb.ReplUser)
	for _, mode := range []struct {
		name   string
		source []string
	}{
		{"server", []string{"--dsn", dsn, "--server-id", "84"}},
		{"binlog-dir", []string{"--binlog-dir", s.DataDir()}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			dir := t.TempDir()
			run := func(out string) result {
				t.Helper()
				return runBinary(t, context.Background(), append([]string{"--out", out, "--start", "oldest", "--stop-at-current", "--quiet"}, mode.source...)...)
			}
			ref := filepath.Join(dir, "ref.jsonl")
			r := run(ref)
			require.Equal(t, 0, r.code, r.stderr)
			want, err := os.ReadFile(ref)
			require.NoError(t, err)
			require.NotContains(t, string(want), `"positional":true`, "t is created in the binlog: every row has names")
			require.Contains(t, string(want), `"row":{"id":60,"v":"late","w":60}`)
			history, err := os.ReadFile(ref + ".schema")
			require.NoError(t, err)

			// The output as a run killed after CREATE TABLE marker left it,
			// a partial line after.
			cut := bytes.Index(want, []byte(`"query":"CREATE TABLE marker`))
			require.Positive(t, cut)
			cut += bytes.IndexByte(want[cut:], '\n') + 1
			require.Contains(t, string(want[:cut]), `"row":{"id":20,"v":"v20"}`)
			killed := append(bytes.Clone(want[:cut]), want[cut:cut+30]...)

			t.Run("missing history refused", func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "out.jsonl")
				require.NoError(t, os.WriteFile(out, killed, 0o600))
				r := run(out)
				assert.Equal(t, 1, r.code, r.stderr)
				assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
				for _, sub := range []string{out + ".schema", "missing", "column names", "move " + out + " aside"} {
					assert.Contains(t, r.stderr, sub)
				}
				got, err := os.ReadFile(out)
				require.NoError(t, err)
				assert.Equal(t, killed, got, "the output is left untouched, its partial line too")
				assert.NoFileExists(t, out+".schema", "no history is made up")
			})

			t.Run("restored history resumes", func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "out.jsonl")
				require.NoError(t, os.WriteFile(out, killed, 0o600))
				require.NoError(t, os.WriteFile(out+".schema", history, 0o600))
				r := run(out)
				require.Equal(t, 0, r.code, r.stderr)
				got, err := os.ReadFile(out)
				require.NoError(t, err)
				assert.True(t, bytes.Equal(want, got), "the uninterrupted run's bytes: %s", firstDiff(want, got))
			})

			t.Run("fresh start", func(t *testing.T) {
				for _, tc := range []struct {
					name          string
					content       []byte
					staleSchema   bool
					schemaContent []byte
				}{
					{"empty", nil, false, nil},
					{"empty with a stale history", nil, true, history},
					{"partial line only", want[:30], false, nil},
					{"partial line only, a history header only beside", want[:30], true, []byte("binlogstream schema history v1\n")},
				} {
					out := filepath.Join(t.TempDir(), "out.jsonl")
					require.NoError(t, os.WriteFile(out, tc.content, 0o600))
					if tc.staleSchema {
						require.NoError(t, os.WriteFile(out+".schema", tc.schemaContent, 0o600))
					}
					r := run(out)
					require.Equal(t, 0, r.code, "%s: %s", tc.name, r.stderr)
					got, err := os.ReadFile(out)
					require.NoError(t, err)
					assert.True(t, bytes.Equal(want, got), "%s: %s", tc.name, firstDiff(want, got))
				}
			})
		})
	}
}
