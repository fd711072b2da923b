package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// End-to-end tests of --gtid and --failover-to on real MariaDB servers.

// withoutPositions drops "file", "pos" and "resume" from every line (they
// differ between servers) and keeps everything else, "gtid" included.
func withoutPositions(b []byte) []string {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i, l := range lines {
		if j := strings.Index(l, `,"file":`); j >= 0 {
			lines[i] = l[:j] + "}"
		}
	}
	return lines
}

// withoutResume drops only "resume": on the same server, GTID and file
// mode write the same lines apart from their tokens.
func withoutResume(b []byte) []string {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i, l := range lines {
		if j := strings.Index(l, `,"resume":`); j >= 0 {
			lines[i] = l[:j] + "}"
		}
	}
	return lines
}

// replicaText undoes the one rewrite a MariaDB replica makes in its own
// binlog (log_slave_updates): it logs a replicated "DROP TABLE t" as
// "DROP TABLE IF EXISTS t". Lines the failover run wrote before the kill
// come from the old primary's binlog, the clean run's from the replica's.
func replicaText(lines []string) []string {
	for i, l := range lines {
		lines[i] = strings.Replace(l, `"query":"DROP TABLE IF EXISTS `, `"query":"DROP TABLE `, 1)
	}
	return lines
}

// requireSameStrings compares line lists without printing thousands of
// lines on failure.
func requireSameStrings(t *testing.T, want, got []string, msg string) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: line count", msg)
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("%s: line %d differs:\nwant %s\ngot  %s", msg, i+1, want[i], got[i])
		}
	}
}

// lastResume is the token of a file's last line.
func lastResume(t *testing.T, b []byte) binlogstream.ResumePosition {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	l := lines[len(lines)-1]
	i := strings.LastIndex(l, `"resume":"`)
	require.GreaterOrEqual(t, i, 0, l)
	tok := strings.TrimSuffix(l[i+len(`"resume":"`):], `"}`)
	r, err := binlogstream.ParseResumePosition(tok)
	require.NoError(t, err)
	return r
}

// waitFile waits until cond holds for the file's content, failing early
// when the process exits.
func waitFile(t *testing.T, path string, exited <-chan error, what string, cond func([]byte) bool) []byte {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if cond(b) {
			return b
		}
		select {
		case err := <-exited:
			t.Fatalf("binlog-tail exited (%v) before %s", err, what)
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}

// waitSize waits until the file has at least size bytes and returns its
// size (a stat per poll: reading a growing file of megabytes each time is
// too slow to catch it early).
func waitSize(t *testing.T, path string, exited <-chan error, size int64) int64 {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if st, err := os.Stat(path); err == nil && st.Size() >= size {
			return st.Size()
		}
		select {
		case err := <-exited:
			t.Fatalf("binlog-tail exited (%v) before writing %d bytes", err, size)
		case <-deadline:
			t.Fatalf("timed out waiting for %d bytes", size)
		case <-time.After(100 * time.Microsecond):
		}
	}
}

