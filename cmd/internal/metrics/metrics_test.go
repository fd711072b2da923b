package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/cmd/internal/metrics"
	"github.com/binlogstream/binlogstream/cmd/internal/metrics/metricstest"
)

// fakeStreamer answers Stats with st and Source with src.
type fakeStreamer struct {
	mu  sync.Mutex
	st  binlogstream.Stats
	src binlogstream.Source
}

func (f *fakeStreamer) Stats() binlogstream.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeStreamer) Source() binlogstream.Source { return f.src }

// lister is a Source with binlog files of the given sizes.
type lister struct {
	files []binlogstream.BinaryLogFile
	err   error
}

func (l lister) OpenFile(context.Context, mysql.Position) (binlogstream.Stream, error) {
	return nil, errors.New("not a server")
}

func (l lister) OpenGTID(context.Context, mysql.GTIDSet) (binlogstream.Stream, error) {
	return nil, errors.New("not a server")
}

func (l lister) BinaryLogFiles(context.Context) ([]binlogstream.BinaryLogFile, error) {
	return l.files, l.err
}

func scrape(t *testing.T, m *metrics.Metrics) metricstest.Scrape {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	s, err := metricstest.Get(t.Context(), srv.URL)
	require.NoError(t, err)
	return s
}

func value(t *testing.T, s metricstest.Scrape, name string) float64 {
	t.Helper()
	v, ok := s.Value(name)
	require.True(t, ok, "%s is absent", name)
	return v
}

func rowsEvent(t replication.EventType, rows int) binlogstream.Event {
	re := &replication.RowsEvent{Rows: make([][]any, rows)}
	return binlogstream.Event{BinlogEvent: &replication.BinlogEvent{Header: &replication.EventHeader{EventType: t}, Event: re}}
}

func TestMetricsBeforeTheStreamer(t *testing.T) {
	s := scrape(t, metrics.New())
	for _, name := range []string{"binlogstream_rows_total", "binlogstream_events_total", "binlogstream_reconnects_total",
		"binlogstream_failovers_total", "binlogstream_lease_changes_total", "binlogstream_errors_total"} {
		assert.Zero(t, value(t, s, name), name)
		assert.NotEmpty(t, s[name].GetHelp(), name)
	}
	for _, name := range []string{"binlogstream_lag_seconds", "binlogstream_lag_bytes", "binlogstream_position_file_number",
		"binlogstream_position_offset_bytes", "binlogstream_last_error_timestamp_seconds"} {
		assert.NotContains(t, s, name)
	}
	assert.Contains(t, s, "go_goroutines", "the Go collector is registered")
}

