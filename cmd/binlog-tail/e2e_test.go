package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	th "github.com/binlogstream/binlogstream/testhelpers"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

func TestMain(m *testing.M) {
	code := m.Run()
	mariadb.Cleanup()
	th.CleanupCommand()
	os.Exit(code)
}

// binary is the built binlog-tail (testhelpers.Command).
func binary(t *testing.T) string { return th.Command(t, "binlog-tail") }

// e2eRows is the size of the big INSERT ... SELECT: large enough that a
// full run takes a few seconds, so random kills land mid-stream.
const e2eRows = 60000

// workload writes every kind of line binlog-tail produces, with every
// statement split into many Rows events (binlog_row_event_max_size 1024)
// and a rotation in the middle.
func workload(t *testing.T, s *mariadb.Server) {
	s.Exec(t,
		"CREATE DATABASE d",
		"USE d",
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(200), amount DECIMAL(10,2), f DOUBLE, b VARBINARY(16), "+
			"ts TIMESTAMP(3) NULL, dt DATETIME, note TEXT, u INT UNSIGNED, e ENUM('a','b'))",
		`INSERT INTO t VALUES (1, 'héllo "q"\n\t', 12.50, 1.5, 0xFF00, '2024-01-02 03:04:05.678', '2024-01-02 03:04:05', NULL, 4000000000, 'b'),`+
			` (2, NULL, NULL, NULL, NULL, NULL, NULL, 'text', NULL, NULL)`,
		fmt.Sprintf("INSERT INTO t (id, v, amount, f, b, dt) SELECT seq, REPEAT('x', 40), seq/100, seq*1.5, UNHEX(HEX(seq)), '2020-01-01' FROM seq_10_to_%d", e2eRows),
		"UPDATE t SET v = 'upd', amount = amount + 1 WHERE id % 3 = 0",
		"DELETE FROM t WHERE id % 5 = 0",
		"ALTER TABLE t ADD COLUMN extra INT",
	)
	s.FlushBinaryLogs(t)
	s.Exec(t, "USE d",
		fmt.Sprintf("INSERT INTO t (id, v, extra) SELECT seq, 'late', seq FROM seq_%d_to_%d", e2eRows+1, e2eRows+5000),
		"BEGIN", "INSERT INTO t (id) VALUES (-1)", "UPDATE t SET extra = 7 WHERE id = 1", "COMMIT",
		"CREATE TABLE gone (id INT)", "DROP TABLE gone",
	)
}

type result struct {
	code           int
	stdout, stderr string
}

