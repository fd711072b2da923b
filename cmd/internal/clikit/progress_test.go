package clikit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

// TestProgressLineCountsSnapshotReads: the progress line counts the row
// changes and their rate, and the snapshot's tables done and reads (and
// their rate) while one runs and not otherwise, with the rows left when
// the tables' rows were estimated: none once the reads passed the
// estimate with a table to read, 0 once every table is read.
func TestProgressLineCountsSnapshotReads(t *testing.T) {
	st := binlogstream.Stats{Position: binlogstream.StartAt(binlogstream.Position{File: "mysql-bin.000002", Offset: 1200}), Lag: 1500 * time.Millisecond}
	t0 := time.Unix(1000, 0)
	estimate := func(est uint64) RowEstimator {
		return func(context.Context, []string) (map[string]uint64, error) {
			return map[string]uint64{"d.a": est - 5000, "d.b": 3000, "d.c": 2000}, nil
		}
	}
	pending := []string{"d.a", "d.b", "d.c"}
	base := logrus.Fields{"at": "mysql-bin.000002:1200", "rows": uint64(300), "rows_per_s": int64(100), "lag": "1.5s"}
	with := func(f logrus.Fields) logrus.Fields {
		for k, v := range base {
			f[k] = v
		}
		return f
	}
	// lines: a first line at t0+2s (3 tables pending, 20000 read, 100
	// rows), then the one asserted at t0+4s.
	lines := func(est RowEstimator, ss binlogstream.SnapshotStats) logrus.Fields {
		p := NewProgress(est, 0, t0)
		p.Fields(t.Context(), st, binlogstream.SnapshotStats{Rows: 20_000, Tables: 3, Pending: pending}, 100, t0.Add(2*time.Second))
		return p.Fields(t.Context(), st, ss, 300, t0.Add(4*time.Second))
	}
	cur := binlogstream.SnapshotStats{Rows: 100_000, Tables: 1, Pending: pending[2:]}
	snap := logrus.Fields{"snapshot_tables_done": 2, "snapshot_tables": 3, "snapshot_reads": uint64(100_000), "snapshot_reads_per_s": int64(40_000)}
	assert.Equal(t, with(snap), lines(nil, cur), "no estimate")
	assert.Equal(t, with(logrus.Fields{"snapshot_tables_done": 2, "snapshot_tables": 3, "snapshot_reads": uint64(100_000),
		"snapshot_reads_per_s": int64(40_000), "snapshot_rows_left": uint64(25_000)}), lines(estimate(125_000), cur))
	assert.Equal(t, with(snap), lines(estimate(90_000), cur), "past the estimate: no rows left while a table is to read")
	done := binlogstream.SnapshotStats{Rows: 100_000}
	assert.Equal(t, with(logrus.Fields{"snapshot_tables_done": 3, "snapshot_tables": 3, "snapshot_reads": uint64(100_000),
		"snapshot_reads_per_s": int64(40_000), "snapshot_rows_left": uint64(0)}), lines(estimate(90_000), done), "every table read: 0 left")

	p := NewProgress(nil, 100, t0)
	assert.Equal(t, with(logrus.Fields{}), p.Fields(t.Context(), st, binlogstream.SnapshotStats{}, 300, t0.Add(2*time.Second)),
		"no snapshot: no snapshot fields")
	gtid, err := binlogstream.StartAtGTID("mariadb", "0-1-5")
	require.NoError(t, err)
	f := p.Fields(t.Context(), binlogstream.Stats{Position: gtid}, binlogstream.SnapshotStats{}, 300, t0.Add(3*time.Second))
	assert.Equal(t, "gtid 0-1-5", f["at"], "GTID mode: the executed set")
}

// fixedStats are the stats a streamer reports.
type fixedStats struct {
	st binlogstream.Stats
	ss binlogstream.SnapshotStats
}

func (f fixedStats) Stats() binlogstream.Stats                 { return f.st }
func (f fixedStats) SnapshotStats() binlogstream.SnapshotStats { return f.ss }

// TestReportProgress: a progress line at info every period until the
// context ends; none with a period of 0.
func TestReportProgress(t *testing.T) {
	s := fixedStats{st: binlogstream.Stats{Position: binlogstream.StartAt(binlogstream.Position{File: "mysql-bin.000001", Offset: 4})}}
	var rows atomic.Uint64
	log, hook := logtest.NewNullLogger()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); ReportProgress(ctx, s, rows.Load, nil, log, time.Millisecond) }()
	require.Eventually(t, func() bool { return len(hook.AllEntries()) >= 3 }, 5*time.Second, time.Millisecond)
	cancel()
	<-done
	e := hook.AllEntries()[0]
	assert.Equal(t, "progress", e.Message)
	assert.Equal(t, logrus.InfoLevel, e.Level)
	assert.Equal(t, "mysql-bin.000001:4", e.Data["at"])

	log0, hook0 := logtest.NewNullLogger()
	ReportProgress(t.Context(), s, rows.Load, nil, log0, 0)
	assert.Empty(t, hook0.AllEntries(), "period 0: none")
}

