package binlogstream_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// Failover on real MariaDB servers, GTID mode: a primary SIGKILLed in the
// middle of a large transaction, its replica promoted, and the streamer
// moving over by itself; then every fail-closed rule, one refused candidate
// each.

// foSyncerConfig is a GTID-mode SyncerConfig for s with short heartbeats,
// so a dead server is noticed at once.
func foSyncerConfig(s *mariadb.Server, serverID uint32) binlogstream.SyncerConfig {
	return binlogstream.SyncerConfig{
		DSN:      binlogstream.DSN{User: s.ReplUser(), Password: s.ReplPassword(), Host: s.Host(), Port: uint16(s.Port())},
		ServerID: serverID, Flavor: mysql.MariaDBFlavor,
		HeartbeatPeriod: 200 * time.Millisecond, ReadTimeout: time.Second,
		// A small read-ahead, so a kill lands inside the transaction the
		// listener is in rather than after go-mysql decoded all of it.
		EventCacheCount: 32,
	}
}

func foSource(t *testing.T, s *mariadb.Server, serverID uint32) *binlogstream.SyncerSource {
	t.Helper()
	src, err := binlogstream.NewSyncerSource(foSyncerConfig(s, serverID))
	require.NoError(t, err)
	return src
}

func foStart(t *testing.T) binlogstream.ResumePosition {
	t.Helper()
	r, err := binlogstream.StartAtGTID(mysql.MariaDBFlavor, "")
	require.NoError(t, err)
	return r
}

// foLastSeq is the sequence number of a one-domain MariaDB GTID position
// such as "0-1-42".
func foLastSeq(t *testing.T, pos string) uint64 {
	t.Helper()
	f := strings.Split(pos, "-")
	require.Len(t, f, 3, "one domain in %q", pos)
	n, err := strconv.ParseUint(f[2], 10, 64)
	require.NoError(t, err)
	return n
}

// foStreamAll streams src from the start of its binlog until the GTID set
// target is delivered, and returns the entries.
func foStreamAll(t *testing.T, src binlogstream.Source, target string) []string {
	t.Helper()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: foStart(t)})
	require.NoError(t, err)
	require.NoError(t, s.StopAtGTID(target))
	var got []string
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		got = append(got, itEntries(ev)...)
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.Run(ctx), "Run returns nil at the stop target")
	return got
}

