package binlogstream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

func TestValidateCandidateFailsClosed(t *testing.T) {
	const u = th.DefaultUUID
	pos := binlogstream.ResumePosition{Flavor: "mysql", Executed: u + ":1-10", GTID: u + ":11",
		Progress: binlogstream.TxnProgress{Rows: 3, Fingerprint: 1}}
	good := binlogstream.ServerState{Flavor: "mysql", GTIDMode: "ON", LogBin: true, LogSlaveUpdates: true, Executed: u + ":1-20"}
	require.NoError(t, binlogstream.ValidateCandidate("good", good, pos, u+":1-15"))

	cases := []struct {
		name   string
		edit   func(*binlogstream.ServerState)
		target string
		reason string
	}{
		{"read only", func(s *binlogstream.ServerState) { s.ReadOnly = true }, "", "read_only=ON"},
		{"super read only", func(s *binlogstream.ServerState) { s.SuperReadOnly = true }, "", "super_read_only=ON"},
		{"gtid off", func(s *binlogstream.ServerState) { s.GTIDMode = "OFF_PERMISSIVE" }, "", "gtid_mode=OFF_PERMISSIVE"},
		{"no binlog", func(s *binlogstream.ServerState) { s.LogBin = false }, "", "log_bin=OFF"},
		{"misses applied", func(s *binlogstream.ServerState) { s.Executed = u + ":1-9" }, "", "transactions already delivered"},
		{"misses in-flight", func(s *binlogstream.ServerState) { s.Executed = u + ":1-10" }, "", "in-flight transaction"},
		{"misses stop target", func(s *binlogstream.ServerState) {}, u + ":1-25", "stop target"},
		{"other flavor", func(s *binlogstream.ServerState) { s.Flavor = "mariadb" }, "", "is mariadb"},
		{"garbage set", func(s *binlogstream.ServerState) { s.Executed = "zzz" }, "", "does not parse"},
		{"no log_slave_updates", func(s *binlogstream.ServerState) { s.Executed = u + ":1-5"; s.LogSlaveUpdates = false }, "", "log_slave_updates=OFF"},
	}
	for _, tc := range cases {
		st := good
		tc.edit(&st)
		err := binlogstream.ValidateCandidate("cand", st, pos, tc.target)
		require.Error(t, err, tc.name)
		assert.ErrorIs(t, err, binlogstream.ErrCandidateRefused, tc.name)
		assert.Contains(t, err.Error(), tc.reason, tc.name)
	}
	fileMode := binlogstream.StartAt(binlogstream.Position{File: "mysql-bin.000001", Offset: 4})
	assert.ErrorContains(t, binlogstream.ValidateCandidate("cand", good, fileMode, ""), "file mode")

	// MariaDB: containment per domain, server ids aside (a promoted replica
	// writes its own server id into new GTIDs).
	mpos := binlogstream.ResumePosition{Flavor: "mariadb", Executed: "0-1-7", GTID: "0-1-8"}
	mgood := binlogstream.ServerState{Flavor: "mariadb", LogBin: true, LogSlaveUpdates: true, Executed: "0-2-9"}
	require.NoError(t, binlogstream.ValidateCandidate("m", mgood, mpos, ""))
	mgood.Executed = "0-1-7"
	assert.ErrorContains(t, binlogstream.ValidateCandidate("m", mgood, mpos, ""), "in-flight")
}

func staticState(st binlogstream.ServerState) binlogstream.Prober {
	return binlogstream.ProberFunc(func(context.Context) (binlogstream.ServerState, error) { return st, nil })
}