func runBinary(t *testing.T, ctx context.Context, args ...string) result {
	cmd := exec.CommandContext(ctx, binary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

func TestEndToEndMariaDB(t *testing.T) {
	mariadb.Require(t)
	bin := binary(t)
	s := mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024, MaxBinlogSize: 1 << 20})
	workload(t, s)
	dsn := s.DSN(mariadb.ReplUser)
	dir := t.TempDir()
	args := func(out string, extra ...string) []string {
		return append([]string{"--dsn", dsn, "--out", out, "--start", "oldest", "--stop-at-current", "--server-id", "77"}, extra...)
	}

	// The reference: one uninterrupted run.
	ref := filepath.Join(dir, "ref.jsonl")
	began := time.Now()
	r := runBinary(t, context.Background(), args(ref, "--quiet")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	want, err := os.ReadFile(ref)
	require.NoError(t, err)
	checkReference(t, want)
	t.Logf("reference: %d lines, %d bytes in %s", bytes.Count(want, []byte("\n")), len(want), time.Since(began))

	t.Run("kill -9 at random moments", func(t *testing.T) {
		killAtRandom(t, want, filepath.Join(dir, "killed.jsonl"), 30, func(out string) []string { return args(out, "--quiet") })
	})

	t.Run("SIGTERM", func(t *testing.T) {
		for _, delay := range []time.Duration{0, 50 * time.Millisecond, 300 * time.Millisecond} {
			out := filepath.Join(t.TempDir(), "term.jsonl")
			cmd := exec.Command(bin, "--dsn", dsn, "--out", out, "--start", "oldest", "--server-id", "78", "--quiet")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			// The output file exists once binlog-tail handles signals (a
			// process still starting up on a loaded machine dies of one).
			require.Eventually(t, func() bool { _, err := os.Stat(out); return err == nil }, 10*time.Second, time.Millisecond)
			time.Sleep(delay)
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			began := time.Now()
			require.NoError(t, cmd.Wait(), "exit 0 after SIGTERM; stderr: %s", stderr.String())
			assert.Less(t, time.Since(began), 3*time.Second)
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			if len(got) > 0 {
				require.Equal(t, byte('\n'), got[len(got)-1], "complete lines only")
			}
			require.True(t, bytes.HasPrefix(want, got), "a prefix of the reference")
			// The same command goes on to the end. (--start counts only if
			// the signal came before the first line, as it can on a loaded
			// machine; "current" would then start at the end.)
			r := runBinary(t, context.Background(), "--dsn", dsn, "--out", out, "--start", "oldest", "--stop-at-current", "--server-id", "78", "--quiet")
			require.Equal(t, 0, r.code, r.stderr)
			got, err = os.ReadFile(out)
			require.NoError(t, err)
			requireSameLines(t, want, got)
		}
	})

	t.Run("follow and progress", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "follow.jsonl")
		cmd := exec.Command(bin, "--dsn", dsn, "--out", out, "--start", "oldest", "--server-id", "79")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		// Caught up and idle, the whole file is flushed without an exit.
		require.Eventually(t, func() bool {
			got, _ := os.ReadFile(out)
			return len(got) == len(want)
		}, 30*time.Second, 50*time.Millisecond)
		s.Exec(t, "CREATE DATABASE late")
		require.Eventually(t, func() bool {
			got, _ := os.ReadFile(out)
			return bytes.HasSuffix(got[:len(got)-1], []byte("}")) && bytes.Contains(got[len(want):], []byte(`"query":"CREATE DATABASE late"`))
		}, 10*time.Second, 20*time.Millisecond)
		time.Sleep(1200 * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		require.NoError(t, cmd.Wait())
		var progress int
		for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			f, ok := parseLogLine(l)
			require.True(t, ok, "a logrus line: %s", l)
			if f["msg"] == "progress" {
				progress++
				assert.Regexp(t, `^mysql-bin\.\d+:\d+$`, f["at"], l)
				assert.Regexp(t, `^\d+$`, f["rows_per_s"], l)
			}
		}
		assert.NotZero(t, progress, stderr.String())
	})

	t.Run("errors", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "x.jsonl")
		for _, tc := range []struct {
			dsn, secret, msg string
			code             int
		}{
			{fmt.Sprintf("repl:wrongpass@tcp(%s)/", s.Addr()), "wrongpass", "Access denied", 1},
			{"repl:hunter2@tcp(127.0.0.1:1)/", "hunter2", "connect to repl:xxxxx@tcp(127.0.0.1:1)/", 1},
			{"repl:hunter2@127.0.0.1", "hunter2", "tcp(HOST:PORT)", 2},
		} {
			r := runBinary(t, context.Background(), "--dsn", tc.dsn, "--out", out)
			assert.Equal(t, tc.code, r.code)
			// A run's error is one line; a usage error (exit 2) adds the
			// pointer to --help.
			assert.Equal(t, map[int]int{1: 1, 2: 2}[tc.code], strings.Count(r.stderr, "\n"), r.stderr)
			assert.True(t, strings.HasPrefix(r.stderr, "binlog-tail: "), r.stderr)
			assert.Contains(t, r.stderr, tc.msg)
			assert.NotContains(t, r.stderr, tc.secret)
			assert.NotContains(t, r.stderr, "tls=true", "no TLS hint for a wrong password or an unreachable server")
		}
		r := runBinary(t, context.Background(), "--demo")
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "byte for byte")
	})
}

// killAtRandom runs binlog-tail with args(out) until it finishes, SIGKILLing
// it wantKills times at random moments, and compares the file with want.
func killAtRandom(t *testing.T, want []byte, out string, wantKills int, args func(out string) []string) {
	t.Helper()
	killAtRandomComparing(t, want, out, wantKills, args, requireSameLines)
}

