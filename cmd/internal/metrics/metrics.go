// Package metrics is what binlog-publish and binlog-replicate serve to
// Prometheus with --metrics ADDR: a collector that reads the streamer's
// counters and position at each scrape, the row changes and errors the
// command feeds it, and the HTTP server of /metrics on a registry of its
// own, beside /status: what has no place in a metric (the GTID set, the
// last error's text, the resume token) as JSON. docs/metrics.md lists
// both.
package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream"
)

// Streamer is what a scrape reads from the running streamer;
// *binlogstream.BinlogStreamer is one.
type Streamer interface {
	Stats() binlogstream.Stats
	Source() binlogstream.Source
}

// snapshotter is a streamer that takes a snapshot while streaming
// (Config.Snapshot); *binlogstream.BinlogStreamer is one.
type snapshotter interface {
	SnapshotStats() binlogstream.SnapshotStats
}

// BinaryLogLister lists a server's binlog files with their sizes;
// *binlogstream.SyncerSource is one. A scrape asks the streamer's current
// source for them to compute the lag in bytes.
type BinaryLogLister interface {
	BinaryLogFiles(ctx context.Context) ([]binlogstream.BinaryLogFile, error)
}

// maxLabel bounds the last error's message (/status), in bytes.
const maxLabel = 1024

// listTimeout bounds a scrape's SHOW BINARY LOGS.
const listTimeout = 3 * time.Second

var (
	descRows = prometheus.NewDesc("binlogstream_rows_total",
		"Row changes delivered by the streamer and handled by the command (rate() is rows/s).", nil, nil)
	descEvents = prometheus.NewDesc("binlogstream_events_total",
		"Binlog events every listener acknowledged.", nil, nil)
	descReconnects = prometheus.NewDesc("binlogstream_reconnects_total",
		"Dumps opened again after a lost connection, on the same server or after a failover.", nil, nil)
	descReconnectAttempts = prometheus.NewDesc("binlogstream_reconnect_attempts_total",
		"Tries to open a dump after a lost connection, failed ones included.", nil, nil)
	descFailovers = prometheus.NewDesc("binlogstream_failovers_total",
		"Moves of the stream to another server.", nil, nil)
	descLeaseChanges = prometheus.NewDesc("binlogstream_lease_changes_total",
		"Times this process took or lost the source's lease.", nil, nil)
	descErrors = prometheus.NewDesc("binlogstream_errors_total",
		"Errors logged: warnings with an error (lost connections, retried publishes) and errors.", nil, nil)
	descLastErrorTime = prometheus.NewDesc("binlogstream_last_error_timestamp_seconds",
		"Unix time of the last error logged; absent before the first.", nil, nil)
	descLag = prometheus.NewDesc("binlogstream_lag_seconds",
		"Now minus the timestamp of the last delivered event; 0 once the source sent a heartbeat (nothing more to send).", nil, nil)
	descLagBytes = prometheus.NewDesc("binlogstream_lag_bytes",
		"Binlog bytes the source holds after the position (SHOW BINARY LOGS at the scrape); absent when unknown.", nil, nil)
	descPositionFile = prometheus.NewDesc("binlogstream_position_file_number",
		"The number of the binlog file after the last acknowledged event (42 for mysql-bin.000042), on the server it came from.", nil, nil)
	descPositionOffset = prometheus.NewDesc("binlogstream_position_offset_bytes",
		"The byte offset in that file after the last acknowledged event.", nil, nil)
	descSnapRows = prometheus.NewDesc("binlogstream_snapshot_rows_total",
		"Rows the snapshot read and delivered (SnapshotRead events); not in rows_total.", nil, nil)
	descVerifyChunks = prometheus.NewDesc("binlogstream_verify_chunks_total",
		"Chunks a verification compared on both sides at one binlog position (binlog-replicate --verify).", nil, nil)
	descVerifyDiffs = prometheus.NewDesc("binlogstream_verify_differences_total",
		"Rows a verification found different on the target: missing, extra or changed (binlog-replicate --verify).", nil, nil)
	descSnapTables = prometheus.NewDesc("binlogstream_snapshot_tables",
		"Tables the snapshot has still to read or is reading.", nil, nil)
)

