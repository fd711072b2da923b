package binlogstream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// BenchmarkRealMariaDBSnapshotReads snapshots one idle table, in turns,
// with MariaDB's exact chunk reads (a consistent snapshot at
// binlog_snapshot_position) and with the watermark reads MySQL gets (two
// SHOW MASTER STATUS and a locking read per chunk): rows/s of each and
// their ratio.
func BenchmarkRealMariaDBSnapshotReads(b *testing.B) {
	mariadb.Require(b)
	const rows = 200_000
	s := mariadb.Start(b, mariadb.Options{ExtraArgs: []string{"--binlog-row-metadata=FULL"}})
	s.Exec(b, "CREATE DATABASE app",
		"CREATE TABLE app.big (id BIGINT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40) NOT NULL)",
		"USE app", fmt.Sprintf("INSERT INTO app.big SELECT seq, seq, 'some padding text' FROM seq_1_to_%d", rows))
	file, pos := s.MasterStatus(b)
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
		DSN:      binlogstream.DSN{User: s.ReplUser(), Password: s.ReplPassword(), Host: s.Host(), Port: uint16(s.Port())},
		ServerID: 503, Flavor: mysql.MariaDBFlavor, HeartbeatPeriod: 100 * time.Millisecond,
	})
	if err != nil {
		b.Fatal(err)
	}
	pats, err := binlogstream.ParseTablePatterns("app.big")
	if err != nil {
		b.Fatal(err)
	}
	snapshot := func(watermarks bool) time.Duration {
		binlogstream.SnapshotWatermarks(watermarks)
		defer binlogstream.SnapshotWatermarks(false)
		st, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src,
			Start: binlogstream.StartAt(binlogstream.Position{File: file, Offset: pos}), Snapshot: &binlogstream.SnapshotConfig{Tables: pats}})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		n := 0
		st.AddListener(func(_ context.Context, ev binlogstream.Event) error {
			if _, ok := ev.Event.(*binlogstream.SnapshotRead); ok {
				n++
			}
			return nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		t0 := time.Now()
		done := make(chan error, 1)
		go func() { done <- st.Run(ctx) }()
		if _, err := st.StopAtCurrent(ctx); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		if n != rows {
			b.Fatalf("%d rows read, want %d", n, rows)
		}
		return time.Since(t0)
	}
	var exact, wm time.Duration
	for b.Loop() {
		exact += snapshot(false)
		wm += snapshot(true)
	}
	n := float64(b.N)
	b.ReportMetric(rows*n/exact.Seconds(), "exact-rows/s")
	b.ReportMetric(rows*n/wm.Seconds(), "watermark-rows/s")
	b.ReportMetric(wm.Seconds()/exact.Seconds(), "watermark/exact")
}
