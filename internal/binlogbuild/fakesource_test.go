package binlogbuild_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/binlogbuild"
)

// want is one event a dump should yield: a real event from the index, or
// a server-made one (fake Rotate, patched FDE, fake Gtid_list).
type want struct {
	info  binlogbuild.EventInfo // real events
	fake  replication.EventType
	name  string // fake Rotate: file named
	pos   uint64 // fake Rotate: position named
	fdeOf string // patched FDE of this file
}

func nextN(t *testing.T, st binlogbuild.Stream, n int) []*replication.BinlogEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []*replication.BinlogEvent
	for range n {
		ev, err := st.Next(ctx)
		require.NoError(t, err, "after %d events", len(out))
		out = append(out, ev)
	}
	return out
}

// requireCaughtUp checks Next blocks (like a live server with nothing new).
func requireCaughtUp(t *testing.T, st binlogbuild.Stream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
	defer cancel()
	ev, err := st.Next(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "unexpected event %v", ev)
}

// rest lists what a server sends after the preamble: events from index i
// on, with a fake Rotate before each next file's Format_description, and
// leaving out groups skip says to leave out.
func rest(bl *binlogbuild.Binlog, i int, skip func(binlogbuild.EventInfo) bool) []want {
	var w []want
	for _, e := range bl.Events[i:] {
		if skip != nil && skip(e) {
			continue
		}
		if e.Type == replication.FORMAT_DESCRIPTION_EVENT {
			w = append(w, want{fake: replication.ROTATE_EVENT, name: e.File, pos: 4})
		}
		w = append(w, want{info: e})
	}
	return w
}

func firstAtOrAfter(bl *binlogbuild.Binlog, file string, pos uint32) int {
	for i, e := range bl.Events {
		if e.File > file || (e.File == file && e.Start >= pos) {
			return i
		}
	}
	return len(bl.Events)
}

func wantFileDump(bl *binlogbuild.Binlog, file string, pos uint32) []want {
	w := []want{{fake: replication.ROTATE_EVENT, name: file, pos: uint64(pos)}}
	if pos == 4 {
		i := firstAtOrAfter(bl, file, 4)
		return append(append(w, want{info: bl.Events[i]}), rest(bl, i+1, nil)...)
	}
	w = append(w, want{fdeOf: file})
	if bl.Flavor == binlogbuild.MariaDB {
		w = append(w, want{fake: replication.MARIADB_GTID_LIST_EVENT})
	}
	return append(w, rest(bl, firstAtOrAfter(bl, file, pos), nil)...)
}

func checkDump(t *testing.T, bl *binlogbuild.Binlog, got []*replication.BinlogEvent, w []want) {
	t.Helper()
	require.Len(t, got, len(w))
	for k, ev := range got {
		wk := w[k]
		h := ev.Header
		switch {
		case wk.fake != 0:
			require.Equal(t, wk.fake, h.EventType, "event %d", k)
			require.Equal(t, binlogbuild.FlagArtificial, h.Flags&binlogbuild.FlagArtificial, "event %d", k)
			require.Zero(t, h.LogPos)
			require.Zero(t, h.Timestamp)
			if rot, ok := ev.Event.(*replication.RotateEvent); ok {
				require.Equal(t, wk.name, string(rot.NextLogName))
				require.Equal(t, wk.pos, rot.Position)
			}
		case wk.fdeOf != "":
			f, _ := bl.File(wk.fdeOf)
			fde := bl.Events[firstAtOrAfter(bl, wk.fdeOf, 4)]
			require.Equal(t, binlogbuild.PatchLogPos(f.Data[fde.Start:fde.End], 0, true), ev.RawData, "event %d", k)
		default:
			f, _ := bl.File(wk.info.File)
			require.Equal(t, f.Data[wk.info.Start:wk.info.End], ev.RawData, "event %d: %v", k, wk.info)
		}
	}
}