// foWaitLogged waits until the hook saw a line containing sub, or errc
// reports that Run ended.
func foWaitLogged(t *testing.T, hook *logtest.Hook, sub string, errc <-chan error) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		for _, e := range hook.AllEntries() {
			if strings.Contains(e.Message, sub) {
				return
			}
		}
		select {
		case err := <-errc:
			t.Fatalf("Run ended before %q was logged: %v", sub, err)
		case <-deadline:
			t.Fatalf("%q never logged", sub)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// foBigTxnRows is the size of the transaction the primary dies in. At about
// 4 rows per Rows event (binlog_row_event_max_size 1024) it is ~15k events
// and ~13 MB of binlog: more than go-mysql's read-ahead and the socket
// buffers hold, so the kill really lands inside it.
const foBigTxnRows = 60000

// TestIntegrationFailoverMidTransaction: the primary is SIGKILLed while
// the listener is a few thousand rows into a 60k-row transaction. The
// streamer retries the dead server, refuses the replica while it is still
// read-only, moves to it once it is promoted, replays the transaction from
// its GTID, drops the rows already delivered, and goes on with what the new
// primary writes. What was delivered equals a clean run on the new
// primary, every row exactly once.
func TestIntegrationFailoverMidTransaction(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	began := time.Now()
	p := mariadb.StartPair(t, mariadb.Options{BinlogRowEventMaxSize: 1024})
	p.Primary.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(200))",
		"INSERT INTO t VALUES (-1, 'first')")
	p.Primary.Exec(t, "USE d", fmt.Sprintf("INSERT INTO t SELECT seq, REPEAT('x', 200) FROM seq_1_to_%d", foBigTxnRows))
	big := p.Primary.GTIDBinlogPos(t) // the big transaction is the last one
	p.Primary.Exec(t, "USE d", "UPDATE t SET v = 'u' WHERE id < 10", "DELETE FROM t WHERE id BETWEEN 10 AND 12")
	p.WaitReplicaCaughtUp(t)
	// The new primary writes two more transactions after the promotion,
	// under its own server id; the run stops once it delivered them.
	n := foLastSeq(t, p.Primary.GTIDBinlogPos(t))
	target := fmt.Sprintf("0-%d-%d", p.Replica.ServerID(), n+2)
	t.Logf("workload ready in %v; big transaction %s, target %s", time.Since(began).Round(time.Millisecond), big, target)

	cands, err := binlogstream.SyncerCandidates(foSyncerConfig(p.Replica, 3001))
	require.NoError(t, err)
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{
		Source: foSource(t, p.Primary, 3001), Start: foStart(t),
		MaxReconnectAttempts: 2, ReconnectBackoff: 20 * time.Millisecond, MaxReconnectBackoff: 50 * time.Millisecond,
		Failover: &binlogstream.FailoverConfig{Resolver: binlogstream.StaticResolver(cands...), Attempts: 100, Wait: 100 * time.Millisecond},
		Logger:   logger,
	})
	require.NoError(t, err)
	require.NoError(t, s.StopAtGTID(target))

	killed := make(chan struct{})
	var got []string
	var bigBefore, bigAfter int // rows of the big transaction delivered before and after the failover
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		got = append(got, itEntries(ev)...)
		if ev.GTID != big {
			return nil
		}
		rows := binlogstream.RowChanges(ev.BinlogEvent)
		if s.Stats().Failovers > 0 {
			bigAfter += rows
			return nil
		}
		bigBefore += rows
		if bigBefore >= 3000 && !foIsClosed(killed) {
			p.Primary.Kill() // the listener waits: the rest of the transaction is not sent
			close(killed)
		}
		return nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	select {
	case <-killed:
	case err := <-errc:
		t.Fatalf("Run ended before the kill: %v", err)
	}
	killedAt := time.Now()
	// Fail closed: the replica is refused while it is read-only.
	foWaitLogged(t, hook, "read_only=ON", errc)
	p.Promote(t)
	p.Replica.Exec(t, "USE d", "INSERT INTO t VALUES (-2, 'after failover')", "UPDATE t SET v = 'moved' WHERE id = -1")
	require.NoError(t, <-errc, "Run returns nil at the stop target")
	// The kill comes after 3000 rows; the old primary's rows delivered
	// after it were already in go-mysql's read-ahead and the socket buffers.
	t.Logf("done %v after the kill; of the big transaction, %d rows came from the old primary, %d from the new one",
		time.Since(killedAt).Round(time.Millisecond), bigBefore, bigAfter)

	st := s.Stats()
	assert.Equal(t, uint64(1), st.Failovers)
	assert.Positive(t, bigAfter, "the failover happened inside the big transaction")
	assert.Equal(t, foBigTxnRows, bigBefore+bigAfter)
	assert.Positive(t, st.DroppedAfterReconnect, "the replayed, already delivered part was dropped")
	assert.Equal(t, target, s.ResumePosition().Executed)

	// The reference: the promoted server's binlog streamed from scratch.
	want := foStreamAll(t, foSource(t, p.Replica, 3002), target)
	// 2 DDL, 1 + 60k inserts, 10 updates and 3 deletes, then the new
	// primary's insert and update.
	require.Len(t, want, 2+1+foBigTxnRows+10+3+2)
	require.Equal(t, len(want), len(got))
	assert.True(t, slices.Equal(want, got), "the delivered entries equal a clean run on the new primary") // not Equal: 60k lines on failure
	seen := make(map[string]bool, len(got))
	for _, e := range got {
		require.False(t, seen[e], "delivered twice: %s", e)
		seen[e] = true
	}
	t.Logf("total %v", time.Since(began).Round(time.Millisecond))
}

func foIsClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// foCountingSource records the dumps opened through it: a refused candidate
// must never be streamed from.
type foCountingSource struct {
	binlogstream.Source
	opens atomic.Int32
}

func (c *foCountingSource) OpenGTID(ctx context.Context, set mysql.GTIDSet) (binlogstream.Stream, error) {
	c.opens.Add(1)
	return c.Source.OpenGTID(ctx, set)
}

func (c *foCountingSource) OpenFile(ctx context.Context, pos mysql.Position) (binlogstream.Stream, error) {
	c.opens.Add(1)
	return c.Source.OpenFile(ctx, pos)
}

