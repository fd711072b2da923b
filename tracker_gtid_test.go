package binlogstream_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// gtidEntries renders an event without its file position, which differs
// per server: GTID-mode deliveries must be equal across servers.
func gtidEntries(ev binlogstream.Event) []string {
	out := entries(ev)
	for i, e := range out {
		f := strings.Fields(e)
		f = append(f[:1], f[2:]...) // drop "end=FILE:POS"
		out[i] = strings.Join(f, " ")
	}
	return out
}

// gtidWorkload writes the same transactions (same GTIDs) with a given
// rows-per-event split: what a primary and a replica promoted after it
// hold when their binlog_row_event_max_size differ.
func gtidWorkload(f th.Flavor, split int) *th.Binlog {
	return th.NewBuilder(f, th.MaxRowsPerEvent(split)).
		DDL("app", "CREATE TABLE users (id INT PRIMARY KEY, name VARCHAR(64))").
		Txn(func(t *th.Txn) {
			t.Insert(users, userRows(1, 6)...)
			t.Insert(orders, orderRows(1, 5)...)
		}).
		Txn(func(t *th.Txn) {
			t.MultiTable(th.Updated(users, userRows(1, 1)[0], userRows(70, 1)[0], userRows(2, 1)[0], userRows(71, 1)[0]),
				th.Deleted(orders, orderRows(1, 3)...))
		}).
		EmptyTxn().
		Rotate().
		RolledBack(func(t *th.Txn) { t.Insert(orders, orderRows(20, 3)...) }).
		Txn(func(t *th.Txn) { t.Delete(users, userRows(3, 4)...) }).
		Build()
}

func gtidStart(t *testing.T, f th.Flavor) binlogstream.ResumePosition {
	r, err := binlogstream.StartAtGTID(string(f), "")
	require.NoError(t, err)
	return r
}

type gtidRun struct {
	entries []string
	tokens  []binlogstream.ResumePosition
	changes []int
	events  int
	last    binlogstream.ResumePosition
	err     error
}

func streamGTID(t *testing.T, src binlogstream.Source, start binlogstream.ResumePosition, stop int,
	onEvent func(n int, ev binlogstream.Event) error) gtidRun {
	t.Helper()
	var r gtidRun
	inner := stream(t, src, start, stop, func(n int, ev binlogstream.Event) error {
		if onEvent != nil {
			if err := onEvent(n, ev); err != nil {
				return err
			}
		}
		r.entries = append(r.entries, gtidEntries(ev)...)
		if stop < 0 && ev.Resume.GTID == "" && ev.Resume.Executed == finalExecuted(src) {
			return errStopHere // caught up: the last transaction is delivered
		}
		return nil
	})
	r.tokens, r.changes, r.events, r.last, r.err = inner.tokens, inner.changes, inner.events, inner.last, inner.err
	return r
}

// finalExecuted is the GTID set after the last transaction of a fake
// source's (or a test DirSource's) binlog.
func finalExecuted(src binlogstream.Source) string {
	fs, ok := src.(interface{ Binlog() *th.Binlog })
	if !ok {
		return ""
	}
	bl := fs.Binlog()
	return bl.ExecutedBefore(len(bl.Events)).String()
}

func TestGTIDTokenRoundTrip(t *testing.T) {
	for _, r := range []binlogstream.ResumePosition{
		{Flavor: "mysql", Executed: th.DefaultUUID + ":1-7"},
		{Flavor: "mariadb", Executed: "0-1-7,1-2-3", GTID: "0-1-8",
			Progress: binlogstream.TxnProgress{TableMaps: 2, Rows: 70000, Statements: 1, Other: 3, Fingerprint: 0xdeadbeefcafef00d}},
		{Flavor: "mysql", Executed: "", GTID: th.DefaultUUID + ":1"},
	} {
		got, err := binlogstream.ParseResumePosition(r.String())
		require.NoError(t, err)
		assert.Equal(t, r, got)
	}
	_, err := binlogstream.StartAtGTID("mysql", "not-a-set")
	assert.ErrorIs(t, err, binlogstream.ErrInvalidConfig)
	_, err = binlogstream.StartAtGTID("postgres", "")
	assert.ErrorIs(t, err, binlogstream.ErrInvalidConfig)
}

