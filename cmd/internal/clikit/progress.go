package clikit

import (
	"context"
	"math"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream"
)

// ProgressSource is what a progress line reads: the streamer.
type ProgressSource interface {
	Stats() binlogstream.Stats
	SnapshotStats() binlogstream.SnapshotStats
}

// Progress makes a command's progress lines, each counted since the one
// before: a logrus info line "progress" with the fields
//
//   - at: the position (Describe), rows: the row changes handled,
//     rows_per_s, lag;
//   - while a snapshot runs, or ran this run: snapshot_tables_done of
//     snapshot_tables (those it has had to read this run, tables it added
//     later included), snapshot_reads, snapshot_reads_per_s and, when
//     the rows left are known (SnapshotProgress.RowsLeft),
//     snapshot_rows_left.
type Progress struct {
	estimate    RowEstimator
	snap        SnapshotProgress
	rows, reads uint64
	at          time.Time
}

// NewProgress starts the progress lines at now, after rows row changes;
// estimate (nil for none) gives the snapshot tables' rows.
func NewProgress(estimate RowEstimator, rows uint64, now time.Time) *Progress {
	return &Progress{estimate: estimate, rows: rows, at: now}
}

// Fields is the next progress line's fields, for the stream's stats st
// and ss and rows row changes at now.
func (p *Progress) Fields(ctx context.Context, st binlogstream.Stats, ss binlogstream.SnapshotStats, rows uint64, now time.Time) logrus.Fields {
	secs := now.Sub(p.at).Seconds()
	rate := func(n, was uint64) int64 {
		if secs <= 0 || n < was {
			return 0
		}
		return int64(math.Round(float64(n-was) / secs))
	}
	f := logrus.Fields{"at": Describe(st.Position), "rows": rows, "rows_per_s": rate(rows, p.rows),
		"lag": st.Lag.Truncate(time.Millisecond).String()}
	if ss.Rows > 0 || ss.Tables > 0 {
		p.snap.See(ctx, ss.Pending, p.estimate)
		tables := max(p.snap.Tables(), ss.Tables)
		f["snapshot_tables_done"], f["snapshot_tables"] = tables-ss.Tables, tables
		f["snapshot_reads"], f["snapshot_reads_per_s"] = ss.Rows, rate(ss.Rows, p.reads)
		if left, ok := p.snap.RowsLeft(ss); ok {
			f["snapshot_rows_left"] = left
		}
	}
	p.rows, p.reads, p.at = rows, ss.Rows, now
	return f
}

// ReportProgress logs a progress line (Progress) on logger every period
// until ctx ends; rows is the row changes handled so far. A period of 0
// logs none.
func ReportProgress(ctx context.Context, s ProgressSource, rows func() uint64, estimate RowEstimator,
	logger logrus.FieldLogger, period time.Duration) {
	if period <= 0 {
		return
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	p := NewProgress(estimate, rows(), time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			logger.WithFields(p.Fields(ctx, s.Stats(), s.SnapshotStats(), rows(), now)).Info("progress")
		}
	}
}
