package binlogstream_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/fakeprimary"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// benchBinlog: txns transactions of stmts statements of rows single-row...
// a realistic small-row OLTP stream: per transaction BEGIN/GTID, and per
// statement one Table_map and one rows event of rowsPerEvent rows.
func benchBinlog(f th.Flavor, txns, stmts, rowsPerEvent int) *th.Binlog {
	b := th.NewBuilder(f, th.MaxRowsPerEvent(rowsPerEvent))
	id := 0
	for i := 0; i < txns; i++ {
		b.Txn(func(t *th.Txn) {
			for j := 0; j < stmts; j++ {
				t.Insert(orders, orderRows(id, rowsPerEvent)...)
				id += rowsPerEvent
			}
		})
	}
	return b.Build()
}

// decodedEvents reads a binlog through the fake source once, so the
// tracker benchmark measures the tracker alone.
func decodedEvents(b *testing.B, bl *th.Binlog) []*replication.BinlogEvent {
	st, err := th.NewFakeSource(bl).OpenFile(context.Background(), mysql.Position{Name: bl.Files[0].Name, Pos: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var out []*replication.BinlogEvent
	for len(out) < len(bl.Events)+1 { // the fake Rotate comes first
		ev, err := st.Next(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// BenchmarkTracker is the pure core's cost per event.
func BenchmarkTracker(b *testing.B) {
	for _, mode := range []string{"file", "gtid"} {
		b.Run(mode, func(b *testing.B) {
			bl := benchBinlog(th.MySQL, 2000, 3, 1)
			evs := decodedEvents(b, bl)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				var tr interface {
					Observe(*replication.BinlogEvent) (string, binlogstream.Position, binlogstream.Position, binlogstream.ResumePosition, error)
				}
				if mode == "file" {
					tr = binlogstream.NewTracker(binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4}))
				} else {
					var err error
					if tr, err = binlogstream.NewGTIDTracker(string(bl.Flavor), ""); err != nil {
						b.Fatal(err)
					}
				}
				for _, ev := range evs {
					if _, _, _, _, err := tr.Observe(ev); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
		})
	}
}

// BenchmarkStreamerVsSyncer streams the same binlog from a fake primary on
// loopback with a bare go-mysql BinlogSyncer loop and with the streamer
// (no-op listener), alternating in every iteration so both see the same
// machine; it reports events/s and the streamer/syncer time ratio.
func BenchmarkStreamerVsSyncer(b *testing.B) {
	for _, shape := range []struct {
		name              string
		txns, stmts, rows int
	}{{"small-rows", 20000, 4, 1}, {"100-rows-per-event", 400, 2, 100}} {
		bl := benchBinlog(th.MySQL, shape.txns, shape.stmts, shape.rows)
		n := len(bl.Events)
		p, err := fakeprimary.Start(bl)
		if err != nil {
			b.Fatal(err)
		}
		cfg := binlogstream.SyncerConfig{DSN: binlogstream.DSN{User: p.User(), Password: p.Password(), Host: p.Host(), Port: p.Port()},
			ServerID: 77, Flavor: "mysql"}
		b.Run(shape.name, func(b *testing.B) {
			var raw, lib time.Duration
			for b.Loop() {
				// Each run starts on a collected heap, not paying for
				// the garbage of the one before it.
				runtime.GC()
				t0 := time.Now()
				rawSyncer(b, cfg, bl.Files[0].Name, n)
				raw += time.Since(t0)
				runtime.GC()
				t1 := time.Now()
				streamAll(b, cfg, bl.Files[0].Name, n)
				lib += time.Since(t1)
			}
			b.ReportMetric(float64(b.N*n)/raw.Seconds(), "syncer-events/s")
			b.ReportMetric(float64(b.N*n)/lib.Seconds(), "streamer-events/s")
			b.ReportMetric(lib.Seconds()/raw.Seconds(), "streamer/syncer")
		})
		_ = p.Close()
	}
}

func rawSyncer(b *testing.B, cfg binlogstream.SyncerConfig, file string, n int) {
	s := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: cfg.ServerID, Flavor: cfg.Flavor,
		Host: cfg.Host, Port: cfg.Port, User: cfg.User, Password: cfg.Password, Logger: quietSlog(),
		HeartbeatPeriod: 5 * time.Second, DisableRetrySync: true,
		EventCacheCount: 1024})
	defer s.Close()
	st, err := s.StartSync(mysql.Position{Name: file, Pos: 4})
	if err != nil {
		b.Fatal(err)
	}
	seen := 0
	for seen < n {
		ev, err := st.GetEvent(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if ev.Header.LogPos != 0 && ev.Header.Flags&replication.LOG_EVENT_ARTIFICIAL_F == 0 {
			seen++
		}
	}
}

func streamAll(b *testing.B, cfg binlogstream.SyncerConfig, file string, n int) {
	src, err := binlogstream.NewSyncerSource(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src,
		Start: binlogstream.StartAt(binlogstream.Position{File: file, Offset: 4})})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := 0
	s.AddListener(func(context.Context, binlogstream.Event) error {
		if seen++; seen == n {
			cancel()
		}
		return nil
	})
	if err := s.Run(ctx); err != context.Canceled {
		b.Fatal(err)
	}
	_ = s.Close()
}

// BenchmarkResumeInLargeTransaction: a transaction of one statement of 1M
// rows (the worst case: safe points are statement boundaries, so a resume
// replays at most the statement it stopped in), split into 10,000 rows
// events of 100 rows; a resume after 9,000 of them were delivered. It
// reports the time from the start of the resumed run to its first new
// event, against the time to stream those 9,000 events from the
// statement's start (what the replay would cost if it decoded them),
// in-process and over loopback through go-mysql's BinlogSyncer, with the
// replayed rows' decoding skipped (the default) and not.
func BenchmarkResumeInLargeTransaction(b *testing.B) {
	const events, done = 10_000, 9_000
	bl := th.NewBuilder(th.MySQL, th.MaxRowsPerEvent(100)).
		Txn(func(t *th.Txn) { t.Insert(orders, orderRows(0, 100*events)...) }).
		Txn(func(t *th.Txn) { t.Insert(users, userRows(0, 1)...) }).Build()
	p, err := fakeprimary.Start(bl)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	wire, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
		DSN: binlogstream.DSN{User: p.User(), Password: p.Password(), Host: p.Host(), Port: p.Port()}, ServerID: 78})
	if err != nil {
		b.Fatal(err)
	}
	start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
	// firstNew streams from from until the n-th rows event (n = 0: the
	// first one) and returns the elapsed time and that event's token.
	firstNew := func(src binlogstream.Source, from binlogstream.ResumePosition, n int) (time.Duration, binlogstream.ResumePosition) {
		return streamUntil(b, src, from, n, func(ev binlogstream.Event) int { return min(binlogstream.RowChanges(ev.BinlogEvent), 1) })
	}
	_, mid := firstNew(th.NewFakeSource(bl), start, done)
	for _, c := range []struct {
		name string
		src  func() binlogstream.Source
	}{
		{"in-process", func() binlogstream.Source { return th.NewFakeSource(bl) }},
		{"in-process-no-skip", func() binlogstream.Source { return th.NewFakeSource(bl, th.SkipReplayedRowsOff()) }},
		{"wire", func() binlogstream.Source { return wire }},
		{"wire-no-skip", func() binlogstream.Source { return noSkip{wire} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			var decode, resume time.Duration
			for b.Loop() {
				d, _ := firstNew(c.src(), start, done)
				r, _ := firstNew(c.src(), mid, 0)
				decode, resume = decode+d, resume+r
			}
			b.ReportMetric(float64(decode.Milliseconds())/float64(b.N), "decode-900k-rows-ms")
			b.ReportMetric(float64(resume.Milliseconds())/float64(b.N), "resume-ms")
			b.ReportMetric(resume.Seconds()/decode.Seconds(), "resume/decode")
		})
	}
}