// TestEndToEndGTIDMode: --gtid on one server. The lines equal file mode's
// apart from the tokens; kills at random moments and reruns give the
// uninterrupted file byte for byte; --start takes current and GTID sets; a
// file is refused in the other mode; a purged binlog is a clear error.
func TestEndToEndGTIDMode(t *testing.T) {
	mariadb.Require(t)
	bin := binary(t)
	s := mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024, MaxBinlogSize: 1 << 20})
	workload(t, s)
	dsn := s.DSN(mariadb.ReplUser)
	dir := t.TempDir()
	gtidArgs := func(out string, extra ...string) []string {
		return append([]string{"--dsn", dsn, "--out", out, "--gtid", "--server-id", "81", "--quiet"}, extra...)
	}

	fileRef, gtidRef := filepath.Join(dir, "file.jsonl"), filepath.Join(dir, "gtid.jsonl")
	r := runBinary(t, context.Background(), "--dsn", dsn, "--out", fileRef, "--start", "oldest", "--stop-at-current", "--server-id", "81", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	began := time.Now()
	r = runBinary(t, context.Background(), gtidArgs(gtidRef, "--start", "oldest", "--stop-at-current")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	wantFile, err := os.ReadFile(fileRef)
	require.NoError(t, err)
	want, err := os.ReadFile(gtidRef)
	require.NoError(t, err)
	t.Logf("GTID reference: %d lines in %v", bytes.Count(want, []byte("\n")), time.Since(began).Round(time.Millisecond))
	checkReference(t, want)
	requireSameStrings(t, withoutResume(wantFile), withoutResume(want), "GTID mode vs file mode")
	last := lastResume(t, want)
	require.True(t, last.IsGTID())
	assert.Equal(t, s.GTIDBinlogPos(t), last.Executed)

	t.Run("kill -9 and rerun", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "killed.jsonl")
		sizes := make([]int64, 8)
		for i := range sizes {
			sizes[i] = rand.Int64N(int64(len(want)))
		}
		slices.Sort(sizes)
		for _, size := range sizes {
			cmd := exec.Command(bin, gtidArgs(out, "--start", "oldest", "--stop-at-current")...)
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			for {
				if st, err := os.Stat(out); err == nil && st.Size() >= size {
					_ = cmd.Process.Signal(syscall.SIGKILL)
					<-exited
					break
				}
				select {
				case err := <-exited:
					require.NoError(t, err)
				case <-time.After(100 * time.Microsecond):
					continue
				}
				break
			}
		}
		r := runBinary(t, context.Background(), gtidArgs(out, "--stop-at-current")...)
		require.Equal(t, 0, r.code, r.stderr)
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "the file equals the uninterrupted run")
	})

	t.Run("start at a GTID set", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "from.jsonl")
		r := runBinary(t, context.Background(), gtidArgs(out, "--start", "0-1-4", "--stop-at-current")...)
		require.Equal(t, 0, r.code, r.stderr)
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		i := bytes.LastIndex(want, []byte(`"gtid":"0-1-4"`))
		require.Positive(t, i)
		i += bytes.IndexByte(want[i:], '\n') + 1
		// t was created before 0-1-4 and altered after it: from a start at
		// 0-1-4 its schema cannot be proven until the snapshot's position,
		// so those lines are positional, with the same values.
		wantLines, gotLines := strings.Split(string(want[i:]), "\n"), strings.Split(string(got), "\n")
		require.Equal(t, len(wantLines), len(gotLines), "every transaction after 0-1-4")
		positional := 0
		var raw map[int]bool // columns whose positional value is go-mysql's raw reading
		for k := range wantLines {
			if strings.HasPrefix(wantLines[k], `{"type":"table"`) {
				raw = rawColumns(t, wantLines[k])
			}
			if wantLines[k] == gotLines[k] {
				continue
			}
			positional++
			if strings.HasPrefix(wantLines[k], `{"type":"table"`) {
				require.Contains(t, gotLines[k], `"source":"unknown"`, "line %d", k)
				tail := wantLines[k][strings.Index(wantLines[k], `,"gtid":`):]
				require.True(t, strings.HasSuffix(gotLines[k], tail), "line %d", k)
				continue
			}
			require.Equal(t, maskColumns(t, positionalForm(t, wantLines[k]), raw), maskColumns(t, gotLines[k], raw), "line %d", k)
		}
		t.Logf("%d of %d lines positional", positional, len(gotLines))
		require.Positive(t, positional)
	})

	t.Run("mode mismatch", func(t *testing.T) {
		r := runBinary(t, context.Background(), "--dsn", dsn, "--out", gtidRef, "--stop-at-current", "--quiet")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "was written in GTID mode")
		r = runBinary(t, context.Background(), gtidArgs(fileRef, "--stop-at-current")...)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "was written in file-position mode")
	})

	t.Run("start current and follow", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "current.jsonl")
		cmd := exec.Command(bin, gtidArgs(out, "--start", "current")...)
		require.NoError(t, cmd.Start())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// Wait for its dump, then write.
		require.Eventually(t, func() bool {
			return s.QueryValue(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'") != "0"
		}, 10*time.Second, 10*time.Millisecond)
		s.Exec(t, "CREATE DATABASE late_gtid")
		got := waitFile(t, out, exited, "the new statement", func(b []byte) bool { return bytes.HasSuffix(b, []byte("}\n")) })
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, <-exited)
		lines := withoutPositions(got)
		require.Len(t, lines, 1, "only what was written after the start")
		assert.Equal(t, `{"type":"query","schema":"late_gtid","query":"CREATE DATABASE late_gtid","gtid":"`+s.GTIDBinlogPos(t)+`"}`, lines[0])
	})

	t.Run("purged binlog", func(t *testing.T) {
		s.FlushBinaryLogs(t)
		s.Exec(t, "CREATE DATABASE after_purge")
		f, _ := s.MasterStatus(t)
		s.PurgeBinaryLogsTo(t, f)
		out := filepath.Join(t.TempDir(), "purged.jsonl")
		r := runBinary(t, context.Background(), gtidArgs(out, "--start", "oldest", "--stop-at-current")...)
		assert.Equal(t, 1, r.code)
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
		assert.Contains(t, r.stderr, "1236")
		assert.Contains(t, r.stderr, "purged")
		t.Log(r.stderr)
		// What the server still has streams from --start current.
		r = runBinary(t, context.Background(), gtidArgs(out, "--start", "current", "--stop-at-current")...)
		assert.Equal(t, 0, r.code, r.stderr)
	})
}