// TestIntegrationFailoverFailsClosed: one streamer per fail-closed rule,
// each with one candidate that breaks it. All stream the primary, which is
// then SIGKILLed; each candidate is probed (SyncerSource.Probe), refused
// with its reason, and never streamed from, and Run returns a
// *FailoverError.
func TestIntegrationFailoverFailsClosed(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	began := time.Now()
	p := mariadb.StartPair(t, mariadb.Options{})
	// A writable server that replicates everything: it fails only on the
	// stop target.
	writable := mariadb.Start(t, mariadb.Options{ServerID: 3})
	writable.ReplicateFrom(t, p.Primary)
	// A server that never replicated: it misses what was delivered.
	fresh := mariadb.Start(t, mariadb.Options{ServerID: 4})
	// A server without a binlog (a later option wins over the harness's
	// --log-bin).
	noBinlog := mariadb.Start(t, mariadb.Options{ServerID: 5, ExtraArgs: []string{"--skip-log-bin"}})
	require.Equal(t, "0", noBinlog.QueryValue(t, "SELECT @@log_bin"))

	p.Primary.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO t VALUES (1, 1), (2, 2)", "UPDATE t SET v = 3 WHERE id = 1", "DELETE FROM t WHERE id = 2")
	last := p.Primary.GTIDBinlogPos(t)
	p.WaitReplicaCaughtUp(t)
	writable.WaitGTID(t, last)
	beyond := fmt.Sprintf("0-1-%d", foLastSeq(t, last)+100)
	t.Logf("servers ready in %v", time.Since(began).Round(time.Millisecond))

	cases := []struct {
		name   string
		cand   *mariadb.Server
		stopAt string
		reason string
	}{
		{"a read-only replica", p.Replica, "", "read_only=ON"},
		{"misses applied GTIDs", fresh, "", "misses the transactions already delivered"},
		{"misses the stop target", writable, beyond, "misses the stop target"},
		{"no binlog", noBinlog, "", "log_bin=OFF"},
	}
	type run struct {
		s      *binlogstream.BinlogStreamer
		cand   *foCountingSource
		errc   chan error
		events atomic.Int32
	}
	runs := make([]*run, len(cases))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, tc := range cases {
		id := uint32(4001 + i)
		probe := foSource(t, tc.cand, id)
		r := &run{cand: &foCountingSource{Source: probe}, errc: make(chan error, 1)}
		var err error
		r.s, err = binlogstream.NewBinlogStreamer(binlogstream.Config{
			Source: foSource(t, p.Primary, id), Start: foStart(t),
			MaxReconnectAttempts: 1, ReconnectBackoff: 20 * time.Millisecond,
			Failover: &binlogstream.FailoverConfig{Attempts: 2, Wait: 50 * time.Millisecond,
				Resolver: binlogstream.StaticResolver(binlogstream.Candidate{Name: tc.name, Source: r.cand, Prober: probe})},
		})
		require.NoError(t, err)
		if tc.stopAt != "" {
			require.NoError(t, r.s.StopAtGTID(tc.stopAt))
		}
		r.s.AddListener(func(context.Context, binlogstream.Event) error { r.events.Add(1); return nil })
		go func() { r.errc <- r.s.Run(ctx) }()
		runs[i] = r
	}
	// Every streamer delivered the whole binlog; then the primary dies.
	require.Eventually(t, func() bool {
		for _, r := range runs {
			if pos := r.s.ResumePosition(); pos.Executed != last || pos.GTID != "" {
				return false
			}
		}
		return true
	}, 20*time.Second, 10*time.Millisecond)
	p.Primary.Kill()

	for i, tc := range cases {
		r := runs[i]
		t.Run(tc.name, func(t *testing.T) {
			var err error
			select {
			case err = <-r.errc:
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not give up")
			}
			var fe *binlogstream.FailoverError
			require.ErrorAs(t, err, &fe)
			assert.ErrorIs(t, err, binlogstream.ErrFailoverExhausted)
			assert.ErrorIs(t, err, binlogstream.ErrCandidateRefused)
			assert.Equal(t, 2, fe.Attempts)
			var ce *binlogstream.CandidateError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.name, ce.Candidate)
			assert.Contains(t, ce.Reason, tc.reason)
			assert.Contains(t, err.Error(), tc.reason)
			assert.Zero(t, r.cand.opens.Load(), "no dump opened on a refused candidate")
			assert.Equal(t, "0", tc.cand.QueryValue(t,
				"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'"))
			assert.Zero(t, r.s.Stats().Failovers)
			assert.Positive(t, r.events.Load(), "it streamed from the primary before the kill")
			assert.Equal(t, last, r.s.ResumePosition().Executed, "what was delivered is kept for a later resume")
			assert.False(t, errors.Is(err, binlogstream.ErrResumeMismatch))
		})
	}
	t.Logf("total %v", time.Since(began).Round(time.Millisecond))
}
