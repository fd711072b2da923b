package main

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/cmd/internal/metrics/metricstest"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestReplicateMetrics scrapes --metrics while a live workload is
// replicated in GTID mode: rows_total starts at 0 and reaches the
// workload's row changes, the position and GTID set advance, the lags
// stay sane, and a dump thread the server kills counts as a reconnect.
func TestReplicateMetrics(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	src.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE d.a (id INT PRIMARY KEY, v INT)", "INSERT INTO d.a SELECT seq, 0 FROM seq_1_to_100",
		"CREATE TABLE d.other (id INT PRIMARY KEY)")
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", "d.a", "--gtid"}}
	cmd := exec.Command(binary(t), r.baseArgs("--metrics", "127.0.0.1:0")...)
	log := &metricstest.Log{}
	cmd.Stderr = log
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		t.Logf("binlog-replicate's log:\n%s", log.String())
	}()
	url := metricstest.WaitURL(t, log)

	// Negative control: the snapshot read, before any binlog event, no
	// row change (the counter is there, at 0), so the checks below can
	// fail. The workload waits for the snapshot: a change to a key not yet
	// read is folded into its read, not delivered. The snapshot's reads
	// are placed in the stream by the binlog's events: a write to a table
	// not replicated moves it on an idle source.
	var prev metricstest.Scrape
	kick := 0
	require.Eventually(t, func() bool {
		kick++
		src.Exec(t, fmt.Sprintf("INSERT INTO d.other VALUES (%d)", -kick))
		prev = metricstest.MustGet(t, url)
		ok := metricstest.MustStatus(t, url).Executed != ""
		read, _ := prev.Value("binlogstream_snapshot_rows_total")
		left, _ := prev.Value("binlogstream_snapshot_tables")
		return ok && read == 100 && left == 0
	}, 30*time.Second, 200*time.Millisecond, "the snapshot is read")
	rows, ok := prev.Value("binlogstream_rows_total")
	require.True(t, ok)
	require.Zero(t, rows)
	firstSet := metricstest.MustStatus(t, url).Executed

	// 30 transactions: 20 inserted rows, 10 updated, 5 deleted, and a row
	// of a table not replicated (not counted): 35 row changes each.
	const txns = 30
	want := 0
	var earlyFile, earlyOffset float64
	for i := 1; i <= txns; i++ {
		base := 1000 * i
		src.Exec(t, "USE d", "BEGIN",
			fmt.Sprintf("INSERT INTO a SELECT seq, %d FROM seq_%d_to_%d", i, base, base+19),
			fmt.Sprintf("UPDATE a SET v = -1 WHERE id BETWEEN %d AND %d", base, base+9),
			fmt.Sprintf("DELETE FROM a WHERE id BETWEEN %d AND %d", base+10, base+14),
			fmt.Sprintf("INSERT INTO other VALUES (%d)", i), "COMMIT")
		want += 35
		if i == txns/2 {
			killDump(t, src)
		}
		if i%5 == 0 {
			cur := metricstest.MustGet(t, url)
			metricstest.CheckStep(t, prev, cur)
			prev = cur
			if i == 5 {
				earlyFile, earlyOffset, _ = cur.Position()
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Eventually(t, func() bool {
		cur := metricstest.MustGet(t, url)
		metricstest.CheckStep(t, prev, cur)
		prev = cur
		n, _ := cur.Value("binlogstream_rows_total")
		return n >= float64(want)
	}, 45*time.Second, 100*time.Millisecond, "rows_total reaches %d", want)

	rows, _ = prev.Value("binlogstream_rows_total")
	assert.Equal(t, float64(want), rows)
	file, offset, ok := prev.Position()
	assert.True(t, ok, "GTID mode: the position of the last event")
	assert.True(t, file > earlyFile || file == earlyFile && offset > earlyOffset, "the position advanced: %v:%v to %v:%v", earlyFile, earlyOffset, file, offset)
	status := metricstest.MustStatus(t, url)
	assert.NotEqual(t, firstSet, status.Executed, "the GTID set advanced")
	assert.EqualValues(t, offset, status.Offset, "/status and /metrics agree")
	lag, _ := prev.Value("binlogstream_lag_seconds")
	assert.Less(t, lag, 60.0)
	require.Eventually(t, func() bool {
		s := metricstest.MustGet(t, url)
		n, _ := s.Value("binlogstream_reconnects_total")
		b, ok := s.Value("binlogstream_lag_bytes")
		return n >= 1 && ok && b == 0
	}, 20*time.Second, 100*time.Millisecond, "a reconnect; caught up, lag_bytes 0")
	last := metricstest.MustStatus(t, url)
	assert.Contains(t, last.LastError, "reconnecting")
	t.Logf("%v row changes; GTID set %s -> %s at %v:%v", rows, firstSet, last.Executed, file, offset)
}

// killDump has the server kill its binlog dump threads.
func killDump(t *testing.T, s *mariadb.Server) {
	t.Helper()
	ids := s.Query(t, "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND = 'Binlog Dump'")
	require.NotEmpty(t, ids, "a dump thread")
	for _, id := range ids {
		_ = s.TryExec("KILL CONNECTION " + id[0])
	}
}

func TestReplicateMetricsBadAddress(t *testing.T) {
	cmd := exec.Command(binary(t), "--source", "u@tcp(127.0.0.1:1)/", "--target", "u@tcp(127.0.0.1:1)/", "--tables", "d.a", "--metrics", "nonsense")
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Equal(t, 1, cmd.ProcessState.ExitCode())
	assert.True(t, strings.HasPrefix(string(out), "binlog-replicate: --metrics: listen tcp"), "%s", out)
}