// TestEndToEndGTIDFailover: binlog-tail --gtid --failover-to REPLICA
// streams the primary, which is SIGKILLed mid-stream; the replica is
// promoted and written to; binlog-tail moves over by itself, writes what
// the new primary writes, and exits 0 on SIGTERM. The file equals a clean
// run against the promoted server (without file, pos and resume, which
// differ per server; the GTIDs are the same).
func TestEndToEndGTIDFailover(t *testing.T) {
	mariadb.Require(t)
	bin := binary(t)
	p := mariadb.StartPair(t, mariadb.Options{BinlogRowEventMaxSize: 1024, MaxBinlogSize: 1 << 20})
	workload(t, p.Primary)
	p.WaitReplicaCaughtUp(t)
	out := filepath.Join(t.TempDir(), "failover.jsonl")
	began := time.Now()
	cmd := exec.Command(bin, "--dsn", p.Primary.DSN(mariadb.ReplUser), "--gtid", "--start", "oldest",
		"--failover-to", p.Replica.DSN(mariadb.ReplUser), "--out", out, "--server-id", "91")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()

	atKill := waitSize(t, out, exited, 256<<10)
	p.Primary.Kill()
	p.Promote(t)
	p.Replica.Exec(t, "USE d", "INSERT INTO t (id, v) VALUES (-7, 'after failover')", "CREATE TABLE after_failover (id INT)")
	waitFile(t, out, exited, "the new primary's writes", func(b []byte) bool {
		return bytes.Contains(b, []byte(`"query":"CREATE TABLE after_failover (id INT)"`))
	})
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "exit 0 after SIGTERM; stderr:\n%s", stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	t.Logf("failover run: %v", time.Since(began).Round(time.Millisecond))
	assert.Contains(t, stderr.String(), "failing over to a validated writer")
	got, err := os.ReadFile(out)
	require.NoError(t, err)

	ref := filepath.Join(t.TempDir(), "ref.jsonl")
	r := runBinary(t, context.Background(), "--dsn", p.Replica.DSN(mariadb.ReplUser), "--gtid", "--start", "oldest",
		"--stop-at-current", "--out", ref, "--server-id", "92", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	want, err := os.ReadFile(ref)
	require.NoError(t, err)
	t.Logf("output at the kill %d bytes, after the failover %d, clean run %d", atKill, len(got), len(want))
	assert.Less(t, atKill, int64(len(want)/2), "the primary died mid-stream")
	requireSameStrings(t, replicaText(withoutPositions(want)), replicaText(withoutPositions(got)), "failover run vs clean run on the promoted server")
	assert.Contains(t, string(got), `"row":{"id":-7,"v":"after failover",`)
	assert.Contains(t, string(got), `"gtid":"0-2-`, "the new primary's own transactions")
	assert.Equal(t, p.Replica.GTIDBinlogPos(t), lastResume(t, got).Executed)
}

// TestEndToEndGTIDFailoverRefusesReadOnly: the only candidate is a replica
// nobody promoted. binlog-tail refuses it (fail closed), exits 1 with one
// error line naming read_only, and leaves a file that a rerun against the
// replica continues exactly.
func TestEndToEndGTIDFailoverRefusesReadOnly(t *testing.T) {
	mariadb.Require(t)
	bin := binary(t)
	p := mariadb.StartPair(t, mariadb.Options{})
	p.Primary.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO t SELECT seq, seq FROM seq_1_to_100", "UPDATE t SET v = 0 WHERE id < 10")
	p.WaitReplicaCaughtUp(t)
	out := filepath.Join(t.TempDir(), "ro.jsonl")
	cmd := exec.Command(bin, "--dsn", p.Primary.DSN(mariadb.ReplUser), "--gtid", "--start", "oldest",
		"--failover-to", p.Replica.DSN(mariadb.ReplUser), "--out", out, "--server-id", "93", "--quiet")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()
	waitFile(t, out, exited, "every line", func(b []byte) bool { return bytes.Count(b, []byte("\n")) == 2+100+9+2 })
	p.Primary.Kill()
	began := time.Now()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 1, ee.ExitCode())
	case <-time.After(30 * time.Second):
		t.Fatal("binlog-tail did not give up")
	}
	t.Logf("gave up after %v: %s", time.Since(began).Round(time.Millisecond), stderr.String())
	msg := stderr.String()
	assert.Equal(t, 1, strings.Count(msg, "\n"), msg)
	assert.True(t, strings.HasPrefix(msg, "binlog-tail: "), msg)
	assert.Contains(t, msg, "read_only=ON")
	assert.Contains(t, msg, "failover found no valid writer")
	assert.NotContains(t, msg, mariadb.ReplPassword)

	// The replica may be streamed from (read-only is fine for that): a rerun
	// pointed at it continues the file exactly.
	p.Replica.Exec(t, "STOP SLAVE")
	ref := filepath.Join(t.TempDir(), "ref.jsonl")
	for _, f := range []string{out, ref} {
		r := runBinary(t, context.Background(), "--dsn", p.Replica.DSN(mariadb.ReplUser), "--gtid", "--start", "oldest",
			"--stop-at-current", "--out", f, "--server-id", "94", "--quiet")
		require.Equal(t, 0, r.code, r.stderr)
	}
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	want, err := os.ReadFile(ref)
	require.NoError(t, err)
	requireSameStrings(t, withoutPositions(want), withoutPositions(got), "rerun on the replica")
}