// noSkip hides a source's ReplaySkipper, so a resume decodes every event.
type noSkip struct{ binlogstream.Source }

func quietSlog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// BenchmarkStreamerPerEvent is the streamer's own cost per event, with no
// I/O and no decoding: a source hands out events go-mysql decoded before
// the timer started, and a no-op listener takes them (1-row events, as in
// BenchmarkStreamerVsSyncer/small-rows).
func BenchmarkStreamerPerEvent(b *testing.B) {
	for _, mode := range []string{"file", "gtid"} {
		b.Run(mode, func(b *testing.B) {
			bl := benchBinlog(th.MySQL, 2000, 3, 1)
			evs := decodedEvents(b, bl)
			start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
			if mode == "gtid" {
				var err error
				if start, err = binlogstream.StartAtGTID(string(bl.Flavor), ""); err != nil {
					b.Fatal(err)
				}
			}
			delivered := 0
			b.ReportAllocs()
			for b.Loop() {
				s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: memSource(evs), Start: start})
				if err != nil {
					b.Fatal(err)
				}
				s.AddListener(func(context.Context, binlogstream.Event) error { return nil })
				if err := s.Run(context.Background()); !errors.Is(err, errMemSourceEnd) {
					b.Fatal(err)
				}
				delivered += int(s.Stats().Delivered)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(delivered), "ns/event")
		})
	}
}

