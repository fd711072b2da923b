package binlogstream_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/fakeprimary"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// TestWireProbe reads a fake primary's state the way failover does, over
// the wire, in both flavors.
func TestWireProbe(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		bl := gtidWorkload(f, 2)
		p := startPrimary(t, bl)
		st, err := wireSource(t, p).(binlogstream.Prober).Probe(context.Background())
		require.NoError(t, err)
		assert.Equal(t, finalExecuted(th.NewFakeSource(bl)), st.Executed, f)
		assert.False(t, st.ReadOnly, f)
		assert.True(t, st.LogBin, f)
		last := bl.Files[len(bl.Files)-1]
		assert.Equal(t, binlogstream.Position{File: last.Name, Offset: uint64(len(last.Data))}, st.Binlog, f)
		if f == th.MySQL {
			assert.Equal(t, "ON", st.GTIDMode)
		}
		p.SetVar("read_only", "1")
		st, err = wireSource(t, p).(binlogstream.Prober).Probe(context.Background())
		require.NoError(t, err)
		assert.True(t, st.ReadOnly, f)
	}
}

// TestWireGTIDFailover: GTID failover between two fake primaries over the
// wire. The primary's connection is cut mid-stream and it refuses every
// reconnect; the replica is read-only at first (refused, never streamed
// from), then promoted; the stream moves to it and replays the in-flight
// transaction from its differently split binlog, exactly once.
func TestWireGTIDFailover(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		t.Run(string(f), func(t *testing.T) {
			primaryLog, promotedLog := gtidWorkload(f, 2), gtidWorkload(f, 3)
			full := streamGTID(t, th.NewFakeSource(primaryLog), gtidStart(t, f), -1, nil)
			final := finalExecuted(th.NewFakeSource(primaryLog))

			for _, cut := range []int{6, 11, 17} {
				primary, replica := startPrimary(t, primaryLog), startPrimary(t, promotedLog)
				replica.SetVar("read_only", "1")
				primary.InjectFaults(fakeprimary.Fault{AfterEvents: cut})
				src := wireSource(t, primary)
				cands, err := binlogstream.SyncerCandidates(binlogstream.SyncerConfig{
					DSN:      binlogstream.DSN{User: replica.User(), Password: replica.Password(), Host: replica.Host(), Port: replica.Port()},
					ServerID: 4242, Flavor: string(f)})
				require.NoError(t, err)
				var asked atomic.Int32
				res := binlogstream.ResolverFunc(func(context.Context) ([]binlogstream.Candidate, error) {
					if asked.Add(1) == 2 {
						replica.SetVar("read_only", "0") // promoted between two attempts
					}
					return cands, nil
				})
				log, hook := test.NewNullLogger()
				log.SetLevel(logrus.DebugLevel)
				s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{
					Source: src, Start: gtidStart(t, f), Logger: log,
					ReconnectBackoff: 50 * time.Millisecond, MaxReconnectBackoff: 50 * time.Millisecond,
					Failover: &binlogstream.FailoverConfig{Resolver: res, Wait: 10 * time.Millisecond},
				})
				require.NoError(t, err)
				require.NoError(t, s.StopAtGTID(final))
				var got []string
				s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
					got = append(got, gtidEntries(ev)...)
					return nil
				})
				go func() { // once the first dump is open, the primary is gone for good
					for len(primary.Dumps()) == 0 {
						time.Sleep(time.Millisecond)
					}
					primary.Refuse(fakeprimary.RefuseClose)
				}()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				require.NoError(t, s.Run(ctx))
				cancel()
				assert.Equal(t, full.entries, got, "cut after %d", cut)
				assert.Equal(t, uint64(1), s.Stats().Failovers)
				assert.Len(t, primary.Dumps(), 1)
				assert.Len(t, replica.Dumps(), 1, "streamed from only once promoted")
				refused := 0
				for _, e := range hook.AllEntries() {
					if strings.Contains(e.Message, "refused") && strings.Contains(e.Message, "read_only=ON") {
						refused++
					}
				}
				assert.Positive(t, refused, "the read-only replica was refused with its reason")
			}
		})
	}
}

// TestWireGTIDCrashAtEveryEvent: GTID mode through go-mysql's syncer over
// TCP (COM_BINLOG_DUMP_GTID on MySQL, @slave_connect_state on MariaDB):
// crash after every delivered event, resume on a new connection from the
// token alone, in both flavors and with compressed transactions.
func TestWireGTIDCrashAtEveryEvent(t *testing.T) {
	compressed, err := th.CompressTransactions(gtidWorkload(th.MySQL, 2))
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		bl   *th.Binlog
	}{{"mysql", gtidWorkload(th.MySQL, 2)}, {"mariadb", gtidWorkload(th.MariaDB, 2)}, {"mysql-compressed", compressed}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := c.bl.Flavor
			p := startPrimary(t, c.bl)
			src := wireSource(t, p)
			final := finalExecuted(th.NewFakeSource(c.bl))
			run := func(from binlogstream.ResumePosition, stop int) gtidRun {
				var r gtidRun
				inner := stream(t, src, from, stop, func(n int, ev binlogstream.Event) error {
					r.entries = append(r.entries, gtidEntries(ev)...)
					if stop < 0 && ev.Resume.GTID == "" && ev.Resume.Executed == final {
						return errStopHere
					}
					return nil
				})
				r.events, r.last, r.err = inner.events, inner.last, inner.err
				return r
			}
			full := run(gtidStart(t, f), -1)
			require.ErrorIs(t, full.err, context.Canceled)
			ref := streamGTID(t, th.NewFakeSource(c.bl), gtidStart(t, f), -1, nil)
			require.Equal(t, ref.entries, full.entries, "the wire delivers what the in-process fake delivers")
			for k := 1; k < full.events; k++ {
				first := run(gtidStart(t, f), k)
				require.Equal(t, k, first.events)
				rest := run(roundTrip(t, first.last), -1)
				require.ErrorIs(t, rest.err, context.Canceled, "k=%d", k)
				require.Equal(t, full.entries, append(first.entries, rest.entries...), "crash after event %d", k)
			}
		})
	}
}
