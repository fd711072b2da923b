package binlogstream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

func smallScenario() scenario {
	return scenario{name: "small", bl: th.NewBuilder(th.MySQL, th.MaxRowsPerEvent(2)).
		Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 5)...) }).
		Txn(func(t *th.Txn) { t.Delete(users, userRows(1, 2)...) }).Build()}
}

func TestListenerErrorStopsAndDoesNotCount(t *testing.T) {
	sc := smallScenario()
	full := uninterrupted(t, sc)
	boom := errors.New("disk full")
	for k := 1; k <= len(sc.bl.Events); k++ {
		r := stream(t, sc.source(), sc.start(), -1, func(i int, ev binlogstream.Event) error {
			if i == k {
				return boom
			}
			return nil
		})
		var le *binlogstream.ListenerError
		require.ErrorAs(t, r.err, &le)
		require.ErrorIs(t, r.err, boom)
		assert.Equal(t, k-1, r.events)
		assert.Equal(t, full.tokens[k-1].Streamed, le.Position, "the error names the failed event")
		if k > 1 {
			assert.Equal(t, full.tokens[k-2], r.last, "nothing past the last acknowledged event counts")
		} else {
			assert.Equal(t, sc.start(), r.last)
		}
		// The failed event is delivered again after a resume.
		rest := stream(t, sc.source(), roundTrip(t, r.last), len(sc.bl.Events)-k+1, nil)
		assert.Equal(t, full.entries, append(r.entries, rest.entries...))
	}
}

func TestSecondListenerErrorAlsoStops(t *testing.T) {
	sc := smallScenario()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: sc.source(), Start: sc.start()})
	require.NoError(t, err)
	var first int
	s.AddListener(func(context.Context, binlogstream.Event) error { first++; return nil })
	s.AddListener(func(context.Context, binlogstream.Event) error { return errors.New("second says no") })
	err = s.Run(context.Background())
	require.ErrorContains(t, err, "second says no")
	assert.Equal(t, 1, first)
	assert.Equal(t, sc.start(), s.ResumePosition())
	assert.Equal(t, uint64(0), s.Stats().Delivered)
}

func TestContextCancelWhileBlocked(t *testing.T) {
	sc := smallScenario()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: sc.source(), Start: sc.start()})
	require.NoError(t, err)
	var n atomic.Int32
	s.AddListener(func(context.Context, binlogstream.Event) error { n.Add(1); return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	require.Eventually(t, func() bool { return int(n.Load()) == len(sc.bl.Events) }, 5*time.Second, time.Millisecond)
	// The source has nothing more: Run is blocked in Next.
	cancel()
	select {
	case err := <-done:
		assert.Same(t, context.Canceled, err, "a cancelled context comes back as ctx.Err()")
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	deadline, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	assert.Equal(t, context.DeadlineExceeded, s.Run(deadline), "Run can be called again and honours its context")
}

func TestCloseWhileBlocked(t *testing.T) {
	sc := smallScenario()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: sc.source(), Start: sc.start()})
	require.NoError(t, err)
	var n atomic.Int32
	s.AddListener(func(context.Context, binlogstream.Event) error { n.Add(1); return nil })
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	require.Eventually(t, func() bool { return int(n.Load()) == len(sc.bl.Events) }, 5*time.Second, time.Millisecond)
	closed := make(chan struct{})
	go func() { _ = s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("Close blocked")
	}
	assert.ErrorIs(t, <-done, binlogstream.ErrClosed)
	assert.NoError(t, s.Close(), "Close is idempotent")
	assert.ErrorIs(t, s.Run(context.Background()), binlogstream.ErrClosed)
	assert.Equal(t, uint64(len(sc.bl.Events)), s.Stats().Delivered)
}

