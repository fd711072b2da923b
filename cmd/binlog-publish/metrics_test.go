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
// server kills shows as a reconnect and the last error, the lease
// (--lease) counts one change and its gauge is 1 (0 in a standby
// waiting for it), and the publisher's own counters match the stream:
// messages_total is the messages it holds.
func TestPublishMetrics(t *testing.T) {
	s, c, js, start := setup(t)
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
	held, ok := prev.Value("binlogstream_publish_lease_held")
	assert.True(t, ok && held == 1, "the lease held while streaming: %v", held)
	msgs0, _ := prev.Value("binlogstream_publish_messages_total")
	batches0, _ := prev.Value("binlogstream_publish_batches_total")

	// A standby waits for the lease: its gauge is there, at 0.
	standby := exec.Command(th.Command(t, "binlog-publish"), "--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(),
		"--stream", "M", "--start", start, "--lease", "--metrics", "127.0.0.1:0")
	standbyLog := &metricstest.Log{}
	standby.Stderr = standbyLog
	require.NoError(t, standby.Start())
	standbyDone := make(chan error, 1)
	go func() { standbyDone <- standby.Wait() }()
	defer func() {
		_ = standby.Process.Signal(syscall.SIGTERM)
		<-standbyDone
	}()
	time.Sleep(500 * time.Millisecond) // past its first try for the lease
	sb := metricstest.MustGet(t, metricstest.WaitURL(t, standbyLog))
	held, ok = sb.Value("binlogstream_publish_lease_held")
	assert.True(t, ok && held == 0, "a standby does not hold the lease: %v (present: %v)", held, ok)

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

	// The publisher's own: every message the stream holds was counted
	// once, in batches the histogram counts each.
	var msgs, batches float64
	var stored int64
	require.Eventually(t, func() bool {
		last = metricstest.MustGet(t, url)
		msgs, _ = last.Value("binlogstream_publish_messages_total")
		batches, _ = last.Value("binlogstream_publish_batches_total")
		stored = storedMsgs(js, "M")
		return float64(stored) == msgs
	}, 10*time.Second, 100*time.Millisecond, "messages_total is what the stream holds")
	assert.GreaterOrEqual(t, msgs-msgs0, float64(want), "a message per row change at least")
	assert.Greater(t, batches, batches0)
	assert.LessOrEqual(t, batches, msgs)
	h := last["binlogstream_publish_latency_seconds"].GetMetric()[0].GetHistogram()
	assert.Equal(t, batches, float64(h.GetSampleCount()), "one latency per batch")
	assert.Greater(t, h.GetSampleSum(), 0.0)
	held, _ = last.Value("binlogstream_publish_lease_held")
	assert.Equal(t, 1.0, held)
	t.Logf("%d scrapes; %v row changes; position %v:%v -> %v:%v; last error %q; %v messages in %v batches, mean latency %.1f ms",
		scrapes, rows, firstFile, firstOffset, file, offset, status.LastError, msgs, batches, 1000*h.GetSampleSum()/float64(h.GetSampleCount()))
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

// TestKafkaMetrics scrapes --metrics while a workload is published into
// Kafka: messages_total reaches the records committed (each counted
// once), batches_total counts the transactions, each with its latency,
// and there is no lease gauge (--lease is for --nats).
func TestKafkaMetrics(t *testing.T) {
	s, start := setupSource(t)
	k := startKafka(t)
	var args []string
	for _, a := range k.args(s, start, "--metrics", "127.0.0.1:0") {
		if a != "--quiet" { // the metrics URL is printed without it
			args = append(args, a)
		}
	}
	p := startPublisher(t, args...)
	defer p.stop(t)
	var url string
	require.Eventually(t, func() bool {
		url = metricstest.URL(p.stderr.String())
		return url != ""
	}, 30*time.Second, 20*time.Millisecond, "the metrics URL in the log")

	// Negative control: nothing committed before the workload.
	first := metricstest.MustGet(t, url)
	msgs, ok := first.Value("binlogstream_publish_messages_total")
	require.True(t, ok)
	assert.Zero(t, msgs)
	assert.NotContains(t, first, "binlogstream_publish_lease_held")

	const txns, size = 20, 10
	for i := 1; i <= txns; i++ {
		s.Exec(t, "USE d", fmt.Sprintf("INSERT INTO w SELECT %d, seq, %d, 'x' FROM seq_0_to_%d", i, size, size-1))
		if i%5 == 0 {
			time.Sleep(300 * time.Millisecond) // past the transaction's interval: the next goes in another
		}
	}
	// Each record committed counts once: the counter ends at the
	// records the topics hold, once the workload's are all there.
	var last metricstest.Scrape
	var recs int
	require.Eventually(t, func() bool {
		last = metricstest.MustGet(t, url)
		msgs, _ = last.Value("binlogstream_publish_messages_total")
		recs = len(k.records(t))
		return recs >= txns*size && float64(recs) == msgs
	}, 30*time.Second, 200*time.Millisecond, "messages_total is the records committed")
	batches, _ := last.Value("binlogstream_publish_batches_total")
	assert.GreaterOrEqual(t, msgs, float64(txns*size))
	assert.GreaterOrEqual(t, batches, 4.0, "a transaction at least per pause")
	h := last["binlogstream_publish_latency_seconds"].GetMetric()[0].GetHistogram()
	assert.Equal(t, batches, float64(h.GetSampleCount()), "one latency per transaction")
	t.Logf("%v records (%d committed) in %v transactions, mean latency %.1f ms", msgs, recs, batches, 1000*h.GetSampleSum()/float64(h.GetSampleCount()))
}
