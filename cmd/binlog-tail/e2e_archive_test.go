package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestEndToEndArchiveThenLive: a workload over many rotated files; some
// are copied to an archive and purged from the server. binlog-tail with
// --dsn and --binlog-dir from the oldest position writes what an
// uninterrupted run on the unpurged server wrote, byte for byte, also
// when SIGKILLed at random before, at and after the switch; without the
// archive a resume inside a purged file fails, naming the way out.
func TestEndToEndArchiveThenLive(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024, MaxBinlogSize: 64 << 10})
	workload(t, s)
	// Many small transactions: a file rotates (by size) every few.
	s.Exec(t, "CREATE TABLE d.u (id INT PRIMARY KEY, pad VARCHAR(200))")
	for i := 0; i < 40; i++ {
		s.Exec(t, "USE d", fmt.Sprintf("INSERT INTO d.u SELECT seq, REPEAT('u', 150) FROM seq_%d_to_%d", i*200+1, i*200+200))
		if i%10 == 9 {
			s.Exec(t, fmt.Sprintf("UPDATE d.u SET pad = 'v' WHERE id %% 7 = %d", i%7))
		}
	}
	dsn := s.DSN(mariadb.ReplUser)
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.jsonl")
	r := runBinary(t, context.Background(), "--dsn", dsn, "--out", ref, "--start", "oldest", "--stop-at-current", "--quiet", "--server-id", "91")
	require.Equal(t, 0, r.code, r.stderr)
	want, err := os.ReadFile(ref)
	require.NoError(t, err)
	checkReference(t, want)

	refGTID := filepath.Join(dir, "ref-gtid.jsonl")
	r = runBinary(t, context.Background(), "--dsn", dsn, "--out", refGTID, "--gtid", "--start", "oldest", "--stop-at-current", "--quiet", "--server-id", "91")
	require.Equal(t, 0, r.code, r.stderr)
	wantGTID, err := os.ReadFile(refGTID)
	require.NoError(t, err)

	logs := s.BinaryLogs(t)
	require.GreaterOrEqual(t, len(logs), 12, "many rotated files")
	purgeTo := len(logs) / 2
	// The archive overlaps the server by two files, as a copy taken before
	// the purge does.
	archive := t.TempDir()
	for _, l := range logs[:purgeTo+2] {
		data, err := os.ReadFile(filepath.Join(s.DataDir(), l.Name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(archive, l.Name), data, 0o644))
	}
	s.PurgeBinaryLogsTo(t, logs[purgeTo].Name)
	require.Equal(t, logs[purgeTo].Name, s.BinaryLogs(t)[0].Name)
	t.Logf("%d files, %d purged, %d archived", len(logs), purgeTo, purgeTo+2)

	args := func(out string, extra ...string) []string {
		return append([]string{"--dsn", dsn, "--binlog-dir", archive, "--out", out, "--start", "oldest", "--stop-at-current", "--quiet", "--server-id", "92"}, extra...)
	}
	t.Run("uninterrupted", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "a.jsonl")
		r := runBinary(t, context.Background(), args(out)...)
		require.Equal(t, 0, r.code, r.stderr)
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "archive then server = the unpurged server")
	})

	t.Run("kill -9 across the switch", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "k.jsonl")
		// Half the kills anywhere, half within 256 KiB of the switch.
		at := int64(bytes.Index(want, []byte(`"file":"`+logs[purgeTo].Name+`"`)))
		require.Positive(t, at)
		n := 0
		kills := killAtSizes(t, out, func() int64 {
			if n++; n%2 == 0 {
				return rand.Int64N(int64(len(want)))
			}
			return max(0, at-256<<10+rand.Int64N(512<<10))
		}, 24, args(out)...)
		t.Logf("%d kills", kills)
		compareKilled(t, want, out, requireSameLines)
	})

	t.Run("gtid", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "g.jsonl")
		r := runBinary(t, context.Background(), "--dsn", dsn, "--out", out, "--gtid", "--start", "oldest", "--stop-at-current", "--quiet", "--server-id", "94")
		assert.Equal(t, 1, r.code, "the server alone has purged what the stream needs")
		assert.Contains(t, r.stderr, "add --binlog-dir")
		require.NoError(t, os.Remove(out))
		r = runBinary(t, context.Background(), args(out, "--gtid")...)
		require.Equal(t, 0, r.code, r.stderr)
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		require.True(t, bytes.Equal(wantGTID, got), "archive then server = the unpurged server, GTID mode")

		out = filepath.Join(t.TempDir(), "gk.jsonl")
		at := int64(bytes.Index(wantGTID, []byte(`"file":"`+logs[purgeTo].Name+`"`)))
		require.Positive(t, at)
		n := 0
		kills := killAtSizes(t, out, func() int64 {
			if n++; n%2 == 0 {
				return rand.Int64N(int64(len(wantGTID)))
			}
			return max(0, at-256<<10+rand.Int64N(512<<10))
		}, 12, args(out, "--gtid")...)
		t.Logf("%d kills", kills)
		compareKilled(t, wantGTID, out, requireSameLines)
	})

	t.Run("without the archive", func(t *testing.T) {
		// A file cut inside the archived part: its last token is in a
		// purged file.
		out := filepath.Join(t.TempDir(), "w.jsonl")
		cut := bytes.Index(want, []byte(`"file":"`+logs[1].Name+`"`))
		require.Positive(t, cut)
		cut = bytes.IndexByte(want[cut:], '\n') + cut + 1
		require.NoError(t, os.WriteFile(out, want[:cut], 0o644))
		// With the reference's schema history, as a run killed there
		// would have left it (a resume reads it as of its token).
		history, err := os.ReadFile(ref + ".schema")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(out+".schema", history, 0o600))
		r := runBinary(t, context.Background(), "--dsn", dsn, "--out", out, "--stop-at-current", "--quiet", "--server-id", "93")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "add --binlog-dir")
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, want[:cut], got, "nothing lost")
		// The same command with the archive goes on to the end.
		r = runBinary(t, context.Background(), args(out)...)
		require.Equal(t, 0, r.code, r.stderr)
		got, err = os.ReadFile(out)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "%s", firstDiff(want, got))
	})
}

// firstDiff shows the first line where got differs from want.
func firstDiff(want, got []byte) string {
	w, g := strings.SplitAfter(string(want), "\n"), strings.SplitAfter(string(got), "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			return fmt.Sprintf("line %d:\nwant %.600s\ngot  %.600s", i+1, w[i], g[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}
