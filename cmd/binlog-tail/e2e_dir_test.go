package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// killUntilDone runs binlog-tail with args until it exits 0, killing it
// (SIGKILL) once its output has grown past each of kills random sizes
// below limit, and returns how many kills landed.
func killUntilDone(t *testing.T, out string, limit int64, kills int, args ...string) int {
	return killAtSizes(t, out, func() int64 { return rand.Int64N(limit) }, kills, args...)
}

// killAtSizes is killUntilDone with the output sizes to kill at drawn by at.
func killAtSizes(t *testing.T, out string, pick func() int64, kills int, args ...string) int {
	t.Helper()
	landed := 0
	for attempt := 0; ; attempt++ {
		require.Less(t, attempt, kills+20, "never finished")
		cmd := exec.Command(binary(t), args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		kill := make(chan struct{})
		if landed < kills {
			at := pick()
			go func() {
				for {
					if st, err := os.Stat(out); err == nil && st.Size() >= at {
						break
					}
					select {
					case <-done:
						return
					case <-time.After(100 * time.Microsecond):
					}
				}
				close(kill)
			}()
		}
		select {
		case err := <-done:
			require.NoError(t, err, stderr.String())
			return landed
		case <-kill:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			landed++
		}
	}
}

// TestEndToEndBinlogDir: binlog-tail --binlog-dir over a real MariaDB's
// binlog files writes the bytes the online run writes (positions and
// tokens included), in file and GTID mode, from the datadir (index file)
// and from a copy without one; kill -9 at random resumes exactly; without
// --stop-at-current it follows the files as the server writes them.
func TestEndToEndBinlogDir(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024, MaxBinlogSize: 1 << 20})
	workload(t, s)
	dsn := s.DSN(mariadb.ReplUser)
	dir := t.TempDir()
	run := func(args ...string) []byte {
		t.Helper()
		out := filepath.Join(dir, "out.jsonl")
		_ = os.Remove(out)
		began := time.Now()
		r := runBinary(t, context.Background(), append([]string{"--out", out, "--quiet", "--stop-at-current", "--start", "oldest"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Empty(t, r.stderr)
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		t.Logf("%v: %d bytes in %s", args, len(got), time.Since(began).Round(time.Millisecond))
		return got
	}
	online := run("--dsn", dsn, "--server-id", "81")
	checkReference(t, online)
	logs := s.BinaryLogs(t)
	require.GreaterOrEqual(t, len(logs), 3)

	// A copy without the index, as an archive of raw files is.
	archive := t.TempDir()
	for _, l := range logs {
		data, err := os.ReadFile(filepath.Join(s.DataDir(), l.Name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(archive, l.Name), data, 0o644))
	}

	t.Run("same bytes as online", func(t *testing.T) {
		require.True(t, bytes.Equal(online, run("--binlog-dir", s.DataDir())), "datadir")
		require.True(t, bytes.Equal(online, run("--binlog-dir", archive)), "copy without an index")
	})

	t.Run("mariadb-binlog --raw archive", func(t *testing.T) {
		raw := t.TempDir()
		cmd := exec.Command("mariadb-binlog", "--read-from-remote-server", "--raw", "--to-last-log",
			"--host=127.0.0.1", "--port="+strconv.Itoa(s.Port()), "--user="+mariadb.ReplUser, "--password="+s.ReplPassword(),
			"--result-file="+raw+"/", logs[0].Name)
		outb, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", outb)
		require.True(t, bytes.Equal(online, run("--binlog-dir", raw)), "an archive written by mariadb-binlog --raw")
	})

	t.Run("gtid", func(t *testing.T) {
		want := run("--dsn", dsn, "--server-id", "82", "--gtid")
		require.True(t, bytes.Equal(want, run("--binlog-dir", archive, "--gtid")))
	})

	t.Run("kill -9", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "killed.jsonl")
		kills := killUntilDone(t, out, int64(len(online)), 12,
			"--binlog-dir", archive, "--out", out, "--start", "oldest", "--stop-at-current", "--quiet")
		t.Logf("%d kills", kills)
		compareKilled(t, online, out, requireSameLines)
	})

	t.Run("follow", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "follow.jsonl")
		cmd := exec.Command(binary(t), "--binlog-dir", s.DataDir(), "--out", out, "--start", "oldest", "--quiet")
		require.NoError(t, cmd.Start())
		require.Eventually(t, func() bool {
			got, _ := os.ReadFile(out)
			return len(got) == len(online)
		}, 30*time.Second, 50*time.Millisecond)
		s.Exec(t, "CREATE DATABASE late_one")
		s.FlushBinaryLogs(t)
		s.Exec(t, "CREATE DATABASE late_two")
		require.Eventually(t, func() bool {
			got, _ := os.ReadFile(out)
			return bytes.Contains(got, []byte(`"query":"CREATE DATABASE late_two"`))
		}, 10*time.Second, 20*time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		require.NoError(t, cmd.Wait())
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		want := run("--dsn", dsn, "--server-id", "83")
		require.True(t, bytes.Equal(want, got), "the followed files give the online output")
	})

	t.Run("errors", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "x.jsonl")
		r := runBinary(t, context.Background(), "--binlog-dir", filepath.Join(dir, "nope"), "--out", out)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "binlog directory")
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)

		bad := t.TempDir()
		data, err := os.ReadFile(filepath.Join(archive, logs[0].Name))
		require.NoError(t, err)
		data[len(data)/2] ^= 0x10
		require.NoError(t, os.WriteFile(filepath.Join(bad, logs[0].Name), data, 0o644))
		r = runBinary(t, context.Background(), "--binlog-dir", bad, "--out", out, "--start", "oldest", "--quiet")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, filepath.Join(bad, logs[0].Name)+" at offset ")
		assert.Contains(t, r.stderr, "corrupt binlog event")
		kept, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.True(t, bytes.HasPrefix(online, kept), "the lines before the corrupt event are written, and right")

		two := t.TempDir()
		for _, n := range []string{"mysql-bin.index", "relay-bin.index"} {
			require.NoError(t, os.WriteFile(filepath.Join(two, n), nil, 0o644))
		}
		r = runBinary(t, context.Background(), "--binlog-dir", two, "--out", out)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "--binlog-base")
		r = runBinary(t, context.Background(), "--binlog-dir", two, "--binlog-base", "mysql-bin", "--out", out)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "holds no binlog files", "past the ambiguity: the chosen index is empty")

		r = runBinary(t, context.Background(), "--binlog-dir", archive, "--out", out, "--failover-to", dsn, "--gtid")
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, "--failover-to needs --dsn")
	})
}

