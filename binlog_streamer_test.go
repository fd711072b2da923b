package binlogstream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// entries renders a delivered event the way an exactly-once comparison
// needs it: one line per row change (so a resume between two rows of one
// event compares equal), one line for any other event.
func entries(ev binlogstream.Event) []string {
	head := fmt.Sprintf("%s end=%s gtid=%s", ev.Header.EventType, ev.End, ev.GTID)
	switch e := ev.Event.(type) {
	case *replication.RowsEvent:
		per := 1
		if len(e.Rows) > 0 && strings.Contains(ev.Header.EventType.String(), "Update") {
			per = 2
		}
		out := make([]string, 0, len(e.Rows)/per)
		for i := 0; i+per <= len(e.Rows); i += per {
			out = append(out, fmt.Sprintf("%s %s.%s %v", head, e.Table.Schema, e.Table.Table, e.Rows[i:i+per]))
		}
		return out
	case *replication.QueryEvent:
		return []string{head + " " + string(e.Query)}
	}
	return []string{head}
}

type run struct {
	entries []string
	tokens  []binlogstream.ResumePosition // Resume of every delivered event
	changes []int                         // row changes of every delivered event
	first   []int                         // index in entries of every event's first entry
	events  int
	last    binlogstream.ResumePosition // streamer.ResumePosition() after Run
	err     error
	stats   binlogstream.Stats
}

// stream runs a streamer on src from start until it has delivered stop
// events (then cancels, as a crash after that event would), or until the
// listener returns crashErr. onEvent, when set, may return an error to
// make the listener fail on an event.
func stream(t *testing.T, src binlogstream.Source, start binlogstream.ResumePosition, stop int,
	onEvent func(n int, ev binlogstream.Event) error) run {
	t.Helper()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{
		Source: src, Start: start,
		ReconnectBackoff: time.Microsecond, MaxReconnectBackoff: time.Millisecond,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var r run
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if onEvent != nil {
			if err := onEvent(r.events+1, ev); err == errStopHere {
				defer cancel() // acknowledge this event, then stop
			} else if err != nil {
				return err
			}
		}
		r.events++
		r.first = append(r.first, len(r.entries))
		r.entries = append(r.entries, entries(ev)...)
		r.tokens = append(r.tokens, ev.Resume)
		r.changes = append(r.changes, binlogstream.RowChanges(ev.BinlogEvent))
		if r.events == stop {
			cancel()
		}
		return nil
	})
	r.err = s.Run(ctx)
	r.last = s.ResumePosition()
	r.stats = s.Stats()
	require.NoError(t, s.Close())
	return r
}

// errStopHere, returned by onEvent, acknowledges the event and stops.
var errStopHere = errors.New("stop here")

// roundTrip is what a crashed process keeps: the token string only.
func roundTrip(t *testing.T, r binlogstream.ResumePosition) binlogstream.ResumePosition {
	t.Helper()
	back, err := binlogstream.ParseResumePosition(r.String())
	require.NoError(t, err)
	return back
}

type scenario struct {
	name string
	bl   *th.Binlog
	opts []th.SourceOption
}

func (sc scenario) source() *th.FakeSource { return th.NewFakeSource(sc.bl, sc.opts...) }

func (sc scenario) start() binlogstream.ResumePosition {
	return binlogstream.StartAt(binlogstream.Position{File: sc.bl.Files[0].Name, Offset: 4})
}

var (
	users  = th.Table{ID: 101, Schema: "app", Name: "users", Columns: []th.Column{{Name: "id", Type: th.Int}, {Name: "name", Type: th.Varchar(64)}}}
	orders = th.Table{ID: 102, Schema: "app", Name: "orders", Columns: []th.Column{{Name: "id", Type: th.BigInt}, {Name: "user_id", Type: th.Int}, {Name: "note", Type: th.Varchar(300)}}}
)

func userRows(from, n int) []th.Row {
	rows := make([]th.Row, n)
	for i := range rows {
		rows[i] = th.Row{int32(from + i), fmt.Sprintf("user-%d", from+i)}
	}
	return rows
}