func TestMetricsReadTheStreamerAndWhatIsFed(t *testing.T) {
	m := metrics.New()
	files := []binlogstream.BinaryLogFile{{Name: "b.000001", Size: 5000}, {Name: "b.000002", Size: 1000}, {Name: "b.000003", Size: 300}}
	f := &fakeStreamer{src: lister{files: files}, st: binlogstream.Stats{
		Delivered: 42, Reconnects: 3, ReconnectAttempts: 5, Failovers: 1, Lag: 1500 * time.Millisecond,
		Position: binlogstream.ResumePosition{Streamed: binlogstream.Position{File: "b.000002", Offset: 400}},
	}}
	m.SetStreamer(f)
	var leases uint64 = 2
	m.SetLeaseChanges(func() uint64 { return leases })
	for _, ev := range []binlogstream.Event{
		rowsEvent(replication.WRITE_ROWS_EVENTv2, 3),
		rowsEvent(replication.UPDATE_ROWS_EVENTv2, 4), // two changes, before and after images
		rowsEvent(replication.DELETE_ROWS_EVENTv1, 1),
		{BinlogEvent: &replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.XID_EVENT}, Event: &replication.XIDEvent{}}},
	} {
		require.NoError(t, m.CountRows(t.Context(), ev))
	}
	m.AddRows(10)

	s := scrape(t, m)
	assert.Equal(t, 16.0, value(t, s, "binlogstream_rows_total"))
	assert.Equal(t, 42.0, value(t, s, "binlogstream_events_total"))
	assert.Equal(t, 3.0, value(t, s, "binlogstream_reconnects_total"))
	assert.Equal(t, 5.0, value(t, s, "binlogstream_reconnect_attempts_total"))
	assert.Equal(t, 1.0, value(t, s, "binlogstream_failovers_total"))
	assert.Equal(t, 2.0, value(t, s, "binlogstream_lease_changes_total"))
	assert.Equal(t, 1.5, value(t, s, "binlogstream_lag_seconds"))
	assert.Equal(t, 400.0, value(t, s, "binlogstream_position_offset_bytes"))
	assert.Equal(t, 2.0, value(t, s, "binlogstream_position_file_number"))
	assert.Equal(t, 600.0+300, value(t, s, "binlogstream_lag_bytes"))
	st := m.Status()
	assert.Equal(t, "b.000002", st.File)
	assert.EqualValues(t, 400, st.Offset)
	assert.Empty(t, st.Executed, "file mode")
	assert.NotContains(t, s, "binlogstream_snapshot_rows_total", "a streamer without snapshots")

	// The next scrape reads the streamer again: a new file replaces the
	// old series, GTID mode adds the set, and the position is At, the
	// last event's end.
	f.mu.Lock()
	f.st.Position = binlogstream.ResumePosition{Flavor: "mariadb", Executed: "0-1-77"} // no file in GTID mode
	f.st.At = binlogstream.Position{File: "b.000003", Offset: 300}
	f.mu.Unlock()
	leases = 3
	s = scrape(t, m)
	assert.Equal(t, 3.0, value(t, s, "binlogstream_position_file_number"))
	assert.Equal(t, 300.0, value(t, s, "binlogstream_position_offset_bytes"))
	assert.Equal(t, 0.0, value(t, s, "binlogstream_lag_bytes"))
	assert.Equal(t, "0-1-77", m.Status().Executed)
	for name, f := range s {
		if !strings.HasPrefix(name, "binlogstream_") {
			continue // the Go runtime's and the process's
		}
		for _, sample := range f.Metric {
			assert.Empty(t, sample.Label, "%s: no labels (one series each, whatever the position or the error)", name)
		}
	}
	assert.Equal(t, 3.0, value(t, s, "binlogstream_lease_changes_total"))
}

type snapStreamer struct {
	fakeStreamer
	snap binlogstream.SnapshotStats
}

func (s *snapStreamer) SnapshotStats() binlogstream.SnapshotStats { return s.snap }

func TestSnapshotMetrics(t *testing.T) {
	m := metrics.New()
	m.SetStreamer(&snapStreamer{snap: binlogstream.SnapshotStats{Tables: 2, Rows: 8192}})
	m.AddRows(3)
	s := scrape(t, m)
	assert.Equal(t, 8192.0, value(t, s, "binlogstream_snapshot_rows_total"))
	assert.Equal(t, 2.0, value(t, s, "binlogstream_snapshot_tables"))
	assert.Equal(t, 3.0, value(t, s, "binlogstream_rows_total"), "snapshot rows are not row changes")
}

func TestLagBytesAbsentWhenUnknown(t *testing.T) {
	pos := binlogstream.ResumePosition{Streamed: binlogstream.Position{File: "b.000009", Offset: 4}}
	for name, src := range map[string]binlogstream.Source{
		"another server's files": lister{files: []binlogstream.BinaryLogFile{{Name: "b.000001", Size: 10}}},
		"SHOW BINARY LOGS fails": lister{err: errors.New("denied")},
		"a source without files": struct{ binlogstream.Source }{},
	} {
		m := metrics.New()
		m.SetStreamer(&fakeStreamer{src: src, st: binlogstream.Stats{Position: pos}})
		s := scrape(t, m)
		assert.NotContains(t, s, "binlogstream_lag_bytes", name)
		assert.Equal(t, 4.0, value(t, s, "binlogstream_position_offset_bytes"), name)
	}
}

func TestBytesBehind(t *testing.T) {
	files := []binlogstream.BinaryLogFile{{Name: "b.1", Size: 100}, {Name: "b.2", Size: 50}}
	for _, c := range []struct {
		at   binlogstream.Position
		want uint64
		ok   bool
	}{
		{binlogstream.Position{File: "b.1", Offset: 4}, 96 + 50, true},
		{binlogstream.Position{File: "b.1", Offset: 100}, 50, true},
		{binlogstream.Position{File: "b.2", Offset: 50}, 0, true},
		{binlogstream.Position{File: "b.2", Offset: 70}, 0, true}, // written after the list: never negative
		{binlogstream.Position{File: "b.0", Offset: 4}, 0, false},
	} {
		n, ok := metrics.BytesBehind(files, c.at)
		assert.Equal(t, c.ok, ok, c.at)
		assert.Equal(t, c.want, n, c.at)
	}
}

