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
	th "github.com/binlogstream/binlogstream/testhelpers"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestPublishMetrics scrapes --metrics while a live workload is
// published: rows_total starts at 0 and reaches the workload's row
// changes, the position advances, the lags stay sane, a dump thread the
// server kills shows as a reconnect and the last error, and the lease
// (--lease) counts one change.
func TestPublishMetrics(t *testing.T) {
	s, c, _, start := setup(t)
	cmd := exec.Command(th.Command(t, "binlog-publish"), "--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(),
		"--stream", "M", "--start", start, "--lease", "--metrics", "127.0.0.1:0")
	log := &metricstest.Log{}
	cmd.Stderr = log
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		t.Logf("binlog-publish's log:\n%s", log.String())
	}()
	url := metricstest.WaitURL(t, log)

	// Negative control: before any event, no row (the counter is there,
	// at 0), so the checks below can fail.
	var prev metricstest.Scrape
	require.Eventually(t, func() bool {
		prev = metricstest.MustGet(t, url)
		_, _, ok := prev.Position()
		return ok
	}, 30*time.Second, 50*time.Millisecond, "the streamer runs")
	rows, ok := prev.Value("binlogstream_rows_total")
	require.True(t, ok)
	require.Zero(t, rows)
	firstFile, firstOffset, _ := prev.Position()

	// 40 transactions of 25 inserted rows, every 4th also updating the
	// previous one's 25: 1,250 row changes. The server kills the dump
	// thread halfway.
	const txns, size = 40, 25
	want := 0
	scrapes := 1
	for i := 1; i <= txns; i++ {
		sql := []string{"USE d", fmt.Sprintf("INSERT INTO w SELECT %d, seq, %d, 'x' FROM seq_0_to_%d", i, size, size-1)}
		want += size
		if i%4 == 0 {
			sql = append(sql, fmt.Sprintf("UPDATE w SET pad = 'u' WHERE txn = %d", i-1))
			want += size
		}
		s.Exec(t, sql...)
		if i == txns/2 {
			killDump(t, s)
		}
		if i%5 == 0 {
			cur := metricstest.MustGet(t, url)
			metricstest.CheckStep(t, prev, cur)
			prev = cur
			scrapes++
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Eventually(t, func() bool {
		cur := metricstest.MustGet(t, url)
		metricstest.CheckStep(t, prev, cur)
		prev = cur
		scrapes++
		n, _ := cur.Value("binlogstream_rows_total")
		return n >= float64(want)
	}, 45*time.Second, 100*time.Millisecond, "rows_total reaches %d", want)

	rows, _ = prev.Value("binlogstream_rows_total")
	assert.Equal(t, float64(want), rows)
	file, offset, _ := prev.Position()
	assert.True(t, file > firstFile || file == firstFile && offset > firstOffset, "the position advanced: %v:%v to %v:%v", firstFile, firstOffset, file, offset)
	lag, _ := prev.Value("binlogstream_lag_seconds")
	assert.Less(t, lag, 60.0)
	events, _ := prev.Value("binlogstream_events_total")
	assert.Greater(t, events, float64(txns))
	require.Eventually(t, func() bool {
		n, _ := metricstest.MustGet(t, url).Value("binlogstream_reconnects_total")
		return n >= 1
	}, 20*time.Second, 100*time.Millisecond, "the killed dump counts as a reconnect")
	// Caught up, the source holds nothing after the position.
	require.Eventually(t, func() bool {
		b, ok := metricstest.MustGet(t, url).Value("binlogstream_lag_bytes")
		return ok && b == 0
	}, 20*time.Second, 100*time.Millisecond, "lag_bytes reaches 0")
	last := metricstest.MustGet(t, url)
	status := metricstest.MustStatus(t, url)
	assert.Contains(t, status.LastError, "reconnecting")
	errs, _ := last.Value("binlogstream_errors_total")
	assert.GreaterOrEqual(t, errs, 1.0)
	leases, ok := last.Value("binlogstream_lease_changes_total")
	assert.True(t, ok && leases == 1, "the lease taken once: %v", leases)
	t.Logf("%d scrapes; %v row changes; position %v:%v -> %v:%v; last error %q",
		scrapes, rows, firstFile, firstOffset, file, offset, status.LastError)
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

func TestPublishMetricsBadAddress(t *testing.T) {
	for _, addr := range []string{"nonsense", "127.0.0.1:99999"} {
		cmd := exec.Command(th.Command(t, "binlog-publish"), "--dsn", "u@tcp(127.0.0.1:1)/", "--nats", "nats://127.0.0.1:1",
			"--stream", "X", "--metrics", addr)
		out, err := cmd.CombinedOutput()
		require.Error(t, err)
		assert.Equal(t, 1, cmd.ProcessState.ExitCode())
		assert.True(t, strings.HasPrefix(string(out), "binlog-publish: --metrics: listen tcp"), "%s", out)
	}
}