func orderRows(from, n int) []th.Row {
	rows := make([]th.Row, n)
	for i := range rows {
		var note any = strings.Repeat("n", (from+i)%7)
		if (from+i)%5 == 0 {
			note = nil
		}
		rows[i] = th.Row{int64(from + i), int32((from + i) % 3), note}
	}
	return rows
}

// scenarios are the binlogs the crash properties run over, in both flavors.
func scenarios(big bool) []scenario {
	var out []scenario
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		add := func(name string, bl *th.Binlog, opts ...th.SourceOption) {
			out = append(out, scenario{name: string(f) + "/" + name, bl: bl, opts: opts})
		}
		add("seed001", th.Seed001(f))
		add("split-statements", th.NewBuilder(f, th.MaxRowsPerEvent(3)).
			Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 10)...) }).
			Txn(func(t *th.Txn) {
				t.Update(users, userRows(1, 1)[0], userRows(100, 1)[0], userRows(2, 1)[0], userRows(200, 1)[0])
			}).
			Txn(func(t *th.Txn) { t.Delete(users, userRows(3, 7)...) }).Build())
		add("multi-table", th.NewBuilder(f, th.MaxRowsPerEvent(2)).
			Txn(func(t *th.Txn) {
				t.MultiTable(th.Updated(users, userRows(1, 1)[0], userRows(9, 1)[0]), th.Updated(orders, orderRows(1, 1)[0], orderRows(2, 1)[0]))
			}).
			Txn(func(t *th.Txn) {
				t.MultiTable(th.Deleted(users, userRows(1, 3)...), th.Deleted(orders, orderRows(1, 5)...))
			}).Build())
		add("multi-statement-txn", th.NewBuilder(f, th.MaxRowsPerEvent(2)).
			Txn(func(t *th.Txn) {
				t.Insert(users, userRows(1, 3)...)
				t.Insert(orders, orderRows(1, 4)...)
				t.Update(users, userRows(1, 1)[0], userRows(50, 1)[0])
				t.Delete(orders, orderRows(2, 1)...)
			}).Build())
		add("ddl-between-txns", th.NewBuilder(f).
			DDL("app", "CREATE TABLE users (id INT PRIMARY KEY, name VARCHAR(64))").
			Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 2)...) }).
			DDL("app", "ALTER TABLE users ADD COLUMN x INT").
			DDL("app", "CREATE TABLE orders (id BIGINT PRIMARY KEY, user_id INT, note VARCHAR(300))").
			Txn(func(t *th.Txn) { t.Insert(orders, orderRows(1, 2)...) }).Build())
		add("rotation", th.NewBuilder(f, th.MaxRowsPerEvent(2)).
			Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 5)...) }).
			Rotate().
			Txn(func(t *th.Txn) { t.Insert(users, userRows(6, 3)...) }).
			Rotate().Rotate().
			DDL("app", "DROP TABLE x").
			Txn(func(t *th.Txn) { t.Delete(users, userRows(1, 4)...) }).Build())
		// A dump resumed after a DDL's GTID event at the end of a file: the
		// replay holds no rows event, and the next file's rows events have
		// small LogPos values, which must not be taken as replayed.
		add("header-then-rotate", th.NewBuilder(f, th.MaxRowsPerEvent(2)).
			Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 30)...) }).
			DDL("app", "ALTER TABLE users ADD COLUMN q INT").
			Rotate().
			Txn(func(t *th.Txn) { t.Insert(users, userRows(100, 6)...) }).Build())
		add("heartbeats", th.NewBuilder(f, th.MaxRowsPerEvent(2)).
			Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 5)...) }).
			Txn(func(t *th.Txn) { t.Insert(orders, orderRows(1, 3)...) }).Build(), th.HeartbeatEvery(2))
		add("empty-and-rolled-back", th.NewBuilder(f).
			EmptyTxn().
			Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 2)...) }).
			RolledBack(func(t *th.Txn) { t.Insert(orders, orderRows(1, 2)...) }).
			EmptyTxn().
			Txn(func(t *th.Txn) { t.Delete(users, userRows(1, 1)...) }).Build())
		add("logpos-zero", th.NewBuilder(f, th.ZeroLogPos(), th.MaxRowsPerEvent(2)).
			Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 5)...) }).
			DDL("app", "ALTER TABLE users ADD COLUMN y INT").
			Rotate().
			Txn(func(t *th.Txn) { t.Update(users, userRows(1, 1)[0], userRows(7, 1)[0]) }).Build())
		if f == th.MariaDB {
			add("compressed-rows", th.NewBuilder(f, th.CompressedRows(), th.MaxRowsPerEvent(2)).
				Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 5)...) }).
				Txn(func(t *th.Txn) { t.Update(users, userRows(1, 1)[0], userRows(9, 1)[0]) }).Build())
		} else {
			add("anonymous-gtid", th.NewBuilder(f, th.AnonymousGTID(), th.MaxRowsPerEvent(2)).
				Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 5)...) }).
				DDL("app", "TRUNCATE users").Build())
		}
		if big {
			// A 10k-event transaction: 5000 single-row statements.
			add("10k-event-txn", th.NewBuilder(f).Txn(func(t *th.Txn) {
				for i := 0; i < 5000; i++ {
					t.Insert(users, userRows(i, 1)...)
				}
			}).Build())
			// One statement split into 400 rows events after a single Table_map.
			add("400-event-statement", th.NewBuilder(f, th.MaxRowsPerEvent(1)).
				Txn(func(t *th.Txn) { t.Insert(orders, orderRows(1, 400)...) }).Build())
		}
	}
	return out
}