// TestDumpFromEveryBoundary starts a file dump at every event boundary of
// every scenario. Outside statements the dump yields the preamble and the
// rest of the binlog, then blocks; inside one it fails on the first Rows
// event with go-mysql's table map error, and stays dead.
func TestDumpFromEveryBoundary(t *testing.T) {
	ctx := context.Background()
	for _, f := range flavors {
		for _, sc := range scenarios(f) {
			t.Run(sc.name, func(t *testing.T) {
				bl := sc.bl
				src := binlogbuild.NewFakeSource(bl)
				starts := []binlogbuild.EventInfo{}
				for _, e := range bl.Events {
					if e.Type == replication.FORMAT_DESCRIPTION_EVENT {
						starts = append(starts, binlogbuild.EventInfo{File: e.File, End: 4})
					}
					starts = append(starts, e)
				}
				for _, e := range starts {
					st, err := src.OpenFile(ctx, e.EndPos())
					require.NoError(t, err)
					w := wantFileDump(bl, e.File, e.End)
					if !e.MidStatement {
						checkDump(t, bl, nextN(t, st, len(w)), w)
						requireCaughtUp(t, st)
					} else {
						requireTableMapError(t, st, len(w))
					}
					require.NoError(t, st.Close())
					require.NoError(t, st.Close())
				}
			})
		}
	}
}

func requireTableMapError(t *testing.T, st binlogbuild.Stream, max int) {
	t.Helper()
	ctx := context.Background()
	for k := 0; k < max; k++ {
		ev, err := st.Next(ctx)
		if err != nil {
			var ee *replication.EventError
			require.ErrorAs(t, err, &ee)
			require.True(t, binlogbuild.IsRowsEvent(ee.Header.EventType), "failed on %s", ee.Header.EventType)
			require.Contains(t, ee.Err, "invalid table id")
			_, again := st.Next(ctx)
			require.Equal(t, err, again, "the stream stays dead")
			return
		}
		require.False(t, binlogbuild.IsRowsEvent(ev.Header.EventType), "rows event decoded without its table map")
	}
	t.Fatal("no table map error")
}

// TestSeed001 is the seed's failure: a dump right after the 4th Write_rows
// of the 5-event statement fails on the 5th with the table map error.
func TestSeed001(t *testing.T) {
	for _, f := range flavors {
		for _, opts := range [][]binlogbuild.Option{nil, {binlogbuild.AnonymousGTID()}} {
			bl := binlogbuild.Seed001(f, opts...)
			w1, _ := bl.Nth(binlogbuild.RowsEventType(f, binlogbuild.Insert, false), 1) // the transaction before
			// The 5th Write_rows of the binlog is the 4th of the statement.
			w4, ok := bl.Nth(binlogbuild.RowsEventType(f, binlogbuild.Insert, false), 5)
			require.True(t, ok)
			require.True(t, w4.MidStatement)
			st, err := binlogbuild.NewFakeSource(bl).OpenFile(context.Background(), w4.EndPos())
			require.NoError(t, err)
			pre := 2
			if f == binlogbuild.MariaDB {
				pre = 3
			}
			nextN(t, st, pre)
			_, err = st.Next(context.Background())
			var ee *replication.EventError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, "table id 5131: invalid table id, no corresponding table map event", ee.Err)
			assert.Equal(t, bl.Events[w4.Index+1].End, ee.Header.LogPos)
			assert.False(t, w1.MidStatement)
		}
	}
}

