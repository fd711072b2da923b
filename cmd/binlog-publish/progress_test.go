package main

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
	"github.com/binlogstream/binlogstream/cmd/internal/clikit"
)

// fixedStats are the stats the streamer reports, changed by set.
type fixedStats struct {
	mu sync.Mutex
	st binlogstream.Stats
	ss binlogstream.SnapshotStats
}

func (f *fixedStats) Stats() binlogstream.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fixedStats) SnapshotStats() binlogstream.SnapshotStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ss
}

func (f *fixedStats) set(ss binlogstream.SnapshotStats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ss = ss
}

// TestProgressLines: binlog-publish logs a progress line every period
// with the position, the rows published and the lag, and while a
// snapshot runs its tables done, its reads and, from the server's
// estimate of the tables' rows, the rows left (as binlog-tail's line has
// them); with a period of 0, none.
func TestProgressLines(t *testing.T) {
	s := &fixedStats{
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
	run := func(estimate clikit.RowEstimator, phases ...binlogstream.SnapshotStats) []logrus.Fields {
		log, hook := logtest.NewNullLogger()
		log.SetLevel(logrus.InfoLevel)
		s.set(phases[0])
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); reportProgress(ctx, s, &rows, estimate, log, time.Millisecond) }()
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
	reportProgress(context.Background(), s, &rows, estimate, log2, 0)
	assert.Empty(t, hook2.AllEntries(), "--progress-every 0")
}