// TestEndToEndRowValuesMatchMariadbBinlog: the row values binlog-tail
// --binlog-dir writes are the ones `mariadb-binlog -v` decodes from the
// same files (integers, strings and NULLs; both print every row image in
// column order).
func TestEndToEndRowValuesMatchMariadbBinlog(t *testing.T) {
	mariadb.Require(t)
	tool, err := exec.LookPath("mariadb-binlog")
	if err != nil {
		if os.Getenv("BINLOGSTREAM_REQUIRE_MARIADB") != "" {
			t.Fatal("mariadb-binlog not found")
		}
		t.Skip("mariadb-binlog not found")
	}
	s := mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024, MaxBinlogSize: 16 << 10})
	s.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE v (id INT PRIMARY KEY, n BIGINT, s VARCHAR(50), z INT NULL, w SMALLINT)",
		"INSERT INTO v SELECT seq, CAST(seq AS SIGNED) * -123456789, CONCAT('row ', seq), IF(seq % 3 = 0, NULL, CAST(seq AS SIGNED) - 500), CAST(seq % 300 AS SIGNED) - 150 FROM seq_1_to_1000",
		"UPDATE v SET s = CONCAT(s, ' updated'), z = NULL WHERE id % 7 = 0",
		"DELETE FROM v WHERE id % 11 = 0")
	s.FlushBinaryLogs(t)
	s.Exec(t, "USE d", "INSERT INTO v VALUES (-1, 9223372036854775807, '', 0, -32768)")
	logs := s.BinaryLogs(t)
	require.GreaterOrEqual(t, len(logs), 3)

	out := filepath.Join(t.TempDir(), "v.jsonl")
	r := runBinary(t, context.Background(), "--binlog-dir", s.DataDir(), "--out", out, "--start", "oldest", "--stop-at-current", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var l struct {
			Type, Schema, Table string
			Row, Before         json.RawMessage
		}
		require.NoError(t, json.Unmarshal([]byte(line), &l))
		if l.Type == "query" || l.Type == "table" {
			continue
		}
		// A row is an object keyed by column name in column order, or an
		// array when the table is unknown: its values in order.
		img := func(row json.RawMessage) string {
			dec := json.NewDecoder(bytes.NewReader(row))
			dec.UseNumber()
			tok, err := dec.Token()
			require.NoError(t, err)
			object := tok == json.Delim('{')
			var f []string
			for dec.More() {
				if object {
					_, err := dec.Token() // the column name
					require.NoError(t, err)
				}
				v, err := dec.Token()
				require.NoError(t, err)
				switch x := v.(type) {
				case nil:
					f = append(f, "NULL")
				case json.Number:
					f = append(f, x.String())
				case string:
					f = append(f, x)
				default:
					t.Fatalf("unexpected value %#v in %s", v, line)
				}
			}
			return strings.Join(f, "|")
		}
		e := strings.ToUpper(l.Type) + " " + l.Schema + "." + l.Table
		if l.Before != nil {
			e += " " + img(l.Before)
		}
		got = append(got, e+" "+img(l.Row))
	}

	var paths []string
	for _, l := range logs {
		paths = append(paths, filepath.Join(s.DataDir(), l.Name))
	}
	cmd := exec.Command(tool, append([]string{"-v", "--base64-output=decode-rows"}, paths...)...)
	text, err := cmd.Output()
	require.NoError(t, err)
	// ### INSERT INTO `d`.`v` / ### SET / ###   @1=5 ...; UPDATE has WHERE
	// (before) then SET; DELETE has WHERE. Negative integers come as
	// "-5 (4294967291)": the signed value is the first.
	var want []string
	var cur string
	var imgs [][]string
	flush := func() {
		if cur == "" {
			return
		}
		var parts []string
		for _, im := range imgs {
			parts = append(parts, strings.Join(im, "|"))
		}
		want = append(want, cur+" "+strings.Join(parts, " "))
		cur, imgs = "", nil
	}
	for _, line := range strings.Split(string(text), "\n") {
		if !strings.HasPrefix(line, "### ") {
			flush()
			continue
		}
		l := strings.TrimPrefix(line, "### ")
		switch {
		case strings.HasPrefix(l, "INSERT INTO "), strings.HasPrefix(l, "UPDATE "), strings.HasPrefix(l, "DELETE FROM "):
			flush()
			kind := strings.Fields(l)[0]
			table := strings.ReplaceAll(strings.Fields(l)[len(strings.Fields(l))-1], "`", "")
			cur = kind + " " + table
		case l == "SET" || l == "WHERE":
			imgs = append(imgs, nil)
		case strings.HasPrefix(l, "  @"):
			v := l[strings.IndexByte(l, '=')+1:]
			if strings.HasPrefix(v, "'") {
				v = strings.TrimSuffix(strings.TrimPrefix(v, "'"), "'")
			} else if i := strings.Index(v, " ("); i > 0 {
				v = v[:i]
			}
			imgs[len(imgs)-1] = append(imgs[len(imgs)-1], v)
		}
	}
	flush()
	require.Greater(t, len(want), 1000)
	require.Equal(t, len(want), len(got), "row changes")
	for i := range want {
		require.Equal(t, want[i], got[i], "row change %d", i)
	}
}