func TestConcurrentRunRefused(t *testing.T) {
	sc := smallScenario()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: sc.source(), Start: sc.start()})
	require.NoError(t, err)
	started := make(chan struct{})
	var once atomic.Bool
	s.AddListener(func(context.Context, binlogstream.Event) error {
		if once.CompareAndSwap(false, true) {
			close(started)
		}
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	<-started
	assert.ErrorIs(t, s.Run(context.Background()), binlogstream.ErrAlreadyRunning)
	require.NoError(t, s.Close())
	assert.ErrorIs(t, <-done, binlogstream.ErrClosed)
}

func TestBadConfig(t *testing.T) {
	src := smallScenario().source()
	start := smallScenario().start()
	cases := map[string]binlogstream.Config{
		"no source": {Start: start},
		"no start":  {Source: src},
		"safe after streamed": {Source: src, Start: binlogstream.ResumePosition{
			Safe: binlogstream.Position{File: "mysql-bin.000001", Offset: 900}, Streamed: binlogstream.Position{File: "mysql-bin.000001", Offset: 4}}},
		"negative backoff": {Source: src, Start: start, ReconnectBackoff: -time.Second},
	}
	for name, cfg := range cases {
		_, err := binlogstream.NewBinlogStreamer(cfg)
		assert.ErrorIs(t, err, binlogstream.ErrInvalidConfig, name)
	}

	syncerCases := map[string]binlogstream.SyncerConfig{
		"server id 0":   {DSN: binlogstream.DSN{User: "u", Host: "127.0.0.1"}},
		"no host":       {DSN: binlogstream.DSN{User: "u"}, ServerID: 7},
		"no user":       {DSN: binlogstream.DSN{Host: "127.0.0.1"}, ServerID: 7},
		"bad flavor":    {DSN: binlogstream.DSN{User: "u", Host: "127.0.0.1"}, ServerID: 7, Flavor: "postgres"},
		"neg heartbeat": {DSN: binlogstream.DSN{User: "u", Host: "127.0.0.1"}, ServerID: 7, HeartbeatPeriod: -1},
	}
	for name, cfg := range syncerCases {
		_, err := binlogstream.NewSyncerSource(cfg) // must not panic, as go-mysql does on server id 0
		assert.ErrorIs(t, err, binlogstream.ErrInvalidConfig, name)
	}
}

func TestReconnectExhausted(t *testing.T) {
	sc := smallScenario()
	src := sc.source()
	src.RefuseOpens(100)
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: sc.start(),
		MaxReconnectAttempts: 3, ReconnectBackoff: time.Millisecond})
	require.NoError(t, err)
	err = s.Run(context.Background())
	require.ErrorIs(t, err, binlogstream.ErrReconnectExhausted)
	require.ErrorIs(t, err, mysql.ErrBadConn, "the last cause is kept")
	var re *binlogstream.ReconnectError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, 3, re.Attempts)
	assert.Len(t, src.Opens(), 4, "one connection and three reconnects")
}

func TestReconnectCountResetsAfterProgress(t *testing.T) {
	sc := smallScenario()
	full := uninterrupted(t, sc)
	src := sc.source()
	// Every connection drops after it made some progress (6 events: the
	// fake Rotate, the Format_description and 4 more, more than any replay
	// here): with a bound of one reconnect in a row the stream completes.
	for i := 0; i < 40; i++ {
		src.FailStream(i, 6)
	}
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: sc.start(),
		MaxReconnectAttempts: 1, ReconnectBackoff: time.Microsecond})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []string
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		got = append(got, entries(ev)...)
		if len(got) == len(full.entries) {
			cancel()
		}
		return nil
	})
	assert.ErrorIs(t, s.Run(ctx), context.Canceled)
	assert.Equal(t, full.entries, got)
	assert.GreaterOrEqual(t, s.Stats().Reconnects, uint64(3))
	assert.Greater(t, s.Stats().DroppedAfterReconnect, uint64(0), "replayed events were dropped")
	assert.Zero(t, s.Stats().DroppedAtStart, "the start drops nothing")
}