// changingStats are the stats a streamer reports, changed by set.
type changingStats struct {
	mu sync.Mutex
	st binlogstream.Stats
	ss binlogstream.SnapshotStats
}

func (f *changingStats) Stats() binlogstream.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *changingStats) SnapshotStats() binlogstream.SnapshotStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ss
}

func (f *changingStats) set(ss binlogstream.SnapshotStats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ss = ss
}

// TestReportProgressThroughASnapshot: the progress line every period
// (binlog-publish's and binlog-tail's) has the position, the rows
// published and the lag, and while a snapshot runs its tables done, its
// reads and, from the server's estimate of the tables' rows (asked once
// per table), the rows left, through the snapshot's phases; with a
// period of 0, none.
func TestReportProgressThroughASnapshot(t *testing.T) {
	s := &changingStats{
		st: binlogstream.Stats{Position: binlogstream.StartAt(binlogstream.Position{File: "mysql-bin.000002", Offset: 777}), Lag: 2 * time.Second},
		ss: binlogstream.SnapshotStats{Rows: 5000, Tables: 2, Pending: []string{"d.a", "d.b"}},
	}
	var rows atomic.Uint64
	rows.Store(42)
	var asked [][]string
	estimate := func(_ context.Context, ids []string) (map[string]uint64, error) {
		asked = append(asked, ids)
		return map[string]uint64{"d.a": 20_000, "d.b": 5_000}, nil
	}
	// run reports progress, and before the n-th line sets the snapshot
	// stats to phases[n]; it returns the first line of each phase.
	run := func(estimate RowEstimator, phases ...binlogstream.SnapshotStats) []logrus.Fields {
		log, hook := logtest.NewNullLogger()
		log.SetLevel(logrus.InfoLevel)
		s.set(phases[0])
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); ReportProgress(ctx, s, rows.Load, estimate, log, time.Millisecond) }()
		var firsts []logrus.Fields
		for _, ss := range phases[1:] {
			require.Eventually(t, func() bool { return len(hook.AllEntries()) > 0 }, 5*time.Second, time.Millisecond)
			s.set(ss)
			n := len(hook.AllEntries())
			require.Eventually(t, func() bool { return len(hook.AllEntries()) > n+1 }, 5*time.Second, time.Millisecond)
		}
		require.Eventually(t, func() bool { return len(hook.AllEntries()) > 0 }, 5*time.Second, time.Millisecond)
		cancel()
		<-done
		e := hook.AllEntries()
		assert.Equal(t, "progress", e[0].Message)
		assert.Equal(t, logrus.InfoLevel, e[0].Level, "--quiet hides it")
		firsts = append(firsts, e[0].Data, e[len(e)-1].Data)
		return firsts
	}

	// d.a and d.b to read; d.a done, d.b read past its estimate (no rows
	// left while a table is to read); both done (0 left).
	got := run(estimate, binlogstream.SnapshotStats{Rows: 5000, Tables: 2, Pending: []string{"d.a", "d.b"}},
		binlogstream.SnapshotStats{Rows: 26_000, Tables: 1, Pending: []string{"d.b"}})
	first, last := got[0], got[1]
	assert.Equal(t, "mysql-bin.000002:777", first["at"])
	assert.EqualValues(t, 42, first["rows"])
	assert.Equal(t, "2s", first["lag"])
	assert.EqualValues(t, 5000, first["snapshot_reads"])
	assert.EqualValues(t, 0, first["snapshot_tables_done"])
	assert.EqualValues(t, 2, first["snapshot_tables"])
	assert.EqualValues(t, 20_000, first["snapshot_rows_left"])
	assert.EqualValues(t, 1, last["snapshot_tables_done"])
	assert.EqualValues(t, 2, last["snapshot_tables"])
	assert.NotContains(t, last, "snapshot_rows_left")
	assert.Equal(t, [][]string{{"d.a", "d.b"}}, asked, "each table estimated once")

	got = run(estimate, binlogstream.SnapshotStats{Rows: 5000, Tables: 2, Pending: []string{"d.a", "d.b"}},
		binlogstream.SnapshotStats{Rows: 26_000})
	assert.EqualValues(t, 2, got[1]["snapshot_tables_done"])
	assert.EqualValues(t, 0, got[1]["snapshot_rows_left"])

	// Without an estimate, no rows left.
	got = run(nil, binlogstream.SnapshotStats{Rows: 5000, Tables: 2, Pending: []string{"d.a", "d.b"}})
	assert.EqualValues(t, 2, got[0]["snapshot_tables"])
	assert.NotContains(t, got[0], "snapshot_rows_left")

	log2, hook2 := logtest.NewNullLogger()
	ReportProgress(context.Background(), s, rows.Load, estimate, log2, 0)
	assert.Empty(t, hook2.AllEntries(), "--progress-every 0")
}