func TestLastErrorFromTheLog(t *testing.T) {
	m := metrics.New()
	log := logrus.New()
	log.SetOutput(io.Discard)
	log.AddHook(m.Hook())
	log.Warn("failing over to a validated writer") // a warning without an error is none
	log.Info("streaming")
	assert.Zero(t, value(t, scrape(t, m), "binlogstream_errors_total"))

	before := time.Now()
	log.WithError(errors.New("connection reset by peer")).Warn("binlog connection lost; reconnecting")
	s := scrape(t, m)
	assert.Equal(t, 1.0, value(t, s, "binlogstream_errors_total"))
	assert.Equal(t, "binlog connection lost; reconnecting: connection reset by peer", m.Status().LastError)
	at := value(t, s, "binlogstream_last_error_timestamp_seconds")
	assert.InDelta(t, float64(before.UnixNano())/1e9, at, 5)

	log.Error("the stream ended")
	m.Error(errors.New(strings.Repeat("é", 2000) + "\nsecond line"))
	s = scrape(t, m)
	assert.Equal(t, 3.0, value(t, s, "binlogstream_errors_total"))
	msg := m.Status().LastError
	assert.LessOrEqual(t, len(msg), 1024+3)
	assert.True(t, strings.HasPrefix(msg, "éé") && strings.HasSuffix(msg, "é..."), "cut at a character: %q", msg[len(msg)-8:])
	assert.GreaterOrEqual(t, value(t, s, "binlogstream_last_error_timestamp_seconds"), at)
}