func groupBounds(bl *binlogbuild.Binlog, g int) (first, last int) {
	first = -1
	for i, e := range bl.Events {
		if e.Group == g {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return first, last
}

// TestOpenGTIDFromEveryEvent resumes by GTID from the state a client has
// after every event: the dump restarts the in-flight group from its GTID
// event, in the newest file the state covers, and skips the groups the set
// contains.
func TestOpenGTIDFromEveryEvent(t *testing.T) {
	ctx := context.Background()
	for _, f := range flavors {
		for _, sc := range scenarios(f) {
			if sc.bl.Anonymous {
				continue
			}
			t.Run(sc.name, func(t *testing.T) {
				bl := sc.bl
				src := binlogbuild.NewFakeSource(bl)
				for i := range len(bl.Events) + 1 {
					set := bl.ExecutedBefore(i)
					before := set.String()
					st, err := src.OpenGTID(ctx, set)
					require.NoError(t, err)
					require.Equal(t, before, set.String(), "set must not change")

					// Newest file whose start state the set contains.
					startFile := ""
					for _, file := range bl.Files {
						s, err := bl.ParseGTIDSet(file.StartGTIDs)
						require.NoError(t, err)
						if set.Contain(s) {
							startFile = file.Name
						}
					}
					fi := firstAtOrAfter(bl, startFile, 4)
					w := []want{{fake: replication.ROTATE_EVENT, name: startFile, pos: 4}, {info: bl.Events[fi]}}
					w = append(w, rest(bl, fi+1, func(e binlogbuild.EventInfo) bool {
						return e.Group > 0 && groupDone(bl, e.Group, i)
					})...)
					got := nextN(t, st, len(w))
					checkDump(t, bl, got, w)
					requireCaughtUp(t, st)

					// The first group sent is the one in flight at event i.
					for k := range got {
						if wk := w[k]; wk.info.Group > 0 {
							first, _ := groupBounds(bl, wk.info.Group)
							require.Equal(t, first, wk.info.Index, "group sent from its start")
							require.False(t, groupDone(bl, wk.info.Group, i))
							if i < len(bl.Events) && bl.Events[i].Group > 0 {
								require.Equal(t, bl.Events[i].Group, wk.info.Group)
							}
							break
						}
					}
					// Xid/Query carry the GTID set like go-mysql's syncer.
					for k, ev := range got {
						if xe, ok := ev.Event.(*replication.XIDEvent); ok {
							require.NotNil(t, xe.GSet)
							one, err := bl.ParseGTIDSet(w[k].info.GTID)
							require.NoError(t, err)
							require.True(t, xe.GSet.Contain(one))
							require.True(t, xe.GSet.Contain(set))
						}
					}
					require.NoError(t, st.Close())
				}
			})
		}
	}
}

// groupDone says whether group g ended before event i.
func groupDone(bl *binlogbuild.Binlog, g, i int) bool {
	_, last := groupBounds(bl, g)
	return last < i
}

func TestOpenGTIDSkipsContainedGroupsAfterStart(t *testing.T) {
	b := binlogbuild.NewBuilder(binlogbuild.MySQL)
	for id := range 5 {
		b.Txn(func(tx *binlogbuild.Txn) { tx.Insert(users, u(int32(id), "x", 0)) })
	}
	bl := b.Build()
	set, err := mysql.ParseMysqlGTIDSet(binlogbuild.DefaultUUID + ":1-2:4")
	require.NoError(t, err)
	st, err := binlogbuild.NewFakeSource(bl).OpenGTID(context.Background(), set)
	require.NoError(t, err)
	var gtids []string
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	for {
		ev, err := st.Next(ctx)
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			break
		}
		if g, ok := ev.Event.(*replication.GTIDEvent); ok {
			next, _ := g.GTIDNext()
			gtids = append(gtids, next.String())
		}
	}
	assert.Equal(t, []string{binlogbuild.DefaultUUID + ":3", binlogbuild.DefaultUUID + ":5"}, gtids)
}

func requireFatal(t *testing.T, st binlogbuild.Stream, contains string) {
	t.Helper()
	_, err := st.Next(context.Background())
	var me *mysql.MyError
	require.ErrorAs(t, err, &me)
	require.EqualValues(t, mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, me.Code)
	require.Contains(t, me.Message, contains)
	_, again := st.Next(context.Background())
	require.Equal(t, err, again)
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	for _, f := range flavors {
		b := binlogbuild.NewBuilder(f, binlogbuild.FirstGTID(10))
		richScript(b)
		bl := b.Build()
		src := binlogbuild.NewFakeSource(bl)
		last := bl.Files[len(bl.Files)-1]

		st, err := src.OpenFile(ctx, mysql.Position{Name: "nope.000001", Pos: 4})
		require.NoError(t, err)
		requireFatal(t, st, "Could not find first log file name")

		st, err = src.OpenFile(ctx, mysql.Position{Name: last.Name, Pos: uint32(len(last.Data)) + 1})
		require.NoError(t, err)
		requireFatal(t, st, "position > file size")

		// pos < 4 reads as 4; an empty name is the first file.
		st, err = src.OpenFile(ctx, mysql.Position{Name: "", Pos: 0})
		require.NoError(t, err)
		w := wantFileDump(bl, bl.Files[0].Name, 4)
		checkDump(t, bl, nextN(t, st, len(w)), w)

		// A position inside an event.
		st, err = src.OpenFile(ctx, mysql.Position{Name: last.Name, Pos: uint32(len(last.Data)) - 3})
		require.NoError(t, err)
		nextN(t, st, 2)
		if f == binlogbuild.MariaDB {
			nextN(t, st, 1)
		}
		requireFatal(t, st, "bogus data in log event")

		// GTIDs 1-9 are purged: a client without them cannot be served.
		empty, _ := bl.ParseGTIDSet("")
		st, err = src.OpenGTID(ctx, empty)
		require.NoError(t, err)
		requireFatal(t, st, "purged")

		// A client that has GTIDs the server never wrote.
		ahead, _ := bl.ParseGTIDSet(map[binlogbuild.Flavor]string{binlogbuild.MySQL: binlogbuild.DefaultUUID + ":1-1000", binlogbuild.MariaDB: "0-1-1000"}[f])
		st, err = src.OpenGTID(ctx, ahead)
		require.NoError(t, err)
		requireFatal(t, st, "")

		// After PURGE BINARY LOGS the first file is gone.
		src.Purge(1)
		st, err = src.OpenFile(ctx, mysql.Position{Name: bl.Files[0].Name, Pos: 4})
		require.NoError(t, err)
		requireFatal(t, st, "Could not find first log file name")
		st, err = src.OpenGTID(ctx, bl.ExecutedBefore(3))
		require.NoError(t, err)
		requireFatal(t, st, "purged")
		// Up to date: the last file is dumped without any of its groups.
		st, err = src.OpenGTID(ctx, bl.ExecutedBefore(len(bl.Events)))
		require.NoError(t, err)
		w = rest(bl, firstAtOrAfter(bl, last.Name, 4), func(e binlogbuild.EventInfo) bool { return e.Group > 0 })
		checkDump(t, bl, nextN(t, st, len(w)), w)
		requireCaughtUp(t, st)

		// A set of the other flavor is a caller bug.
		other := map[binlogbuild.Flavor]string{binlogbuild.MySQL: "0-1-1", binlogbuild.MariaDB: binlogbuild.DefaultUUID + ":1"}[f]
		otherFlavor := map[binlogbuild.Flavor]string{binlogbuild.MySQL: mysql.MariaDBFlavor, binlogbuild.MariaDB: mysql.MySQLFlavor}[f]
		wrong, err := mysql.ParseGTIDSet(otherFlavor, other)
		require.NoError(t, err)
		_, err = src.OpenGTID(ctx, wrong)
		require.Error(t, err)
	}

	anon := binlogbuild.Seed001(binlogbuild.MySQL, binlogbuild.AnonymousGTID())
	empty, _ := anon.ParseGTIDSet("")
	st, err := binlogbuild.NewFakeSource(anon).OpenGTID(ctx, empty)
	require.NoError(t, err)
	requireFatal(t, st, "GTID_MODE = OFF")
}

func TestFaultInjection(t *testing.T) {
	ctx := context.Background()
	bl := binlogbuild.Seed001(binlogbuild.MariaDB)
	src := binlogbuild.NewFakeSource(bl)
	src.FailStream(1, 3)
	src.RefuseOpens(1)

	_, err := src.OpenFile(ctx, mysql.Position{Name: bl.Files[0].Name, Pos: 4})
	require.ErrorIs(t, err, mysql.ErrBadConn)

	st, err := src.OpenFile(ctx, mysql.Position{Name: bl.Files[0].Name, Pos: 4})
	require.NoError(t, err)
	nextN(t, st, 3)
	_, err = st.Next(ctx)
	require.ErrorIs(t, err, mysql.ErrBadConn)
	require.EqualError(t, err, "fake source: connection dropped after 3 events: connection was bad")
	_, again := st.Next(ctx)
	require.Equal(t, err, again)

	set := bl.ExecutedBefore(5)
	st, err = src.OpenGTID(ctx, set)
	require.NoError(t, err)
	nextN(t, st, 4)
	assert.Equal(t, []string{
		"mysql-bin.000001:4 (refused)",
		"mysql-bin.000001:4",
		"gtid " + set.String(),
	}, src.Opens())
}

func TestNextBlocksUntilCloseOrCancel(t *testing.T) {
	bl := binlogbuild.Seed001(binlogbuild.MySQL)
	src := binlogbuild.NewFakeSource(bl)
	last := bl.Events[len(bl.Events)-1]

	st, err := src.OpenFile(context.Background(), last.EndPos())
	require.NoError(t, err)
	nextN(t, st, 2)
	done := make(chan error)
	go func() {
		_, err := st.Next(context.Background())
		done <- err
	}()
	time.Sleep(5 * time.Millisecond)
	require.NoError(t, st.Close())
	require.ErrorIs(t, <-done, binlogbuild.ErrStreamClosed)

	st, err = src.OpenFile(context.Background(), last.EndPos())
	require.NoError(t, err)
	nextN(t, st, 2)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := st.Next(ctx)
		done <- err
	}()
	time.Sleep(5 * time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

func TestHeartbeats(t *testing.T) {
	bl := binlogbuild.Seed001(binlogbuild.MySQL)
	src := binlogbuild.NewFakeSource(bl, binlogbuild.HeartbeatEvery(3), binlogbuild.HeartbeatWhenIdle(time.Millisecond))
	st, err := src.OpenFile(context.Background(), mysql.Position{Name: bl.Files[0].Name, Pos: 4})
	require.NoError(t, err)
	real := 0
	var lastEnd uint32
	for real < len(bl.Events)-1 {
		ev := nextN(t, st, 1)[0]
		if hb, ok := ev.Event.(*replication.HeartbeatEvent); ok {
			assert.Equal(t, bl.Files[0].Name, hb.Filename)
			assert.Equal(t, lastEnd, ev.Header.LogPos)
			assert.Equal(t, binlogbuild.FlagArtificial, ev.Header.Flags)
			continue
		}
		if ev.Header.Flags&binlogbuild.FlagArtificial == 0 && ev.Header.EventType != replication.FORMAT_DESCRIPTION_EVENT {
			real++
		}
		if ev.Header.LogPos > 0 {
			lastEnd = ev.Header.LogPos
		}
	}
	// Caught up: idle heartbeats keep coming, at the end of the file.
	for range 3 {
		ev := nextN(t, st, 1)[0]
		if ev.Header.EventType == replication.HEARTBEAT_EVENT && ev.Header.LogPos == uint32(len(bl.Files[0].Data)) {
			return
		}
	}
	t.Fatal("no idle heartbeat")
}

func TestAppendWakesBlockedNext(t *testing.T) {
	for _, f := range flavors {
		b := binlogbuild.NewBuilder(f)
		b.Txn(func(tx *binlogbuild.Txn) { tx.Insert(users, u(1, "a", 1)) })
		src := binlogbuild.NewFakeSource(b.Build())
		st, err := src.OpenGTID(context.Background(), b.Build().ExecutedBefore(0))
		require.NoError(t, err)
		n := len(b.Build().Events) + 1 // + fake Rotate
		nextN(t, st, n)

		got := make(chan *replication.BinlogEvent, 16)
		go func() {
			for {
				ev, err := st.Next(context.Background())
				if err != nil {
					close(got)
					return
				}
				got <- ev
			}
		}()
		time.Sleep(5 * time.Millisecond)
		b.Txn(func(tx *binlogbuild.Txn) { tx.Insert(users, u(2, "b", 2)) })
		b.Rotate()
		b.DDL("app", "DROP TABLE users")
		require.NoError(t, src.Append(b.Build()))
		var types []replication.EventType
		for ev := range got {
			types = append(types, ev.Header.EventType)
			if q, ok := ev.Event.(*replication.QueryEvent); ok && strings.HasPrefix(string(q.Query), "DROP") {
				require.NotNil(t, q.GSet, "GTID mode fills GSet")
				break
			}
		}
		require.NoError(t, st.Close())
		assert.Contains(t, types, replication.XID_EVENT)
		assert.Contains(t, types, replication.ROTATE_EVENT)
		require.Error(t, src.Append(binlogbuild.Seed001(f)), "a different binlog is refused")
	}
}

func TestSkipAnnotateRows(t *testing.T) {
	bl := binlogbuild.Seed001(binlogbuild.MariaDB)
	src := binlogbuild.NewFakeSource(bl, binlogbuild.SkipAnnotateRows())
	st, err := src.OpenFile(context.Background(), mysql.Position{Name: bl.Files[0].Name, Pos: 4})
	require.NoError(t, err)
	n := 1
	for _, e := range bl.Events {
		if e.Type != replication.MARIADB_ANNOTATE_ROWS_EVENT {
			n++
		}
	}
	for _, ev := range nextN(t, st, n) {
		require.NotEqual(t, replication.MARIADB_ANNOTATE_ROWS_EVENT, ev.Header.EventType)
	}
	requireCaughtUp(t, st)
}
