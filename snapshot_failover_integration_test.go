package binlogstream_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// A snapshot in GTID mode survives a failover, as the stream does: the
// primary is SIGKILLed while chunks are read under writes, the replica is
// promoted, and the run moves to it by itself (Failover) and goes on with
// the snapshot there. Later the consumer crashes and resumes from its
// token on the new primary. The fold of everything delivered must end
// equal to the new primary's table, no rule failing on the way.

type snapFailoverRun struct {
	s       *binlogstream.BinlogStreamer
	token   binlogstream.ResumePosition
	reads   atomic.Int64
	crashAt int64 // crash on this read (0: never)
}

func TestSnapshotGTIDFailover(t *testing.T) {
	mariadb.Require(t)
	const rows = 40_000
	p := mariadb.StartPair(t, mariadb.Options{BinlogRowEventMaxSize: 1024,
		ExtraArgs: []string{"--binlog-row-metadata=FULL"}})
	p.Primary.Exec(t, "CREATE DATABASE app",
		"CREATE TABLE app.big (id BIGINT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40) NOT NULL)",
		"USE app", fmt.Sprintf("INSERT INTO app.big SELECT seq, 0, 'initial' FROM seq_1_to_%d", rows))
	p.WaitReplicaCaughtUp(t)
	start, err := binlogstream.StartAtGTID(mysql.MariaDBFlavor, p.Primary.GTIDBinlogPos(t))
	require.NoError(t, err)
	pats, err := binlogstream.ParseTablePatterns("app.big")
	require.NoError(t, err)
	snap := &binlogstream.SnapshotConfig{Tables: pats, ChunkRows: 500}
	f := newSnapFold(map[string][]string{"app.big": {"id"}})
	cands, err := binlogstream.SyncerCandidates(foSyncerConfig(p.Replica, 3101))
	require.NoError(t, err)

	// Writers aimed at the chunk being read, on whichever server is the
	// primary; they stop before the kill so the replica holds all of it
	// (a failover to a replica missing transactions is refused, and that
	// is TestIntegrationFailoverFailsClosed's case).
	var cursor, writes atomic.Int64
	errs := make(chan error, 8)
	startWriters := func(s *mariadb.Server, seed uint64) func() {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 3 {
			c := s.Conn(t, "root")
			wg.Add(1)
			go func() { defer wg.Done(); writer(c, seed+uint64(i), &cursor, stop, &writes, errs) }()
		}
		return sync.OnceFunc(func() { close(stop); wg.Wait() })
	}
	stopOld := startWriters(p.Primary, 0)
	defer stopOld()
	var stopNew func()
	defer func() {
		if stopNew != nil {
			stopNew()
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errCrash := errors.New("crash")
	newRun := func(src binlogstream.Source, from binlogstream.ResumePosition, failover bool) *snapFailoverRun {
		cfg := binlogstream.Config{Source: src, Start: from, Snapshot: snap,
			MaxReconnectAttempts: 2, ReconnectBackoff: 20 * time.Millisecond, MaxReconnectBackoff: 50 * time.Millisecond}
		if failover {
			cfg.Failover = &binlogstream.FailoverConfig{Resolver: binlogstream.StaticResolver(cands...), Attempts: 200, Wait: 100 * time.Millisecond}
		}
		if testing.Verbose() {
			l := logrus.New()
			l.SetLevel(logrus.DebugLevel)
			cfg.Logger = l
		}
		s, err := binlogstream.NewBinlogStreamer(cfg)
		require.NoError(t, err)
		r := &snapFailoverRun{s: s, token: from}
		if testing.Verbose() {
			go func() {
				for ctx.Err() == nil {
					time.Sleep(2 * time.Second)
					t.Logf("reads %d snapshot %+v stream %+v", r.reads.Load(), s.SnapshotStats(), s.Stats())
				}
			}()
		}
		s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
			if _, ok := ev.Event.(*binlogstream.SnapshotRead); ok {
				if n := r.reads.Add(1); n == r.crashAt {
					return errCrash
				}
			}
			if k := f.apply(ev); k != "" {
				var id int64
				_, _ = fmt.Sscan(k, &id)
				cursor.Store(id)
			}
			r.token = ev.Resume
			return nil
		})
		return r
	}

	// Run 1 on the primary: the kill comes a third of the way in, and the
	// consumer crashes a while after the failover.
	r1 := newRun(foSource(t, p.Primary, 3100), start, true)
	r1.crashAt = rows * 2 / 3
	done := make(chan error, 1)
	go func() { done <- r1.s.Run(ctx) }()
	for r1.reads.Load() < rows/3 {
		select {
		case err := <-done:
			t.Fatalf("run ended before the kill: %v; fold: %v", err, f.err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	stopOld()
	p.WaitReplicaCaughtUp(t)
	p.Primary.Kill()
	killedAt := r1.reads.Load()
	newPrimary := p.Promote(t)
	stopNew = startWriters(newPrimary, 10)
	err = <-done
	require.ErrorIs(t, err, errCrash, "run 1 ends at its crash, after the failover; fold: %v", f.err)
	require.NoError(t, f.err)
	require.Equal(t, uint64(1), r1.s.Stats().Failovers, "run 1 failed over")
	_ = r1.s.Close()
	t.Logf("run 1: %d reads, the kill after %d, crashed at %d; token %s", r1.reads.Load(), killedAt, r1.crashAt, r1.token)

	// Run 2 resumes the token on the new primary, the writes go on for a
	// while, then it runs to the server's position with the snapshot done.
	r2 := newRun(foSource(t, newPrimary, 3102), r1.token, false)
	go func() { done <- r2.s.Run(ctx) }()
	time.Sleep(300 * time.Millisecond)
	stopNew()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	_, err = r2.s.StopAtCurrent(ctx)
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.NoError(t, f.err)
	_ = r2.s.Close()
	st := r2.s.SnapshotStats()
	require.Zero(t, st.Tables, "the snapshot completed")

	want := tableRows(t, newPrimary, "app.big", []string{"id"})
	require.True(t, maps.Equal(want, f.rows["app.big"]), "the fold (%d rows) equals the new primary's table (%d rows)",
		len(f.rows["app.big"]), len(want))
	t.Logf("%d writes; %d reads, %d row changes delivered; run 2: %d reads", writes.Load(), f.reads, f.changes, r2.reads.Load())
}