// TestStatsCountOneThingEach: refused tries, the first dump of a resume and
// a reconnect each land in their own counter.
func TestStatsCountOneThingEach(t *testing.T) {
	sc := smallScenario()
	full := uninterrupted(t, sc)
	// Tokens inside a statement: a resume from them drops replayed events.
	var inside []int // k: after the k-th event
	for i, tok := range full.tokens {
		if tok.Safe != tok.Streamed {
			inside = append(inside, i+1)
		}
	}
	require.GreaterOrEqual(t, len(inside), 2)
	k, j := inside[0], inside[len(inside)-1]
	start := roundTrip(t, full.tokens[k-1])
	clean := stream(t, sc.source(), start, len(sc.bl.Events)-k, nil)
	require.Positive(t, clean.stats.DroppedAtStart)
	clean.stats.Lag = 0
	assert.Equal(t, binlogstream.Stats{Delivered: uint64(len(sc.bl.Events) - k), DroppedAtStart: clean.stats.DroppedAtStart,
		Position: clean.last, At: clean.last.Streamed}, clean.stats)

	src := sc.source()
	src.RefuseOpens(2) // opens 0 and 1 refused: the first dump is open 2
	// Open 2 drops after the j-th event: the fake Rotate, the FDE, the
	// replayed events and the events k+1..j.
	src.FailStream(2, 2+int(clean.stats.DroppedAtStart)+j-k)
	r := stream(t, src, start, len(sc.bl.Events)-k, func(n int, _ binlogstream.Event) error {
		if n == 1 {
			src.RefuseOpens(1) // open 3 refused, open 4 is the reconnect
		}
		return nil
	})
	require.ErrorIs(t, r.err, context.Canceled)
	assert.Equal(t, full.entries[full.first[k]:], r.entries)
	assert.Len(t, src.Opens(), 5)
	assert.Equal(t, uint64(4), r.stats.ReconnectAttempts, "opens 1 to 4")
	assert.Equal(t, uint64(1), r.stats.Reconnects, "open 4")
	assert.Equal(t, clean.stats.DroppedAtStart, r.stats.DroppedAtStart, "open 2 dropped what the token had delivered")
	assert.Positive(t, r.stats.DroppedAfterReconnect, "open 4 dropped what open 2 delivered")
	assert.Equal(t, clean.stats.Delivered, r.stats.Delivered)
}

// TestReplayCutsDoNotLoop: every connection drops before its replay is
// over, so the resume position never moves. Dropping replayed events is
// not progress: the attempts run out instead of looping forever.
func TestReplayCutsDoNotLoop(t *testing.T) {
	sc := smallScenario()
	src := sc.source()
	// The first two dumps open the first statement (up to its first rows
	// event); every later one is cut (after the fake Rotate, the FDE and
	// 2 more events) while it replays that statement.
	src.FailStream(0, 5)
	for i := 1; i < 40; i++ {
		src.FailStream(i, 4)
	}
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: sc.start(),
		MaxReconnectAttempts: 3, ReconnectBackoff: time.Microsecond})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = s.Run(ctx)
	require.ErrorIs(t, err, binlogstream.ErrReconnectExhausted)
	assert.Len(t, src.Opens(), 5, "two dumps that progressed, then 3 reconnects that only replayed")
}

func TestServerErrorIsNotRetried(t *testing.T) {
	sc := scenario{bl: th.NewBuilder(th.MariaDB).Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 1)...) }).
		Rotate().Txn(func(t *th.Txn) { t.Insert(users, userRows(2, 1)...) }).Build()}
	src := sc.source()
	src.Purge(1)
	r := stream(t, src, sc.start(), -1, nil)
	var se *binlogstream.ServerError
	require.ErrorAs(t, r.err, &se)
	var me *mysql.MyError
	require.ErrorAs(t, r.err, &me)
	assert.Equal(t, uint16(1236), me.Code)
	assert.Len(t, src.Opens(), 1, "a purged binlog is not retried")
	assert.Equal(t, 0, r.events)

	past := binlogstream.StartAt(binlogstream.Position{File: sc.bl.Files[1].Name, Offset: 1 << 20})
	r = stream(t, sc.source(), past, -1, nil)
	require.ErrorAs(t, r.err, &se)
}