// memSource serves the same decoded events on every dump, then
// errMemSourceEnd (a permanent error: Run returns it).
type memSource []*replication.BinlogEvent

var errMemSourceEnd = &mysql.MyError{Code: 1236, Message: "end of the in-memory binlog"}

func (m memSource) OpenFile(context.Context, mysql.Position) (binlogstream.Stream, error) {
	return &memStream{evs: m}, nil
}

func (m memSource) OpenGTID(context.Context, mysql.GTIDSet) (binlogstream.Stream, error) {
	return &memStream{evs: m}, nil
}

type memStream struct{ evs []*replication.BinlogEvent }

func (s *memStream) Next(context.Context) (*replication.BinlogEvent, error) {
	if len(s.evs) == 0 {
		return nil, errMemSourceEnd
	}
	ev := s.evs[0]
	s.evs = s.evs[1:]
	return ev, nil
}

func (s *memStream) Close() error { return nil }

// BenchmarkTokenAppend is the cost of one resume token as binlog-tail
// writes one per line: ResumePosition.AppendText into a reused buffer.
func BenchmarkTokenAppend(b *testing.B) {
	file := binlogstream.ResumePosition{Safe: binlogstream.Position{File: "mysql-bin.000042", Offset: 1234567},
		Streamed: binlogstream.Position{File: "mysql-bin.000042", Offset: 1300000}, Rows: 17, InTxn: true,
		GTID: "0-1-4242"}
	gtid, err := binlogstream.StartAtGTID("mysql", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-123456")
	if err != nil {
		b.Fatal(err)
	}
	gtid.GTID = "3e11fa47-71ca-11e1-9e33-c80aa9429562:123457"
	gtid.Progress = binlogstream.TxnProgress{TableMaps: 1, Rows: 17, Fingerprint: 0x1234}
	// A MySQL server after a few failovers: an executed set of 12 server
	// UUIDs (547 bytes).
	var uuids []string
	for i := range 12 {
		uuids = append(uuids, fmt.Sprintf("%08x-71ca-11e1-9e33-c80aa94295%02d:1-%d", 0x3e11fa47+i, i, 1000*(i+1)))
	}
	long, err := binlogstream.StartAtGTID("mysql", strings.Join(uuids, ","))
	if err != nil {
		b.Fatal(err)
	}
	long.GTID, long.Progress = gtid.GTID, gtid.Progress
	for _, c := range []struct {
		name string
		r    binlogstream.ResumePosition
	}{{"file", file}, {"gtid", gtid}, {"gtid-12-uuids", long}} {
		b.Run(c.name, func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = c.r.AppendText(buf[:0])
			}
			b.ReportMetric(float64(len(buf)), "token-bytes")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/token")
		})
		// The tokens after each row of a 100-row event, through one
		// TokenWriter (binlog-tail writes one per row line).
		b.Run(c.name+"-rows-of-an-event", func(b *testing.B) {
			var w binlogstream.TokenWriter
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				r := c.r
				for n := range 100 {
					if r.IsGTID() {
						r.Progress.Rows, r.Progress.Fingerprint = uint32(n), uint64(n)*0x9E3779B97F4A7C15
					} else {
						r.Rows = uint32(n)
					}
					buf = w.Append(buf[:0], r)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(100*b.N), "ns/token")
		})
	}
	// The tokens of a snapshot's rows (a BIGINT key, one more table to
	// read), through AppendText and through one TokenWriter (binlog-tail's
	// read lines).
	keys := make([]any, 8192)
	for i := range keys {
		keys[i] = int64(100_000 + i)
	}
	reads := binlogstream.WithSnapshotRows(file, keys, true)
	b.Run("snapshot-rows", func(b *testing.B) {
		var buf []byte
		b.ReportAllocs()
		k := 0
		for b.Loop() {
			buf, _ = reads[k%len(reads)].AppendText(buf[:0])
			k++
		}
		b.ReportMetric(float64(len(buf)), "token-bytes")
	})
	b.Run("snapshot-rows-writer", func(b *testing.B) {
		var w binlogstream.TokenWriter
		var buf []byte
		b.ReportAllocs()
		k := 0
		for b.Loop() {
			buf = w.Append(buf[:0], reads[k%len(reads)])
			k++
		}
	})
	// The same on the events of a real stream, 100 rows each, in file and
	// GTID mode: the tokens after each row through AppendAfterRows, and
	// through Append of ResumeAfterRows.
	afterRows := func(w *binlogstream.TokenWriter, buf []byte, ev *binlogstream.Event, n int) []byte {
		return w.AppendAfterRows(buf, ev, n)
	}
	appendResume := func(w *binlogstream.TokenWriter, buf []byte, ev *binlogstream.Event, n int) []byte {
		return w.Append(buf, ev.ResumeAfterRows(n))
	}
	for _, c := range []struct {
		name   string
		gtid   bool
		append func(w *binlogstream.TokenWriter, buf []byte, ev *binlogstream.Event, n int) []byte
	}{
		{"file-after-rows", false, afterRows},
		{"file-resume-after-rows-append", false, appendResume},
		{"gtid-after-rows", true, afterRows},
		{"gtid-resume-after-rows-append", true, appendResume},
	} {
		b.Run(c.name, func(b *testing.B) {
			evs := rowsEventsOf(b, 100, c.gtid)
			var w binlogstream.TokenWriter
			var buf []byte
			tokens := 0
			b.ReportAllocs()
			for b.Loop() {
				for i := range evs {
					for n := 1; n < binlogstream.RowChanges(evs[i].BinlogEvent); n++ {
						buf = c.append(&w, buf[:0], &evs[i], n)
						tokens++
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(tokens), "ns/token")
		})
	}
}

// rowsEventsOf streams a fake MariaDB binlog of 20 transactions of 1000
// inserted rows, perRows an event, in file or GTID mode and returns its
// rows events as delivered.
func rowsEventsOf(b *testing.B, perRows int, gtid bool) []binlogstream.Event {
	tbl := th.Table{ID: 7, Schema: "bench", Name: "t", Columns: []th.Column{{Name: "id", Type: th.BigInt}, {Name: "a", Type: th.Int}}}
	bld := th.NewBuilder(th.MariaDB, th.MaxRowsPerEvent(perRows))
	for t := range 20 {
		rows := make([]th.Row, 1000)
		for i := range rows {
			rows[i] = th.Row{int64(t*1000 + i), int32(i)}
		}
		bld.Txn(func(x *th.Txn) { x.Insert(tbl, rows...) })
	}
	bl := bld.Build()
	start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
	if gtid {
		var err error
		if start, err = binlogstream.StartAtGTID("mariadb", ""); err != nil {
			b.Fatal(err)
		}
	}
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: th.NewFakeSource(bl), Start: start})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var evs []binlogstream.Event
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if binlogstream.RowChanges(ev.BinlogEvent) > 0 {
			if evs = append(evs, ev); len(evs) == 200 {
				cancel()
			}
		}
		return nil
	})
	if err := s.Run(ctx); err != context.Canceled {
		b.Fatal(err)
	}
	return evs
}

// streamUntil streams from from until the units count says the delivered
// events hold reach want (at least 1: want 0 is the first event with a
// unit) and returns the time that took and that event's token.
func streamUntil(b *testing.B, src binlogstream.Source, from binlogstream.ResumePosition, want int,
	units func(binlogstream.Event) int) (time.Duration, binlogstream.ResumePosition) {
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: from})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var took time.Duration
	var tok binlogstream.ResumePosition
	got := 0
	t0 := time.Now()
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		n := units(ev)
		if n == 0 {
			return nil
		}
		if got += n; got >= max(want, 1) {
			took, tok = time.Since(t0), ev.Resume
			cancel()
		}
		return nil
	})
	if err := s.Run(ctx); err != context.Canceled || took == 0 {
		b.Fatalf("run from %s: %v after %d units", from, err, got)
	}
	return took, tok
}