// killAtRandomComparing is killAtRandom comparing each finished output
// with want by same.
func killAtRandomComparing(t *testing.T, want []byte, out string, wantKills int, args func(out string) []string,
	same func(t *testing.T, want, got []byte)) {
	t.Helper()
	// A full run takes a fraction of a second, so the moments are
	// drawn as output sizes (kill once the file has grown past one) and,
	// for every third run, as a delay of 0-20 ms after the start
	// (connecting, cutting the file, catching up).
	sizes := make([]int64, wantKills)
	for i := range sizes {
		sizes[i] = rand.Int64N(int64(len(want)))
	}
	slices.Sort(sizes)
	kills, cut := 0, 0
	for attempt := 0; ; attempt++ {
		require.Less(t, attempt, 100, "never finished")
		cmd := exec.Command(binary(t), args(out)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		kill := make(chan struct{})
		if kills < wantKills {
			go func(k int) {
				if k%3 == 2 {
					time.Sleep(time.Duration(rand.IntN(20_000)) * time.Microsecond)
				} else {
					for {
						if st, err := os.Stat(out); err == nil && st.Size() >= sizes[k] {
							break
						}
						time.Sleep(100 * time.Microsecond)
					}
				}
				close(kill)
			}(kills)
		}
		select {
		case err := <-done:
			require.NoError(t, err, stderr.String())
		case <-kill:
			_ = cmd.Process.Signal(syscall.SIGKILL) // it may have just finished
			<-done
			kills++
			if got, _ := os.ReadFile(out); len(got) > 0 && got[len(got)-1] != '\n' {
				cut++
			}
			continue
		}
		if kills >= wantKills {
			break
		}
		// Finished before the kill: the remaining moments are past
		// the end; start over with an empty file.
		require.NoError(t, os.Remove(out)) // its schema history goes with it
		sizes = sizes[:kills]
		for len(sizes) < wantKills {
			sizes = append(sizes, rand.Int64N(int64(len(want))))
		}
		slices.Sort(sizes[kills:])
		compareKilled(t, want, out, same)
	}
	t.Logf("%d kills, %d of them left a cut last line", kills, cut)
	compareKilled(t, want, out, same)
}

// checkReference makes sure the reference is not trivially empty: every
// kind of line, values of every type, one statement over many Rows events.
func checkReference(t *testing.T, want []byte) {
	t.Helper()
	s := string(want)
	for _, sub := range []string{
		`"query":"CREATE DATABASE d"`,
		`{"type":"insert","schema":"d","table":"t","row":{"id":1,"v":"héllo \"q\"\n\t","amount":"12.50","f":1.5,"b":{"base64":"/wA="},`,
		`"type":"update"`, `"before":{"id":`, `"type":"delete"`, `"query":"ALTER TABLE t ADD COLUMN extra INT"`,
		// MariaDB 10.11 logs no column names (binlog_row_metadata=NO_LOG): they come from the schema history
		`{"type":"table","schema":"d","table":"t","source":"history","columns":[{"name":"id","type":"int","nullable":false},`,
		`"row":{"id":60001,"v":"late","amount":null,"f":null,"b":null,"ts":null,"dt":null,"note":null,"u":null,"e":null,"extra":60001}`,
		`"gtid":"0-1-`, `"file":"mysql-bin.000002"`,
	} {
		assert.True(t, strings.Contains(s, sub), "%s not in the reference, which begins:\n%.1500s", sub, s)
	}
	var inserts, events = 0, map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if strings.HasPrefix(l, `{"type":"insert"`) && strings.Contains(l, `"gtid":"0-1-4"`) {
			inserts++
			events[l[strings.Index(l, `"file":`):strings.Index(l, `,"resume"`)]] = true
		}
	}
	assert.Equal(t, e2eRows-9, inserts, "the INSERT ... SELECT")
	assert.Greater(t, len(events), 5, "the INSERT ... SELECT spans many Rows events")
}

// compareKilled compares the file the kill test left with the reference.
func compareKilled(t *testing.T, want []byte, out string, same func(t *testing.T, want, got []byte)) {
	t.Helper()
	if _, err := os.Stat(out); errors.Is(err, os.ErrNotExist) {
		return
	}
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	same(t, want, got)
}

// requireSameLines compares two outputs whole, and without file, pos and
// resume (which are equal too here: the binlog is the same).
func requireSameLines(t *testing.T, want, got []byte) {
	t.Helper()
	strip := func(b []byte) string {
		var out strings.Builder
		for _, l := range strings.SplitAfter(string(b), "\n") {
			if i := strings.Index(l, `,"file":`); i >= 0 {
				l = l[:i] + "}\n"
			}
			out.WriteString(l)
		}
		return out.String()
	}
	require.Equal(t, strings.Count(string(want), "\n"), strings.Count(string(got), "\n"), "line count")
	require.True(t, strip(want) == strip(got), "the lines differ once file/pos/resume are removed")
	require.True(t, bytes.Equal(want, got), "the files differ")
}