// Metrics holds what a command feeds and reads the streamer at scrape
// time. The zero value is not usable; call New.
type Metrics struct {
	reg  *prometheus.Registry
	rows atomic.Uint64
	// verifyChunks and verifyDiffs count binlog-replicate's verification.
	verifyChunks, verifyDiffs atomic.Uint64

	mu        sync.Mutex
	streamer  Streamer
	lease     func() uint64
	errors    uint64
	lastErr   string
	lastErrAt time.Time
}

// New returns Metrics on a registry of its own, which also holds the Go
// runtime's and the process's collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(m, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// SetStreamer makes scrapes read s: its counters, lag and position.
// Before it, the counters read 0 and the lag and position are absent.
func (m *Metrics) SetStreamer(s Streamer) {
	m.mu.Lock()
	m.streamer = s
	m.mu.Unlock()
}

// SetLeaseChanges makes binlogstream_lease_changes_total read f; it reads
// 0 without one.
func (m *Metrics) SetLeaseChanges(f func() uint64) {
	m.mu.Lock()
	m.lease = f
	m.mu.Unlock()
}

// AddRows counts n row changes.
func (m *Metrics) AddRows(n int) { m.rows.Add(uint64(n)) }

// CountRows is a binlogstream.Listener that counts the row changes of
// each event it gets; added after the command's own listener, it counts
// those the command handled.
func (m *Metrics) CountRows(_ context.Context, ev binlogstream.Event) error {
	m.rows.Add(uint64(binlogstream.RowChanges(ev.BinlogEvent)))
	return nil
}

// Error records err as the last error.
func (m *Metrics) Error(err error) {
	if err != nil {
		m.record(err.Error(), time.Now())
	}
}

func (m *Metrics) record(msg string, at time.Time) {
	msg = strings.ToValidUTF8(strings.Join(strings.Fields(msg), " "), "?")
	if len(msg) > maxLabel {
		cut := maxLabel
		for cut > 0 && msg[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
			cut--
		}
		msg = msg[:cut] + "..."
	}
	m.mu.Lock()
	m.errors++
	m.lastErr, m.lastErrAt = msg, at
	m.mu.Unlock()
}

// Hook is a logrus hook that records as the last error each entry at
// warning level or worse that carries an error (logrus.ErrorKey, as
// WithError sets), and each entry at error level or worse.
func (m *Metrics) Hook() logrus.Hook { return hook{m} }

type hook struct{ m *Metrics }

func (hook) Levels() []logrus.Level {
	return []logrus.Level{logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel, logrus.WarnLevel}
}

func (h hook) Fire(e *logrus.Entry) error {
	err, ok := e.Data[logrus.ErrorKey]
	if !ok && e.Level > logrus.ErrorLevel {
		return nil
	}
	msg := e.Message
	if ok {
		msg += ": " + fmt.Sprint(err)
	}
	h.m.record(msg, e.Time)
	return nil
}

// Describe is prometheus.Collector's.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRows, descEvents, descReconnects, descReconnectAttempts, descFailovers,
		descLeaseChanges, descErrors, descLastErrorTime, descLag, descLagBytes, descPositionFile, descPositionOffset, descSnapRows, descSnapTables,
		descVerifyChunks, descVerifyDiffs} {
		ch <- d
	}
}

// Collect is prometheus.Collector's: it reads the streamer's Stats, then
// (for the lag in bytes) its source's binlog files, so the files are
// never older than the position.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	s, lease := m.streamer, m.lease
	nerr, lastErr, lastAt := m.errors, m.lastErr, m.lastErrAt
	m.mu.Unlock()

	var st binlogstream.Stats
	if s != nil {
		st = s.Stats()
	}
	var leases uint64
	if lease != nil {
		leases = lease()
	}
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(descRows, m.rows.Load())
	counter(descVerifyChunks, m.verifyChunks.Load())
	counter(descVerifyDiffs, m.verifyDiffs.Load())
	counter(descEvents, st.Delivered)
	counter(descReconnects, st.Reconnects)
	counter(descReconnectAttempts, st.ReconnectAttempts)
	counter(descFailovers, st.Failovers)
	counter(descLeaseChanges, leases)
	counter(descErrors, nerr)
	if lastErr != "" {
		gauge(descLastErrorTime, float64(lastAt.UnixNano())/1e9)
	}
	if s == nil {
		return
	}
	gauge(descLag, st.Lag.Seconds())
	if sn, ok := s.(snapshotter); ok {
		ss := sn.SnapshotStats()
		counter(descSnapRows, ss.Rows)
		gauge(descSnapTables, float64(ss.Tables))
	}
	at := position(st)
	if at.File == "" {
		return // a GTID-mode start before its first event
	}
	if n, ok := FileNumber(at.File); ok {
		gauge(descPositionFile, float64(n))
	}
	gauge(descPositionOffset, float64(at.Offset))
	if l, ok := s.Source().(BinaryLogLister); ok {
		ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
		files, err := l.BinaryLogFiles(ctx)
		cancel()
		if n, ok := BytesBehind(files, at); err == nil && ok {
			gauge(descLagBytes, float64(n))
		}
	}
}