func fileIndex(bl *th.Binlog, name string) int {
	for i, f := range bl.Files {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// uninterrupted streams the whole scenario and checks the baseline itself
// against the binlog the builder wrote, so the comparison cannot be empty.
func uninterrupted(t *testing.T, sc scenario) run {
	t.Helper()
	full := stream(t, sc.source(), sc.start(), len(sc.bl.Events), nil)
	require.ErrorIs(t, full.err, context.Canceled)
	require.Equal(t, len(sc.bl.Events), full.events, "every event of the binlog is delivered once")
	var rowsWritten int
	for i, e := range sc.bl.Events {
		want := binlogstream.Position{File: e.File, Offset: uint64(e.End)}
		if e.Type == replication.ROTATE_EVENT {
			want = binlogstream.Position{File: sc.bl.Files[fileIndex(sc.bl, e.File)+1].Name, Offset: 4}
		}
		assert.Equal(t, want, full.tokens[i].Streamed, "event %s", e)
		if strings.Contains(e.Type.String(), "Rows") && e.Type != replication.ROWS_QUERY_EVENT {
			rowsWritten++
		}
	}
	require.Greater(t, len(full.entries), 0)
	return full
}

func TestNaiveResumeFails(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		t.Run(string(f), func(t *testing.T) {
			bl := th.Seed001(f, th.AnonymousGTID())
			rowsType := replication.WRITE_ROWS_EVENTv2
			if f == th.MariaDB {
				rowsType = replication.WRITE_ROWS_EVENTv1
			}
			// The big statement's Write_rows are the 2nd to 6th; stop after its 4th.
			fourth, ok := bl.Nth(rowsType, 5)
			require.True(t, ok)
			require.True(t, fourth.MidStatement, "the seed position lies inside the statement")
			sc := scenario{bl: bl}
			full := uninterrupted(t, sc)

			// The seeds' bug: resume from the last streamed position.
			naive := binlogstream.StartAt(binlogstream.Position{File: fourth.File, Offset: uint64(fourth.End)})
			r := stream(t, sc.source(), naive, -1, nil)
			requireTableMapError(t, r.err, fourth)
			assert.Equal(t, 0, r.events)
			assert.False(t, binlogstream.IsRetryable(r.err))

			// The library's own position for the same moment resumes fine.
			k := fourth.Index + 1
			first := stream(t, sc.source(), sc.start(), k, nil)
			require.Equal(t, k, first.events)
			assert.Equal(t, fourth.End, uint32(first.last.Streamed.Offset))
			assert.Less(t, first.last.Safe.Offset, first.last.Streamed.Offset, "the safe point is before the Table_map")
			rest := stream(t, sc.source(), roundTrip(t, first.last), len(bl.Events)-k, nil)
			assert.Equal(t, full.entries, append(first.entries, rest.entries...))
		})
	}
}

// TestCrashAtEveryEvent: for every k, stream until k events are
// acknowledged, keep only the token, resume on a new source, and the
// concatenated deliveries equal the uninterrupted run.
func TestCrashAtEveryEvent(t *testing.T) {
	for _, sc := range scenarios(false) {
		t.Run(sc.name, func(t *testing.T) {
			full := uninterrupted(t, sc)
			n := len(sc.bl.Events)
			for k := 0; k <= n; k++ {
				first := full
				var tok binlogstream.ResumePosition
				if k == 0 {
					first, tok = run{}, sc.start()
				} else {
					first = stream(t, sc.source(), sc.start(), k, nil)
					require.ErrorIs(t, first.err, context.Canceled)
					require.Equal(t, k, first.events)
					assert.Equal(t, first.tokens[k-1], first.last, "ResumePosition is the last event's Resume")
					tok = roundTrip(t, first.last)
				}
				if k == n {
					assert.Equal(t, full.entries, first.entries)
					continue
				}
				rest := stream(t, sc.source(), tok, n-k, nil)
				require.ErrorIs(t, rest.err, context.Canceled, "k=%d", k)
				require.Equal(t, full.entries, append(append([]string(nil), first.entries...), rest.entries...), "crash after event %d", k)
			}
		})
	}
}

// TestCrashTwice crashes at k, resumes, crashes again after j more events
// (j = 0 included: a crash during the replay), and resumes again.
func TestCrashTwice(t *testing.T) {
	for _, sc := range scenarios(false) {
		t.Run(sc.name, func(t *testing.T) {
			full := uninterrupted(t, sc)
			n := len(sc.bl.Events)
			for k := 1; k < n; k++ {
				for _, j := range []int{0, 1, 2} {
					if k+j >= n {
						continue
					}
					a := stream(t, sc.source(), sc.start(), k, nil)
					var b run
					if j == 0 {
						// Crash while replaying: the listener sees nothing new.
						b = stream(t, sc.source(), roundTrip(t, a.last), -1, func(int, binlogstream.Event) error {
							return errors.New("crash")
						})
						var le *binlogstream.ListenerError
						require.ErrorAs(t, b.err, &le)
					} else {
						b = stream(t, sc.source(), roundTrip(t, a.last), j, nil)
					}
					c := stream(t, sc.source(), roundTrip(t, b.last), n-k-j, nil)
					got := append(append(append([]string(nil), a.entries...), b.entries...), c.entries...)
					require.Equal(t, full.entries, got, "crash after %d, then %d more", k, j)
				}
			}
		})
	}
}

// TestCrashBetweenRows checkpoints inside rows events with
// ResumeAfterRows: a crash between two row changes of one event resumes
// with the next change.
func TestCrashBetweenRows(t *testing.T) {
	for _, sc := range scenarios(false) {
		t.Run(sc.name, func(t *testing.T) {
			full := uninterrupted(t, sc)
			n := len(sc.bl.Events)
			tested := 0
			for k := 1; k <= n; k++ {
				changes := full.changes[k-1]
				for r := 1; r < changes; r++ {
					var tok binlogstream.ResumePosition
					crash := errors.New("crash mid-event")
					b := stream(t, sc.source(), sc.start(), -1, func(i int, ev binlogstream.Event) error {
						if i == k {
							tok = ev.ResumeAfterRows(r)
							return crash
						}
						return nil
					})
					require.ErrorIs(t, b.err, crash)
					require.Equal(t, k-1, b.events)
					c := stream(t, sc.source(), roundTrip(t, tok), n-k+1, nil)
					head := full.entries[:len(b.entries)+r]
					require.Equal(t, full.entries, append(append([]string(nil), head...), c.entries...), "crash after row %d of event %d", r, k)
					tested++
				}
			}
			if strings.Contains(sc.name, "split") || strings.Contains(sc.name, "seed001") {
				assert.Positive(t, tested, "the scenario has events with several rows")
			}
		})
	}
}

// TestConnectionDropAtEveryEvent drops the first connection after every
// possible number of served events; the streamer reconnects by itself from
// its own safe point and the deliveries equal the uninterrupted run.
func TestConnectionDropAtEveryEvent(t *testing.T) {
	for _, sc := range scenarios(false) {
		t.Run(sc.name, func(t *testing.T) {
			full := uninterrupted(t, sc)
			n := len(sc.bl.Events)
			for drop := 1; drop <= n+4; drop++ {
				src := sc.source()
				src.FailStream(0, drop)
				src.FailStream(1, drop/2+1) // and the reconnect drops too
				r := stream(t, src, sc.start(), n, nil)
				require.ErrorIs(t, r.err, context.Canceled, "drop after %d", drop)
				require.Equal(t, full.entries, r.entries, "drop after %d served events", drop)
			}
		})
	}
}

// TestCrashAtEveryEventLarge covers the large scenarios (a 10k-event
// transaction, a 400-event statement) at every event index. Running each
// crash to the end would be quadratic, so each resume runs until it has
// delivered two events and must match the uninterrupted run there, tokens
// included. That suffices: the tracker's state at a safe point is exactly
// what the token holds, so once the resumed run has delivered an event
// with the uninterrupted run's token, everything after is the same.
func TestCrashAtEveryEventLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large scenarios")
	}
	for _, sc := range scenarios(true) {
		if !strings.Contains(sc.name, "10k") && !strings.Contains(sc.name, "400") {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			full := uninterrupted(t, sc)
			n := len(sc.bl.Events)
			require.Greater(t, n, 400)
			const window = 2
			src := sc.source() // every Open is a new dump with its own parser
			for k := 0; k < n; k++ {
				tok := sc.start()
				if k > 0 {
					tok = roundTrip(t, full.tokens[k-1])
				}
				w := min(window, n-k)
				r := stream(t, src, tok, w, nil)
				require.ErrorIs(t, r.err, context.Canceled)
				end := len(full.entries)
				if k+w < n {
					end = full.first[k+w]
				}
				require.Equal(t, full.entries[full.first[k]:end], r.entries, "resume after event %d", k)
				require.Equal(t, full.tokens[k:k+w], r.tokens, "tokens after resuming after event %d", k)
				if strings.Contains(sc.name, "10k") {
					require.LessOrEqual(t, r.stats.DroppedAtStart, uint64(2), "a resume replays at most the in-flight statement")
				}
			}
		})
	}
}

// requireTableMapError checks the error of a dump started after the
// Table_map of event fourth's statement: go-mysql's table-map error as a
// DecodeError whose message says why briefly and whose bytes are on the
// error value.
func requireTableMapError(t *testing.T, err error, fourth th.EventInfo) {
	t.Helper()
	require.Error(t, err)
	var de *binlogstream.DecodeError
	require.ErrorAs(t, err, &de)
	var ee *replication.EventError
	require.ErrorAs(t, err, &ee)
	assert.Contains(t, ee.Err, "invalid table id")
	assert.Contains(t, ee.Err, "no corresponding table map event")
	assert.Equal(t, ee.Err, de.Reason)
	assert.Equal(t, ee.Data, de.Data)
	assert.NotEmpty(t, de.Data)
	assert.Equal(t, uint32(fourth.End)+uint32(fourth.End-fourth.Start), de.Header.LogPos, "the next rows event")
	assert.Contains(t, de.Error(), "cannot decode the "+de.Header.EventType.String()+" event ending at offset")
	assert.Contains(t, de.Error(), "no corresponding table map event")
	assert.NotContains(t, de.Error(), "Data")
	assert.Less(t, len(de.Error()), 300, de.Error())
}
