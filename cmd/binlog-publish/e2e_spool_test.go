package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// TestSpoolFlags: --spool-mib defaults to 64 and must be positive;
// a --spool-dir that is missing, not a directory or not writable is
// refused in one line before anything starts, and the check leaves
// nothing in a good one.
func TestSpoolFlags(t *testing.T) {
	base := []string{"--dsn", "u:p@tcp(127.0.0.1:3306)/", "--nats", "nats://127.0.0.1:4222", "--stream", "S"}
	var stderr bytes.Buffer
	o, err := parseFlags(base, &stderr)
	require.NoError(t, err)
	assert.Equal(t, 64, o.SpoolMiB)
	assert.Empty(t, o.SpoolDir)

	dir := t.TempDir()
	o, err = parseFlags(append(base, "--spool-dir", dir, "--spool-mib", "3"), &stderr)
	require.NoError(t, err)
	assert.Equal(t, dir, o.SpoolDir)
	assert.Equal(t, 3, o.SpoolMiB)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, ents, "the writability check removes its file")

	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--spool-mib", "0"}, "--spool-mib 0: want 1.."},
		{[]string{"--spool-mib", "-5"}, "--spool-mib -5: want 1.."},
		{[]string{"--spool-dir", filepath.Join(dir, "missing")}, "--spool-dir " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{[]string{"--spool-dir", file}, "--spool-dir " + file + ": not a directory"},
		{[]string{"--spool-dir", "/proc"}, "--spool-dir /proc: not writable"},
	} {
		stderr.Reset()
		code := cli(context.Background(), append(append([]string{}, base...), c.args...), &stderr)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Contains(t, stderr.String(), c.want)
		assert.Equal(t, "binlog-publish: "+c.want, strings.SplitN(stderr.String(), "\n", 2)[0][:len("binlog-publish: ")+len(c.want)], "the cause first")
		assert.True(t, strings.HasSuffix(stderr.String(), "\nRun 'binlog-publish --help' for the flags.\n"), "then the pointer to --help, no more: %q", stderr.String())
		assert.Equal(t, 2, strings.Count(stderr.String(), "\n"), "two lines: %q", stderr.String())
	}
}

// procStatus is the kB value of field (VmHWM, VmRSS) in /proc/pid/status,
// 0 once the process is gone.
func procStatus(pid int, field string) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// spoolFDs counts pid's open spool files in dir.
func spoolFDs(pid int, dir string) int {
	fds, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name())
		if err == nil && strings.HasPrefix(target, filepath.Join(dir, "binlog-publish-spool-")) {
			n++
		}
	}
	return n
}

// watch is publishers' peak RSS and spool files as polled. The peak is
// VmHWM: a child's rusage also counts the test process's memory, which
// it shares until its exec.
type watch struct {
	hwm      int64 // the highest VmHWM read, kB
	maxFiles int   // the most spool files open at once
}

func (w *watch) poll(p *publisher, dir string) {
	w.hwm = max(w.hwm, procStatus(p.cmd.Process.Pid, "VmHWM"))
	w.maxFiles = max(w.maxFiles, spoolFDs(p.cmd.Process.Pid, dir))
}

// storedMsgs is how many messages stream holds, -1 before it exists.
func storedMsgs(js jetstream.JetStream, stream string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return -1
	}
	return int64(s.CachedInfo().State.Msgs)
}

// runToEnd runs binlog-publish --stop-at-current with args, polling it
// into w every few milliseconds until it exits.
func runToEnd(t *testing.T, w *watch, dir string, args []string) {
	p := startPublisher(t, append(args, "--stop-at-current")...)
	deadline := time.After(time.Minute)
	for {
		select {
		case err := <-p.done:
			require.NoError(t, err, "%s", p.stderr.String())
			return
		case <-deadline:
			p.kill()
			t.Fatalf("binlog-publish --stop-at-current still running after a minute: %s", p.stderr.String())
		case <-time.After(5 * time.Millisecond):
			w.poll(p, dir)
		}
	}
}