// TestFailoverMidTransaction: the primary dies in the middle of a
// transaction; the resolver offers a read-only replica, one that lacks the
// in-flight transaction, and the promoted writer whose binlog splits rows
// differently. Only the writer is streamed from, and every change arrives
// exactly once.
func TestFailoverMidTransaction(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		t.Run(string(f), func(t *testing.T) {
			primaryLog, promotedLog := gtidWorkload(f, 2), gtidWorkload(f, 3)
			full := streamGTID(t, th.NewFakeSource(primaryLog), gtidStart(t, f), -1, nil)
			require.ErrorIs(t, full.err, context.Canceled)
			final := finalExecuted(th.NewFakeSource(primaryLog))

			for _, dieAfter := range []int{3, 7, 12, 20, 33} {
				primary := th.NewFakeSource(primaryLog)
				primary.FailStream(0, dieAfter)
				readOnly, stale, promoted := th.NewFakeSource(promotedLog), th.NewFakeSource(primaryLog), th.NewFakeSource(promotedLog)
				flavor := string(f)
				writer := binlogstream.ServerState{Flavor: flavor, GTIDMode: "ON", LogBin: true, LogSlaveUpdates: true, Executed: final}
				ro := writer
				ro.ReadOnly = true
				old := writer
				old.Executed = ""
				res := binlogstream.StaticResolver(
					binlogstream.Candidate{Name: "replica-ro", Source: readOnly, Prober: staticState(ro)},
					binlogstream.Candidate{Name: "stale", Source: stale, Prober: staticState(old)},
					binlogstream.Candidate{Name: "promoted", Source: promoted, Prober: staticState(writer)},
				)
				s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{
					Source: &deadAfterFirst{FakeSource: primary}, Start: gtidStart(t, f),
					ReconnectBackoff: time.Microsecond, MaxReconnectBackoff: time.Millisecond,
					Failover: &binlogstream.FailoverConfig{Resolver: res, Wait: time.Millisecond},
				})
				require.NoError(t, err)
				require.NoError(t, s.StopAtGTID(final))
				var got []string
				s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
					got = append(got, gtidEntries(ev)...)
					return nil
				})
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				require.NoError(t, s.Run(ctx), "Run returns nil at the stop target")
				cancel()
				assert.Equal(t, full.entries, got, "die after %d", dieAfter)
				assert.Equal(t, uint64(1), s.Stats().Failovers)
				assert.Empty(t, readOnly.Opens(), "a refused candidate is never streamed from")
				assert.Empty(t, stale.Opens(), "a refused candidate is never streamed from")
				assert.NotEmpty(t, promoted.Opens())
			}
		})
	}
}

// deadAfterFirst serves one dump from the fake source; every later open
// is refused, as a crashed server's would be.
type deadAfterFirst struct {
	*th.FakeSource
	opened bool
}

func (d *deadAfterFirst) OpenGTID(ctx context.Context, set mysql.GTIDSet) (binlogstream.Stream, error) {
	if d.opened {
		return nil, errConnRefused
	}
	d.opened = true
	return d.FakeSource.OpenGTID(ctx, set)
}

func TestFailoverExhausted(t *testing.T) {
	f := th.MariaDB
	primaryLog := gtidWorkload(f, 2)
	primary := th.NewFakeSource(primaryLog)
	primary.FailStream(0, 9)
	ro := binlogstream.ServerState{Flavor: "mariadb", LogBin: true, ReadOnly: true, Executed: finalExecuted(primary)}
	cand := th.NewFakeSource(primaryLog)
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{
		Source: &deadAfterFirst{FakeSource: primary}, Start: gtidStart(t, f),
		ReconnectBackoff: time.Microsecond,
		Failover: &binlogstream.FailoverConfig{Attempts: 3, Wait: time.Millisecond, Resolver: binlogstream.StaticResolver(
			binlogstream.Candidate{Name: "only-replica", Source: cand, Prober: staticState(ro)})},
	})
	require.NoError(t, err)
	err = s.Run(context.Background())
	require.ErrorIs(t, err, binlogstream.ErrFailoverExhausted)
	require.ErrorIs(t, err, binlogstream.ErrCandidateRefused)
	var fe *binlogstream.FailoverError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, 3, fe.Attempts)
	assert.Contains(t, err.Error(), "read_only=ON")
	assert.Contains(t, err.Error(), "only-replica")
	assert.Empty(t, cand.Opens())
	assert.NotEmpty(t, s.ResumePosition().Executed, "what was delivered is kept for a later resume")
}

func TestFailoverNeedsGTIDMode(t *testing.T) {
	_, err := binlogstream.NewBinlogStreamer(binlogstream.Config{
		Source: smallScenario().source(), Start: smallScenario().start(),
		Failover: &binlogstream.FailoverConfig{Resolver: binlogstream.StaticResolver()},
	})
	require.ErrorIs(t, err, binlogstream.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "GTID mode")
}

var errConnRefused = fmt.Errorf("fake: connection refused: %w", mysql.ErrBadConn)