func TestResumeMismatchIsTyped(t *testing.T) {
	sc := smallScenario()
	full := uninterrupted(t, sc)
	// A token whose streamed position falls inside an event of this binlog.
	tok := full.tokens[5]
	tok.Streamed.Offset--
	r := stream(t, sc.source(), tok, -1, nil)
	require.ErrorIs(t, r.err, binlogstream.ErrResumeMismatch)
	assert.Equal(t, 0, r.events)

	// A token claiming more rows of an event than it has.
	for i, c := range full.changes {
		if c > 0 {
			bad := full.tokens[i-1]
			bad.Rows = uint32(c)
			r := stream(t, sc.source(), bad, -1, nil)
			require.ErrorIs(t, r.err, binlogstream.ErrResumeMismatch)
			break
		}
	}
}

func TestOffsetPast4GiBRefusedInFileMode(t *testing.T) {
	sc := smallScenario()
	tok := binlogstream.StartAt(binlogstream.Position{File: "mysql-bin.000001", Offset: 1<<32 + 100})
	r := stream(t, sc.source(), tok, -1, nil)
	require.ErrorIs(t, r.err, binlogstream.ErrOffsetTooLarge)
	assert.Contains(t, r.err.Error(), "4294967396")
}

func TestPasswordNeverInErrorsOrLogs(t *testing.T) {
	const secret = "s3cr3t-Pa55"
	d, err := binlogstream.ParseDSN("streamer:" + secret + "@tcp(127.0.0.1:1)/")
	require.NoError(t, err)
	assert.Equal(t, secret, d.Password)
	assert.NotContains(t, d.String(), secret)

	_, err = binlogstream.ParseDSN("streamer:" + secret + "@tcp(127.0.0.1:notaport)/")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)
	_, err = binlogstream.ParseDSN("streamer:" + secret + "@127.0.0.1:3306")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)

	// Messages are built without the password, not scrubbed afterwards:
	// a password that is also a piece of the text ("p" in "tcp") leaves
	// the text whole.
	for _, pw := range []string{secret, "p"} {
		d.Password = pw
		var logs bytes.Buffer
		log := logrus.New()
		log.SetOutput(&logs)
		log.SetLevel(logrus.DebugLevel)
		src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{DSN: d, ServerID: 9, Logger: log})
		require.NoError(t, err)
		s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src,
			Start:                binlogstream.StartAt(binlogstream.Position{File: "mysql-bin.000001", Offset: 4}),
			MaxReconnectAttempts: 1, ReconnectBackoff: time.Millisecond, Logger: log})
		require.NoError(t, err)
		err = s.Run(context.Background()) // nothing listens on port 1
		require.ErrorIs(t, err, binlogstream.ErrReconnectExhausted)
		assert.Contains(t, err.Error(), "connect to streamer:xxxxx@tcp(127.0.0.1:1)/: dial tcp 127.0.0.1:1: connect: connection refused")
		assert.Contains(t, logs.String(), "binlog connection lost", "the settings check before the dump failed to connect")
		assert.NotContains(t, logs.String(), "config=")
		if pw == secret {
			assert.NotContains(t, err.Error(), secret)
			assert.NotContains(t, logs.String(), secret)
		}
	}
}

// TestStopAtWhileIdle: a stop target set while the stream is caught up
// and idle ends Run with nil at the next heartbeat.
func TestStopAtWhileIdle(t *testing.T) {
	sc := smallScenario()
	src := th.NewFakeSource(sc.bl, th.HeartbeatWhenIdle(5*time.Millisecond))
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: sc.start()})
	require.NoError(t, err)
	var n atomic.Int32
	s.AddListener(func(context.Context, binlogstream.Event) error { n.Add(1); return nil })
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	require.Eventually(t, func() bool { return int(n.Load()) == len(sc.bl.Events) }, 5*time.Second, time.Millisecond)
	last := sc.bl.Files[len(sc.bl.Files)-1]
	s.StopAt(binlogstream.Position{File: last.Name, Offset: uint64(len(last.Data))})
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not stop at the target while idle")
	}
}