// TestSpoolLargeTransactionThroughKills: one transaction of 100,000
// rows published with --spool-mib 1 goes through a spool file; the
// publisher is SIGKILLed three times while it publishes it (the stream
// holding some but not all of it) and restarted; the stream then equals
// binlog-tail's lines and the spool directory is empty. The negative
// control publishes the same binlog with the transaction in memory
// (--spool-mib 1024): its peak RSS is above the spooled one's by more
// than half the transaction's line bytes (the spool keeps them out of
// memory), and by less than four times them (in memory, a split
// transaction holds its lines, not a message for each line).
func TestSpoolLargeTransactionThroughKills(t *testing.T) {
	began := time.Now()
	s, c, js, start := setup(t)
	const rows = 100000
	s.Exec(t, "USE d", "INSERT INTO w SELECT 1, seq, 100000, REPEAT('x', 20) FROM seq_0_to_99999")
	want := reference(t, s, start)
	total := int64(bytes.Count(want, []byte("\n")))
	require.Greater(t, total, int64(rows))
	base := []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--start", start, "--quiet"}

	// In memory: the negative control.
	memDir := t.TempDir()
	var mem watch
	runToEnd(t, &mem, memDir, append(base, "--stream", "M", "--subject-prefix", "m", "--spool-mib", "1024", "--spool-dir", memDir))
	require.Empty(t, natstest.Diff(want, natstest.Payloads(t, js, "M")))
	assert.Zero(t, mem.maxFiles, "in memory, no spool file")

	dir := t.TempDir()
	args := append(base, "--stream", "S", "--spool-mib", "1", "--spool-dir", dir)
	var spooled watch
	var killedAt []int64
	for k := int64(1); k <= 3; k++ {
		p := startPublisher(t, args...)
		deadline := time.Now().Add(30 * time.Second)
		var n int64
		for n = storedMsgs(js, "S"); n < k*total/4; n = storedMsgs(js, "S") {
			select {
			case err := <-p.done:
				t.Fatalf("binlog-publish exited: %v: %s", err, p.stderr.String())
			default:
			}
			require.True(t, time.Now().Before(deadline), "the stream holds %d messages after 30 s", n)
			spooled.poll(p, dir)
			time.Sleep(2 * time.Millisecond)
		}
		spooled.poll(p, dir)
		p.kill()
		after := storedMsgs(js, "S")
		require.Less(t, after, total, "kill %d came after the whole transaction was stored", k)
		killedAt = append(killedAt, after)
	}
	runToEnd(t, &spooled, dir, args)

	got := natstest.Payloads(t, js, "S")
	require.Empty(t, natstest.Diff(want, got))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, ents, "files left in --spool-dir")
	assert.Positive(t, spooled.maxFiles, "the transaction went through a spool file")
	assert.LessOrEqual(t, spooled.maxFiles, 2, "spool files open at once")
	t.Logf("%d messages (a transaction of %d rows) equal to binlog-tail's lines; SIGKILLed with %v of them stored; up to %d spool file(s) open",
		len(got), rows, killedAt, spooled.maxFiles)
	lines := int64(len(want)) / 1024 // KiB, as VmHWM
	t.Logf("peak RSS (VmHWM): --spool-mib 1: %.1f MiB over 4 runs; --spool-mib 1024 (in memory): %.1f MiB; the transaction's lines: %.1f MiB; %s",
		float64(spooled.hwm)/1024, float64(mem.hwm)/1024, float64(lines)/1024, time.Since(began).Round(time.Millisecond))
	require.Positive(t, spooled.hwm)
	assert.Greater(t, mem.hwm-spooled.hwm, lines/2, "the spool keeps the transaction's lines out of memory")
	assert.Less(t, mem.hwm-spooled.hwm, 4*lines, "in memory, the transaction costs about its lines")
}
