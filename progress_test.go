package binlogstream_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// tickClock advances one second per reading: with ProgressInterval 1s a
// Progress is due at the second undelivered move after a delivery.
func tickClock() func() time.Time {
	t := time.Unix(1e9, 0)
	return func() time.Time { t = t.Add(time.Second); return t }
}

type progressRun struct {
	entries  []string // entries of the binlog events, Progress left out
	tokens   []binlogstream.ResumePosition
	progress []binlogstream.Event
	events   int // deliveries, Progress included
	binlog   int // deliveries of binlog events
	stats    binlogstream.Stats
	err      error
}

// runProgress streams with ProgressInterval 1s on tickClock until stop
// says so after a delivery.
func runProgress(t *testing.T, src binlogstream.Source, start binlogstream.ResumePosition, stop func(r *progressRun) bool) progressRun {
	t.Helper()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{
		Source: src, Start: start, ProgressInterval: time.Second,
		ReconnectBackoff: time.Millisecond, MaxReconnectBackoff: 5 * time.Millisecond,
	})
	require.NoError(t, err)
	binlogstream.SetProgressClock(s, tickClock())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var r progressRun
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		r.events++
		r.tokens = append(r.tokens, ev.Resume)
		if _, ok := ev.Event.(*binlogstream.Progress); ok {
			r.progress = append(r.progress, ev)
		} else {
			r.binlog++
			r.entries = append(r.entries, entries(ev)...)
		}
		if stop(&r) {
			cancel()
		}
		return nil
	})
	r.err = s.Run(ctx)
	r.stats = s.Stats()
	require.NoError(t, s.Close())
	require.NotErrorIs(t, r.err, context.DeadlineExceeded, "the run timed out")
	return r
}

// A long stretch of filtered-out rows (one big transaction of users rows,
// only orders wanted) is covered by Progress events, and a crash after any
// delivery, Progress included, resumes exactly: the binlog events before
// and after the crash are those of an uninterrupted run.
func TestProgressThroughFilteredRows(t *testing.T) {
	b := th.NewBuilder(th.MySQL, th.MaxRowsPerEvent(2))
	b.Txn(func(x *th.Txn) { x.Insert(orders, orderRows(1, 3)...) })
	b.Txn(func(x *th.Txn) { x.Insert(users, userRows(1, 40)...) }) // 20 filtered rows events
	b.Txn(func(x *th.Txn) { x.Insert(orders, orderRows(10, 3)...) })
	bl := b.Build()
	p := startPrimary(t, bl)
	src := func() binlogstream.Source {
		s, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
			DSN:      binlogstream.DSN{User: p.User(), Password: p.Password(), Host: p.Host(), Port: p.Port()},
			ServerID: 4245, Flavor: mysql.MySQLFlavor,
			DecodeTable: func(_, table string) bool { return table == "orders" },
		})
		require.NoError(t, err)
		return s
	}
	for _, gtid := range []bool{false, true} {
		start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
		n := len(bl.Events)
		if gtid {
			var err error
			start, err = binlogstream.StartAtGTID("mysql", "")
			require.NoError(t, err)
			n = 0
			for _, e := range bl.Events {
				if e.GTID != "" {
					n++
				}
			}
		}
		n -= usersRowsEvents(bl, gtid)
		full := runProgress(t, src(), start, func(r *progressRun) bool { return r.binlog == n })
		require.True(t, full.err == nil || errors.Is(full.err, context.Canceled), "gtid=%v: %v", gtid, full.err)
		wantProgress := 10 // 20 filtered rows events in a row: one every second
		if gtid {
			wantProgress = 0 // they move no GTID-mode token: it counts delivered units of the transaction
		}
		require.Len(t, full.progress, wantProgress, "gtid=%v", gtid)
		assert.Equal(t, uint64(wantProgress), full.stats.Progress)
		assert.Equal(t, uint64(n), full.stats.Delivered, "Progress is not counted as delivered")
		for i, ev := range full.progress {
			assert.Equal(t, replication.UNKNOWN_EVENT, ev.Header.EventType)
			assert.False(t, ev.Event.(*binlogstream.Progress).Idle)
			assert.Equal(t, ev.Resume.Streamed, ev.End)
			if i > 0 {
				assert.NotEqual(t, full.progress[i-1].Resume, ev.Resume, "gtid=%v: each Progress covers more: %d %s", gtid, i, ev.Resume)
			}
		}
		for k := 1; k < full.events; k++ {
			first := runProgress(t, src(), start, func(r *progressRun) bool { return r.events == k })
			rest := runProgress(t, src(), reparseToken(t, first.tokens[k-1]), func(r *progressRun) bool { return r.binlog == n-first.binlog })
			require.True(t, rest.err == nil || errors.Is(rest.err, context.Canceled), "gtid=%v crash after %d: %v", gtid, k, rest.err)
			require.Equal(t, full.entries, append(first.entries, rest.entries...), "gtid=%v crash after %d", gtid, k)
		}
	}
}

// An idle stream delivers a Progress on heartbeats, flagged Idle, with the
// last delivered event's Resume.
func TestProgressWhenIdle(t *testing.T) {
	sc := smallScenario()
	sc.opts = []th.SourceOption{th.HeartbeatWhenIdle(time.Millisecond)}
	n := len(sc.bl.Events)
	r := runProgress(t, sc.source(), sc.start(), func(r *progressRun) bool { return r.events == n+2 })
	require.ErrorIs(t, r.err, context.Canceled)
	require.Len(t, r.progress, 2)
	for _, ev := range r.progress {
		assert.True(t, ev.Event.(*binlogstream.Progress).Idle)
		assert.Equal(t, r.tokens[n-1], ev.Resume, "nothing moved since the last event")
	}
}

// Without ProgressInterval no Progress is ever delivered, and a negative
// one is refused.
func TestProgressOffByDefault(t *testing.T) {
	sc := smallScenario()
	sc.opts = []th.SourceOption{th.HeartbeatEvery(1)}
	r := stream(t, sc.source(), sc.start(), len(sc.bl.Events), func(_ int, ev binlogstream.Event) error {
		if _, ok := ev.Event.(*binlogstream.Progress); ok {
			return errors.New("a Progress without ProgressInterval")
		}
		return nil
	})
	require.ErrorIs(t, r.err, context.Canceled)
	assert.Zero(t, r.stats.Progress)
	_, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: sc.source(), Start: sc.start(), ProgressInterval: -time.Second})
	require.ErrorContains(t, err, "ProgressInterval")
}

// TestProgressPositionInGTIDMode: a GTID-mode Progress, whose token has
// no file position, carries the binlog position the stream is at in
// Start and End (binlog-tail's progress line writes it as file and pos).
func TestProgressPositionInGTIDMode(t *testing.T) {
	bl := th.NewBuilder(th.MariaDB).Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 2)...) }).Build()
	start, err := binlogstream.StartAtGTID("mariadb", "")
	require.NoError(t, err)
	src := th.NewFakeSource(bl, th.HeartbeatWhenIdle(time.Millisecond))
	r := runProgress(t, src, start, func(r *progressRun) bool { return len(r.progress) == 1 })
	require.ErrorIs(t, r.err, context.Canceled)
	require.Len(t, r.progress, 1)
	last := bl.Events[len(bl.Events)-1]
	ev := r.progress[0]
	assert.True(t, ev.Resume.IsGTID())
	assert.Equal(t, binlogstream.Position{File: last.File, Offset: uint64(last.End)}, ev.End, "the heartbeat's position")
	assert.Equal(t, ev.End, ev.Start)
}