func TestServe(t *testing.T) {
	m := metrics.New()
	m.AddRows(7)
	ctx, cancel := context.WithCancel(t.Context())
	addr, err := m.Serve(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	assert.NotContains(t, addr.String(), ":0", "the bound port")
	url := "http://" + addr.String() + "/metrics"
	s, err := metricstest.Get(t.Context(), url)
	require.NoError(t, err)
	assert.Equal(t, 7.0, value(t, s, "binlogstream_rows_total"))
	assert.Equal(t, "http://127.0.0.1:1234/metrics", metricstest.URL("level=info msg=x\nbinlog-x: serving metrics on http://127.0.0.1:1234/metrics\n"))

	// The same address again is refused while it is served; after ctx
	// ends it is free.
	_, err = m.Serve(t.Context(), addr.String())
	require.Error(t, err)
	cancel()
	require.Eventually(t, func() bool {
		_, err := http.Get(url)
		return err != nil
	}, 5*time.Second, 10*time.Millisecond)

	for _, bad := range []string{"", "nonsense", "127.0.0.1:99999", "256.0.0.1:80"} {
		_, err := m.Serve(t.Context(), bad)
		assert.Error(t, err, "%q", bad)
	}
}

// TestExpositionPassesPromlint: the metrics follow Prometheus' naming
// and help conventions as promtool check metrics checks them (its linter,
// promlint, from client_golang's testutil), on the text a scrape of
// /metrics serves with every metric present, binlog-publish's own
// included.
func TestExpositionPassesPromlint(t *testing.T) {
	text := exposition(t, everyMetric())
	for _, name := range []string{"binlogstream_snapshot_tables", "binlogstream_publish_latency_seconds_bucket", "binlogstream_publish_lease_held"} {
		require.Contains(t, text, name)
	}
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	require.NoError(t, err)
	assert.Empty(t, problems)
	// Negative control: the linter finds a counter without _total.
	problems, err = promlint.New(strings.NewReader("# HELP x_rows Rows.\n# TYPE x_rows counter\nx_rows 1\n")).Lint()
	require.NoError(t, err)
	assert.NotEmpty(t, problems)
}

// everyMetric is Metrics with every metric present: a streamer in a
// snapshot, an error, binlog-publish's own with --lease.
func everyMetric() *metrics.Metrics {
	m := metrics.New()
	files := []binlogstream.BinaryLogFile{{Name: "b.000001", Size: 5000}}
	m.SetStreamer(&snapStreamer{fakeStreamer: fakeStreamer{src: lister{files: files}, st: binlogstream.Stats{
		Position: binlogstream.ResumePosition{Streamed: binlogstream.Position{File: "b.000001", Offset: 400}}}}})
	m.Error(errors.New("connection reset by peer"))
	pm := m.Publish(true)
	pm.Stored(3, 2*time.Millisecond)
	return m
}

// TestDocumentedMetrics: the metrics docs/metrics.md's tables name are
// the binlogstream_ metrics a scrape serves, no more, no fewer.
func TestDocumentedMetrics(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/metrics.md")
	require.NoError(t, err)
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(binlogstream_[a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	served := map[string]bool{}
	for name := range scrape(t, everyMetric()) {
		if strings.HasPrefix(name, "binlogstream_") {
			served[name] = true
		}
	}
	assert.Equal(t, served, documented)
	assert.Contains(t, documented, "binlogstream_publish_lease_held", "the table's pattern reads the rows")
}

// exposition is the text /metrics serves.
func exposition(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// TestPublishMetrics: binlog-publish's own metrics count what Stored
// reports, the latency histogram holds one observation per batch, and
// the lease gauge is there with --lease only: 0 until SetLease, then
// what it reads.
func TestPublishMetrics(t *testing.T) {
	m := metrics.New()
	pm := m.Publish(true)
	s := scrape(t, m)
	assert.Zero(t, value(t, s, "binlogstream_publish_messages_total"))
	assert.Zero(t, value(t, s, "binlogstream_publish_batches_total"))
	assert.Zero(t, value(t, s, "binlogstream_publish_lease_held"), "waiting for the lease")
	held := true
	pm.SetLease(func() bool { return held })
	pm.Stored(10, 3*time.Millisecond)
	pm.Stored(5, 2*time.Second)
	s = scrape(t, m)
	assert.Equal(t, 15.0, value(t, s, "binlogstream_publish_messages_total"))
	assert.Equal(t, 2.0, value(t, s, "binlogstream_publish_batches_total"))
	assert.Equal(t, 1.0, value(t, s, "binlogstream_publish_lease_held"))
	h := s["binlogstream_publish_latency_seconds"].GetMetric()[0].GetHistogram()
	assert.EqualValues(t, 2, h.GetSampleCount())
	assert.InDelta(t, 2.003, h.GetSampleSum(), 1e-9)
	for _, b := range h.GetBucket() {
		want := map[bool]uint64{true: 1, false: 0}[b.GetUpperBound() >= 0.003]
		if b.GetUpperBound() >= 2 {
			want = 2
		}
		assert.Equal(t, want, b.GetCumulativeCount(), "le=%v", b.GetUpperBound())
	}
	held = false
	assert.Zero(t, value(t, scrape(t, m), "binlogstream_publish_lease_held"), "lost")

	// Without --lease (and with --kafka) there is no lease to hold; a nil
	// Publish (no --metrics) takes the calls.
	s = scrape(t, func() *metrics.Metrics { m := metrics.New(); m.Publish(false); return m }())
	assert.Contains(t, s, "binlogstream_publish_batches_total")
	assert.NotContains(t, s, "binlogstream_publish_lease_held")
	var none *metrics.Publish
	none.Stored(1, time.Second)
	none.SetLease(func() bool { return true })
}

// TestStatusEndpoint: /status serves the position, the GTID set, the
// token and the last error as JSON, beside /metrics.
func TestStatusEndpoint(t *testing.T) {
	m := metrics.New()
	m.SetStreamer(&fakeStreamer{st: binlogstream.Stats{Lag: time.Second,
		Position: binlogstream.ResumePosition{Flavor: "mariadb", Executed: "0-1-77"},
		At:       binlogstream.Position{File: "b.000003", Offset: 300}}})
	m.Error(errors.New("boom"))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, err := m.Serve(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	st := metricstest.MustStatus(t, "http://"+addr.String()+"/metrics")
	assert.Equal(t, "b.000003", st.File)
	assert.EqualValues(t, 300, st.Offset)
	assert.Equal(t, "0-1-77", st.Executed)
	assert.Equal(t, "boom", st.LastError)
	assert.EqualValues(t, 1, st.Errors)
	assert.Equal(t, 1.0, st.LagSeconds)
	assert.NotEmpty(t, st.Resume)
}

// TestVerifyMetrics: binlog-replicate's verification counts.
func TestVerifyMetrics(t *testing.T) {
	m := metrics.New()
	s := scrape(t, m)
	assert.Equal(t, 0.0, value(t, s, "binlogstream_verify_chunks_total"))
	m.AddVerify(1, 0)
	m.AddVerify(1, 3)
	s = scrape(t, m)
	assert.Equal(t, 2.0, value(t, s, "binlogstream_verify_chunks_total"))
	assert.Equal(t, 3.0, value(t, s, "binlogstream_verify_differences_total"))
}