// probedSource is a fake source that reports a binlog position, as a
// SyncerSource's Probe does.
type probedSource struct {
	*th.FakeSource
	at binlogstream.Position
}

func (p probedSource) Probe(context.Context) (binlogstream.ServerState, error) {
	return binlogstream.ServerState{LogBin: true, Binlog: p.at}, nil
}

// TestFlushAndStop: the call records the server's position and returns
// once everything up to it is delivered and Run has returned nil, though
// the server wrote more meanwhile.
func TestFlushAndStop(t *testing.T) {
	b := th.NewBuilder(th.MySQL, th.MaxRowsPerEvent(2)).
		Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 5)...) })
	first := b.Build()
	last := first.Files[len(first.Files)-1]
	src := th.NewFakeSource(first)
	ps := probedSource{FakeSource: src, at: binlogstream.Position{File: last.Name, Offset: uint64(len(last.Data))}}
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: ps,
		Start: binlogstream.StartAt(binlogstream.Position{File: first.Files[0].Name, Offset: 4})})
	require.NoError(t, err)
	assert.ErrorIs(t, s.FlushAndStop(context.Background()), binlogstream.ErrNotRunning)
	var n atomic.Int32
	started := make(chan struct{})
	s.AddListener(func(context.Context, binlogstream.Event) error {
		if n.Add(1) == 1 {
			close(started)
		}
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	<-started
	// More is written after the target was read: not part of this run.
	require.NoError(t, src.Append(b.Txn(func(t *th.Txn) { t.Delete(users, userRows(1, 2)...) }).Build()))
	require.NoError(t, s.FlushAndStop(context.Background()))
	require.NoError(t, <-done)
	// Everything up to the target; events written after it may or may not
	// have been delivered before the target was recorded.
	assert.GreaterOrEqual(t, n.Load(), int32(len(first.Events)))
	assert.GreaterOrEqual(t, s.ResumePosition().Streamed.Compare(ps.at), 0)
}

// TestFlushAndStopWhenCaughtUp: the target is already delivered and the
// server is silent (no heartbeats): FlushAndStop still returns at once.
func TestFlushAndStopWhenCaughtUp(t *testing.T) {
	sc := smallScenario()
	last := sc.bl.Files[len(sc.bl.Files)-1]
	ps := probedSource{FakeSource: sc.source(), at: binlogstream.Position{File: last.Name, Offset: uint64(len(last.Data))}}
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: ps, Start: sc.start()})
	require.NoError(t, err)
	var n atomic.Int32
	s.AddListener(func(context.Context, binlogstream.Event) error { n.Add(1); return nil })
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	require.Eventually(t, func() bool { return int(n.Load()) == len(sc.bl.Events) }, 5*time.Second, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	require.NoError(t, s.FlushAndStop(ctx))
	require.NoError(t, <-done)
}

// TestEventsAreValues: every listener gets its own copy of each event;
// events kept past the run still render as they did during it, and their
// per-row tokens are the same, in file and GTID mode; a listener that
// changes its copy changes nothing another listener or a later event sees.
func TestEventsAreValues(t *testing.T) {
	sc := smallScenario()
	gtidStart, err := binlogstream.StartAtGTID(string(sc.bl.Flavor), "")
	require.NoError(t, err)
	for _, start := range []binlogstream.ResumePosition{sc.start(), gtidStart} {
		src := sc.source()
		s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: start})
		require.NoError(t, err)
		type seen struct {
			kept    binlogstream.Event
			entries []string
			perRow  []binlogstream.ResumePosition
		}
		var got []seen
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var caughtUp atomic.Bool
		s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
			x := seen{kept: ev, entries: entries(ev)}
			for i := range binlogstream.RowChanges(ev.BinlogEvent) + 1 {
				x.perRow = append(x.perRow, ev.ResumeAfterRows(i))
			}
			got = append(got, x)
			ev.Resume, ev.GTID = binlogstream.ResumePosition{}, "scribbled" // the listener's own copy
			if start.IsGTID() && x.kept.Resume.GTID == "" && x.kept.Resume.Executed == finalExecuted(src) ||
				!start.IsGTID() && len(got) == len(sc.bl.Events) {
				caughtUp.Store(true)
				cancel()
			}
			return nil
		})
		var second []binlogstream.ResumePosition
		s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
			second = append(second, ev.Resume)
			return nil
		})
		require.ErrorIs(t, s.Run(ctx), context.Canceled)
		cancel()
		require.True(t, caughtUp.Load(), "streamed to the end")
		require.Greater(t, len(got), 6)
		for i, x := range got {
			assert.Equal(t, x.entries, entries(x.kept), "a kept event is intact after Run")
			assert.Equal(t, x.kept.Resume, second[i], "the second listener saw the event, not the first one's changes")
			for n, want := range x.perRow {
				assert.Equal(t, want, x.kept.ResumeAfterRows(n), "event %d, %d rows", i, n)
			}
		}
		require.NoError(t, s.Close())
	}
}