// positionalForm rewrites a line written with a known schema as it reads
// without one: "positional":true, rows as arrays of the same values, a
// table line with the Table_map's types alone. Values of every column are
// in the line (row images FULL here).
func positionalForm(t *testing.T, line string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var out strings.Builder
	tok := func() json.Token {
		tk, err := dec.Token()
		require.NoError(t, err)
		return tk
	}
	raw := func() string {
		var m json.RawMessage
		require.NoError(t, dec.Decode(&m))
		return string(m)
	}
	require.Equal(t, json.Delim('{'), tok())
	out.WriteString("{")
	first := true
	for dec.More() {
		key := tok().(string)
		if !first {
			out.WriteString(",")
		}
		first = false
		if key == "row" {
			out.WriteString(`"positional":true,`)
		}
		out.WriteString(strconv.Quote(key) + ":")
		if key != "row" && key != "before" {
			out.WriteString(raw())
			continue
		}
		require.Equal(t, json.Delim('{'), tok())
		var vals []string
		for dec.More() {
			tok()
			vals = append(vals, raw())
		}
		tok()
		out.WriteString("[" + strings.Join(vals, ",") + "]")
	}
	out.WriteString("}")
	return out.String()
}

// rawColumns are the columns of a table line whose values need the schema
// to read (UNSIGNED, ENUM, SET): positional rows hold go-mysql's raw values.
func rawColumns(t *testing.T, tableLine string) map[int]bool {
	var tl struct {
		Columns []struct{ Type *string }
	}
	require.NoError(t, json.Unmarshal([]byte(tableLine), &tl))
	out := map[int]bool{}
	for i, c := range tl.Columns {
		if c.Type != nil && (strings.Contains(*c.Type, "unsigned") || strings.HasPrefix(*c.Type, "enum(") || strings.HasPrefix(*c.Type, "set(")) {
			out[i] = true
		}
	}
	return out
}

// maskColumns replaces the masked columns' values of a positional line's
// rows by "*".
func maskColumns(t *testing.T, line string, mask map[int]bool) string {
	var m map[string]json.RawMessage
	d := json.NewDecoder(strings.NewReader(line))
	d.UseNumber()
	require.NoError(t, d.Decode(&m))
	for _, key := range []string{"row", "before"} {
		var vals []json.RawMessage
		if m[key] == nil || json.Unmarshal(m[key], &vals) != nil {
			continue
		}
		for i := range vals {
			if mask[i] {
				vals[i] = json.RawMessage(`"*"`)
			}
		}
		b, err := json.Marshal(vals)
		require.NoError(t, err)
		m[key] = b
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}