// position is the binlog file and offset after the last delivered
// event, or in file mode before the first one the start's.
func position(st binlogstream.Stats) binlogstream.Position {
	if st.At.File != "" {
		return st.At
	}
	return st.Position.Streamed
}

// FileNumber is the sequence number a binlog file's name ends with (42
// for mysql-bin.000042); ok is false for a name without one.
func FileNumber(name string) (n uint64, ok bool) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 || i == len(name)-1 {
		return 0, false
	}
	n, err := strconv.ParseUint(name[i+1:], 10, 64)
	return n, err == nil
}

// Status is what /status serves: the position and the last error in
// full, where a metric's label would make a new series for each value.
type Status struct {
	// File and Offset are the binlog position after the last delivered
	// event (binlogstream_position_*); "" and 0 before there is one.
	File   string `json:"file"`
	Offset uint64 `json:"offset"`
	// Executed is GTID mode's set of transactions delivered whole.
	Executed string `json:"gtid_executed,omitempty"`
	// Resume is the resume token of the last acknowledged event.
	Resume string `json:"resume,omitempty"`
	// LagSeconds is binlogstream_lag_seconds.
	LagSeconds float64 `json:"lag_seconds"`
	// Errors is binlogstream_errors_total; LastError and LastErrorAt the
	// last of them, its message on one line cut at 1 KiB.
	Errors      uint64    `json:"errors"`
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// Status reads the streamer and the errors fed, as /status serves them.
func (m *Metrics) Status() Status {
	m.mu.Lock()
	s := m.streamer
	st := Status{Errors: m.errors, LastError: m.lastErr, LastErrorAt: m.lastErrAt}
	m.mu.Unlock()
	if s == nil {
		return st
	}
	stats := s.Stats()
	at := position(stats)
	st.File, st.Offset, st.LagSeconds = at.File, at.Offset, stats.Lag.Seconds()
	if stats.Position.IsGTID() {
		st.Executed = stats.Position.Executed
	}
	if !stats.Position.IsZero() {
		st.Resume = stats.Position.String()
	}
	return st
}

// BytesBehind is how many bytes files (SHOW BINARY LOGS, oldest first)
// hold after at: the rest of at's file and every later file. ok is false
// when at's file is not among them (purged, or another server's).
func BytesBehind(files []binlogstream.BinaryLogFile, at binlogstream.Position) (n uint64, ok bool) {
	i := slices.IndexFunc(files, func(f binlogstream.BinaryLogFile) bool { return f.Name == at.File })
	if i < 0 {
		return 0, false
	}
	if files[i].Size > at.Offset {
		n = files[i].Size - at.Offset
	}
	for _, f := range files[i+1:] {
		n += f.Size
	}
	return n, true
}

// Handler serves the registry in Prometheus' exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves
// /metrics until ctx ends. It returns the address it listens on, or why
// it cannot listen.
func (m *Metrics) Serve(ctx context.Context, addr string) (net.Addr, error) {
	if addr == "" {
		return nil, errors.New("no address: want HOST:PORT, e.g. 127.0.0.1:9180")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m.Status())
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return ln.Addr(), nil
}

// AddVerify counts chunks verified and differences found.
func (m *Metrics) AddVerify(chunks, diffs int) {
	m.verifyChunks.Add(uint64(chunks))
	m.verifyDiffs.Add(uint64(diffs))
}