// TestGracefulStopLetsTheListenerFinish: cancelling Run's context leaves
// the listener's own context alive for StopGrace, so the event being
// handled finishes and counts; past StopGrace the listener's context is
// cancelled, and a listener that fails on it is reported, not swallowed.
// Close cancels it at once.
func TestGracefulStopLetsTheListenerFinish(t *testing.T) {
	sc := smallScenario()
	full := uninterrupted(t, sc)
	run := func(t *testing.T, grace time.Duration, stop func(cancel context.CancelFunc, s *binlogstream.BinlogStreamer),
		listener func(ctx context.Context) error) (error, *binlogstream.BinlogStreamer) {
		s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: sc.source(), Start: sc.start(), StopGrace: grace})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		inside := make(chan struct{})
		n := 0
		s.AddListener(func(lctx context.Context, ev binlogstream.Event) error {
			if n++; n < 3 {
				return nil
			}
			close(inside)
			return listener(lctx)
		})
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		<-inside
		stop(cancel, s)
		return <-done, s
	}
	cancelRun := func(cancel context.CancelFunc, _ *binlogstream.BinlogStreamer) { cancel() }

	t.Run("finishes", func(t *testing.T) {
		err, s := run(t, 0, cancelRun, func(lctx context.Context) error {
			time.Sleep(50 * time.Millisecond) // a transaction committing
			return lctx.Err()
		})
		require.ErrorIs(t, err, context.Canceled)
		var le *binlogstream.ListenerError
		require.False(t, errors.As(err, &le), "%v", err)
		assert.Equal(t, full.tokens[2], s.ResumePosition(), "the third event counts, nothing after it was delivered")
	})
	t.Run("hard deadline", func(t *testing.T) {
		began := time.Now()
		err, s := run(t, 100*time.Millisecond, cancelRun, func(lctx context.Context) error {
			<-lctx.Done() // a listener stuck until its context ends
			return fmt.Errorf("apply: %w", lctx.Err())
		})
		assert.GreaterOrEqual(t, time.Since(began), 100*time.Millisecond)
		var le *binlogstream.ListenerError
		require.ErrorAs(t, err, &le, "the listener's failure is not swallowed")
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, full.tokens[1], s.ResumePosition(), "the failed event does not count")
	})
	t.Run("failure during the stop", func(t *testing.T) {
		boom := errors.New("disk full")
		err, _ := run(t, 0, cancelRun, func(context.Context) error { return boom })
		require.ErrorIs(t, err, boom)
	})
	t.Run("Close is hard", func(t *testing.T) {
		began := time.Now()
		err, _ := run(t, time.Hour, func(_ context.CancelFunc, s *binlogstream.BinlogStreamer) { go s.Close() },
			func(lctx context.Context) error { <-lctx.Done(); return lctx.Err() })
		require.ErrorIs(t, err, binlogstream.ErrClosed)
		assert.Less(t, time.Since(began), time.Minute)
	})
}