// TestGTIDCrashAtEveryEvent: GTID mode, both flavors. Crash after every
// delivered event (and between the rows of every rows event), keep only the
// token, and resume on the same server and on a "promoted" server whose
// binlog splits the same transactions into different rows events: the
// deliveries are the uninterrupted run's, each exactly once.
func TestGTIDCrashAtEveryEvent(t *testing.T) {
	compressed, err := th.CompressTransactions(gtidWorkload(th.MySQL, 2))
	require.NoError(t, err)
	for _, c := range []struct {
		name              string
		f                 th.Flavor
		primary, promoted *th.Binlog
	}{
		{"mysql", th.MySQL, gtidWorkload(th.MySQL, 2), gtidWorkload(th.MySQL, 3)},
		{"mariadb", th.MariaDB, gtidWorkload(th.MariaDB, 2), gtidWorkload(th.MariaDB, 3)},
		// The primary compresses its transactions, the promoted one does not.
		{"mysql-compressed", th.MySQL, compressed, gtidWorkload(th.MySQL, 3)},
	} {
		f, primary, promoted := c.f, c.primary, c.promoted
		t.Run(c.name, func(t *testing.T) {
			n := 0
			for _, e := range primary.Events {
				if e.Group != 0 {
					n++
				}
			}
			full := streamGTID(t, th.NewFakeSource(primary), gtidStart(t, f), -1, nil)
			require.ErrorIs(t, full.err, context.Canceled)
			if c.name != "mysql-compressed" {
				require.Equal(t, n, full.events, "every event of every transaction, nothing else")
			}
			n = full.events
			onPromoted := streamGTID(t, th.NewFakeSource(promoted), gtidStart(t, f), -1, nil)
			assert.Len(t, onPromoted.entries, len(full.entries), "the promoted copy holds the same changes")

			for k := 1; k <= n; k++ {
				for _, next := range []*th.Binlog{primary, promoted} {
					first := streamGTID(t, th.NewFakeSource(primary), gtidStart(t, f), k, nil)
					tok := roundTrip(t, first.last)
					if k == n {
						require.Equal(t, full.entries, first.entries)
						continue
					}
					rest := streamGTID(t, th.NewFakeSource(next), tok, -1, nil)
					require.ErrorIs(t, rest.err, context.Canceled)
					require.Equal(t, full.entries, append(first.entries, rest.entries...), "crash after event %d", k)

					// Between two rows of the k-th event.
					for r := 1; r < full.changes[k-1]; r++ {
						var mid binlogstream.ResumePosition
						cut := streamGTID(t, th.NewFakeSource(primary), gtidStart(t, f), -1, func(i int, ev binlogstream.Event) error {
							if i == k {
								mid = ev.ResumeAfterRows(r)
								return errCrash
							}
							return nil
						})
						require.ErrorIs(t, cut.err, errCrash)
						rest := streamGTID(t, th.NewFakeSource(next), roundTrip(t, mid), -1, nil)
						head := full.entries[:len(cut.entries)+r]
						require.Equal(t, full.entries, append(append([]string(nil), head...), rest.entries...),
							"crash after row %d of event %d", r, k)
					}
				}
			}
		})
	}
}

// TestGTIDReplayOfADifferentTransactionFails: the server that answers the
// resume holds another transaction under the in-flight GTID (a split-brain
// or a wrong server). The streamer refuses it before delivering anything.
func TestGTIDReplayOfADifferentTransactionFails(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		t.Run(string(f), func(t *testing.T) {
			a := th.NewBuilder(f, th.MaxRowsPerEvent(2)).
				Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 6)...) }).Build()
			cases := map[string]*th.Binlog{
				"other table": th.NewBuilder(f, th.MaxRowsPerEvent(2)).
					Txn(func(t *th.Txn) { t.Insert(orders, orderRows(1, 6)...) }).Build(),
				"fewer rows": th.NewBuilder(f, th.MaxRowsPerEvent(2)).
					Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 2)...) }).Build(),
				"deletes, not inserts": th.NewBuilder(f, th.MaxRowsPerEvent(2)).
					Txn(func(t *th.Txn) { t.Delete(users, userRows(1, 6)...) }).Build(),
			}
			// Crash after the second rows event: 4 rows delivered.
			rowsSeen := 0
			first := streamGTID(t, th.NewFakeSource(a), gtidStart(t, f), -1, func(i int, ev binlogstream.Event) error {
				if rowsSeen >= 4 {
					return errCrash
				}
				rowsSeen += binlogstream.RowChanges(ev.BinlogEvent)
				return nil
			})
			require.ErrorIs(t, first.err, errCrash)
			tok := roundTrip(t, first.last)
			require.NotEmpty(t, tok.GTID)
			require.Equal(t, uint32(4), tok.Progress.Rows)
			for name, other := range cases {
				r := streamGTID(t, th.NewFakeSource(other), tok, -1, nil)
				require.ErrorIs(t, r.err, binlogstream.ErrResumeMismatch, name)
				assert.Zero(t, r.events, "%s: nothing delivered", name)
			}
		})
	}
}

func TestGTIDModeDeliversNoFileStructure(t *testing.T) {
	bl := gtidWorkload(th.MariaDB, 2)
	full := streamGTID(t, th.NewFakeSource(bl), gtidStart(t, th.MariaDB), -1, nil)
	require.ErrorIs(t, full.err, context.Canceled)
	for _, e := range full.entries {
		for _, typ := range []replication.EventType{replication.FORMAT_DESCRIPTION_EVENT, replication.ROTATE_EVENT,
			replication.MARIADB_GTID_LIST_EVENT, replication.MARIADB_BINLOG_CHECKPOINT_EVENT} {
			assert.False(t, strings.HasPrefix(e, typ.String()+" "), e)
		}
	}
	last := full.tokens[len(full.tokens)-1]
	assert.Empty(t, last.GTID, "the stream ends between transactions")
	assert.Equal(t, fmt.Sprintf("0-1-%d", 6), last.Executed, "six groups, the rolled-back one included")
}
