package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

type fixedStats struct {
	st binlogstream.Stats
	ss binlogstream.SnapshotStats
}

func (f fixedStats) Stats() binlogstream.Stats                 { return f.st }
func (f fixedStats) SnapshotStats() binlogstream.SnapshotStats { return f.ss }

// TestProgressLines: binlog-publish logs a progress line every period
// with the position, the rows published and the lag, and the snapshot's
// reads while one runs; with a period of 0, none.
func TestProgressLines(t *testing.T) {
	s := fixedStats{
		st: binlogstream.Stats{Position: binlogstream.StartAt(binlogstream.Position{File: "mysql-bin.000002", Offset: 777}), Lag: 2 * time.Second},
		ss: binlogstream.SnapshotStats{Rows: 5000, Tables: 2},
	}
	var rows atomic.Uint64
	rows.Store(42)
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); reportProgress(ctx, s, &rows, log, time.Millisecond) }()
	require.Eventually(t, func() bool { return len(hook.AllEntries()) > 0 }, 5*time.Second, time.Millisecond)
	cancel()
	<-done
	e := hook.AllEntries()[0]
	assert.Equal(t, "progress", e.Message)
	assert.Equal(t, logrus.InfoLevel, e.Level, "--quiet (warnings only) hides it")
	assert.Equal(t, "mysql-bin.000002:777", e.Data["at"])
	assert.EqualValues(t, 42, e.Data["rows"])
	assert.Equal(t, "2s", e.Data["lag"])
	assert.EqualValues(t, 5000, e.Data["snapshot_reads"])
	assert.EqualValues(t, 2, e.Data["snapshot_tables_left"])

	log2, hook2 := logtest.NewNullLogger()
	reportProgress(context.Background(), s, &rows, log2, 0)
	assert.Empty(t, hook2.AllEntries(), "--progress-every 0")
}
