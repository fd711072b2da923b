package fakeprimary_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/fakeprimary"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

var users = th.Table{ID: 101, Schema: "app", Name: "users", Columns: []th.Column{
	{Name: "id", Type: th.Int}, {Name: "name", Type: th.Varchar(64)},
}}

func rows(from, n int) []th.Row {
	out := make([]th.Row, n)
	for i := range out {
		out[i] = th.Row{int32(from + i), fmt.Sprintf("user-%d", from+i)}
	}
	return out
}

func script(b *th.Builder) *th.Builder {
	return b.Txn(func(t *th.Txn) { t.Insert(users, rows(1, 5)...) }).
		DDL("app", "ALTER TABLE users ADD COLUMN x INT").
		Rotate().
		Txn(func(t *th.Txn) { t.Update(users, rows(1, 1)[0], rows(9, 1)[0]) }).
		Txn(func(t *th.Txn) { t.Delete(users, rows(2, 3)...) })
}

func start(t *testing.T, bl *th.Binlog, opts ...fakeprimary.Option) *fakeprimary.Primary {
	t.Helper()
	p, err := fakeprimary.Start(bl, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func syncerConfig(p *fakeprimary.Primary, f th.Flavor) replication.BinlogSyncerConfig {
	c := replication.BinlogSyncerConfig{
		ServerID: 100, Flavor: string(f), Host: p.Host(), Port: p.Port(),
		User: p.User(), Password: p.Password(), Logger: quiet,
		DisableRetrySync: true, MaxReconnectAttempts: 1,
	}
	if f == th.MariaDB {
		c.DumpCommandFlag = replication.BINLOG_SEND_ANNOTATE_ROWS_EVENT
	}
	return c
}

func newSyncer(t *testing.T, p *fakeprimary.Primary, f th.Flavor, tune ...func(*replication.BinlogSyncerConfig)) *replication.BinlogSyncer {
	t.Helper()
	c := syncerConfig(p, f)
	for _, fn := range tune {
		fn(&c)
	}
	s := replication.NewBinlogSyncer(c)
	t.Cleanup(s.Close)
	return s
}

// read takes n events from a go-mysql stream.
func read(t *testing.T, st *replication.BinlogStreamer, n int) []*replication.BinlogEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []*replication.BinlogEvent
	for len(out) < n {
		ev, err := st.GetEvent(ctx)
		require.NoError(t, err, "after %d events", len(out))
		out = append(out, ev)
	}
	return out
}

// fakeSourceRaw is what a FakeSource dump yields: the reference the wire
// must reproduce byte for byte.
func fakeSourceRaw(t *testing.T, bl *th.Binlog, open func(*th.FakeSource) (*th.RawDump, error), n int) [][]byte {
	t.Helper()
	d, err := open(th.NewFakeSource(bl))
	require.NoError(t, err)
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out [][]byte
	for len(out) < n {
		raw, err := d.Next(ctx)
		require.NoError(t, err)
		out = append(out, raw)
	}
	return out
}

func raws(evs []*replication.BinlogEvent) [][]byte {
	out := make([][]byte, len(evs))
	for i, e := range evs {
		out[i] = e.RawData
	}
	return out
}

func flavors() []th.Flavor { return []th.Flavor{th.MySQL, th.MariaDB} }

// dumpLen counts the events a dump from offset 4 of the first file sends:
// the binlog's own and a fake Rotate before each file.
func dumpLen(bl *th.Binlog) int { return len(bl.Events) + len(bl.Files) }

func TestFileDump(t *testing.T) {
	for _, f := range flavors() {
		t.Run(string(f), func(t *testing.T) {
			bl := script(th.NewBuilder(f, th.MaxRowsPerEvent(2))).Build()
			p := start(t, bl)
			st, err := newSyncer(t, p, f).StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 4})
			require.NoError(t, err)
			n := dumpLen(bl)
			got := read(t, st, n)
			want := fakeSourceRaw(t, bl, func(s *th.FakeSource) (*th.RawDump, error) {
				return s.OpenRawFile(context.Background(), mysql.Position{Name: bl.Files[0].Name, Pos: 4})
			}, n)
			assert.Equal(t, want, raws(got))
			rot := got[0].Event.(*replication.RotateEvent)
			assert.Equal(t, bl.Files[0].Name, string(rot.NextLogName))
			assert.Equal(t, uint16(th.FlagArtificial), got[0].Header.Flags&th.FlagArtificial)
			assert.Zero(t, got[0].Header.LogPos)
			assert.Equal(t, []string{bl.Files[0].Name + ":4"}, p.Dumps())
			q := p.Queries()
			assert.Contains(t, q, "SHOW GLOBAL VARIABLES LIKE 'BINLOG_CHECKSUM'")
			if f == th.MariaDB {
				assert.Contains(t, q, "SET @mariadb_slave_capability=4")
			}
		})
	}
}

func TestFileDumpMidFile(t *testing.T) {
	for _, f := range flavors() {
		t.Run(string(f), func(t *testing.T) {
			bl := script(th.NewBuilder(f)).Build()
			var pos mysql.Position
			for _, e := range bl.Events {
				if strings.Contains(e.Desc, "ALTER") {
					pos = e.StartPos()
				}
			}
			require.NotZero(t, pos.Pos)
			p := start(t, bl)
			st, err := newSyncer(t, p, f).StartSync(pos)
			require.NoError(t, err)
			got := read(t, st, 4)
			want := fakeSourceRaw(t, bl, func(s *th.FakeSource) (*th.RawDump, error) {
				return s.OpenRawFile(context.Background(), pos)
			}, 4)
			assert.Equal(t, want, raws(got))
			assert.Equal(t, replication.FORMAT_DESCRIPTION_EVENT, got[1].Header.EventType)
			assert.Zero(t, got[1].Header.LogPos, "the FDE of a dump past offset 4 has log_pos 0")
			if f == th.MariaDB {
				assert.Equal(t, replication.MARIADB_GTID_LIST_EVENT, got[2].Header.EventType)
			}
		})
	}
}

func TestMariaDBSkipsAnnotateRowsUnlessAsked(t *testing.T) {
	bl := script(th.NewBuilder(th.MariaDB)).Build()
	p := start(t, bl)
	st, err := newSyncer(t, p, th.MariaDB, func(c *replication.BinlogSyncerConfig) { c.DumpCommandFlag = 0 }).
		StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 4})
	require.NoError(t, err)
	annotate := 0
	for _, e := range bl.Events {
		if e.Type == replication.MARIADB_ANNOTATE_ROWS_EVENT {
			annotate++
		}
	}
	require.Positive(t, annotate)
	for _, ev := range read(t, st, dumpLen(bl)-annotate) {
		assert.NotEqual(t, replication.MARIADB_ANNOTATE_ROWS_EVENT, ev.Header.EventType)
	}
}

// TestGTIDDump starts a GTID dump with the set of a client that stopped
// inside a transaction: the server starts at the newest file the set
// covers and sends the in-flight transaction again from its GTID event.
func TestGTIDDump(t *testing.T) {
	for _, f := range flavors() {
		t.Run(string(f), func(t *testing.T) {
			bl := script(th.NewBuilder(f, th.MaxRowsPerEvent(2))).Build()
			// Inside the update in the second file.
			upd, ok := bl.Nth(th.RowsEventType(f, th.Update, false), 1)
			require.True(t, ok)
			set := bl.ExecutedBefore(upd.Index + 1)
			p := start(t, bl)
			st, err := newSyncer(t, p, f).StartSyncGTID(set.Clone())
			require.NoError(t, err)
			var gtidEvent replication.EventType = replication.GTID_EVENT
			if f == th.MariaDB {
				gtidEvent = replication.MARIADB_GTID_EVENT
			}
			// From the second file: fake Rotate, FDE, Previous_gtids or
			// Gtid_list + Binlog_checkpoint, then the update's GTID.
			var n int
			for _, e := range bl.Events {
				if e.File == bl.Files[1].Name {
					n++
				}
			}
			got := read(t, st, n+1)
			want := fakeSourceRaw(t, bl, func(s *th.FakeSource) (*th.RawDump, error) {
				return s.OpenRawGTID(context.Background(), set)
			}, n+1)
			assert.Equal(t, want, raws(got))
			assert.Equal(t, bl.Files[1].Name, string(got[0].Event.(*replication.RotateEvent).NextLogName))
			var first *replication.BinlogEvent
			for _, ev := range got {
				if ev.Header.EventType == gtidEvent {
					first = ev
					break
				}
			}
			require.NotNil(t, first)
			assert.Equal(t, upd.Group, groupAt(bl, first.Header.LogPos, bl.Files[1].Name), "the in-flight transaction is sent again")
			assert.Equal(t, []string{"gtid " + set.String()}, p.Dumps())
			if f == th.MariaDB {
				assert.Contains(t, p.Queries(), fmt.Sprintf("SET @slave_connect_state='%s'", set))
			}
		})
	}
}

func groupAt(bl *th.Binlog, end uint32, file string) int {
	for _, e := range bl.Events {
		if e.File == file && e.End == end {
			return e.Group
		}
	}
	return -1
}

func TestDumpErrors(t *testing.T) {
	bl := script(th.NewBuilder(th.MySQL)).Build()
	p := start(t, bl)
	cases := map[string]func(*replication.BinlogSyncer) (*replication.BinlogStreamer, error){
		"unknown file": func(s *replication.BinlogSyncer) (*replication.BinlogStreamer, error) {
			return s.StartSync(mysql.Position{Name: "nope.000009", Pos: 4})
		},
		"past the end": func(s *replication.BinlogSyncer) (*replication.BinlogStreamer, error) {
			return s.StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 1 << 30})
		},
		"purged": func(s *replication.BinlogSyncer) (*replication.BinlogStreamer, error) {
			p.Purge(1)
			return s.StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 4})
		},
	}
	for name, open := range cases {
		t.Run(name, func(t *testing.T) {
			st, err := open(newSyncer(t, p, th.MySQL))
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var me *mysql.MyError
			for {
				_, err := st.GetEvent(ctx)
				if err != nil {
					require.ErrorAs(t, err, &me)
					break
				}
			}
			assert.EqualValues(t, mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, me.Code)
		})
	}
}

func TestQueries(t *testing.T) {
	bl := script(th.NewBuilder(th.MySQL)).Build()
	p := start(t, bl)
	c, err := client.Connect(p.Addr(), p.User(), p.Password(), "")
	require.NoError(t, err)
	defer c.Close()

	r, err := c.Execute("SELECT @@read_only, @@super_read_only, @@GLOBAL.gtid_mode AS mode, @@gtid_executed, @@log_bin, @@log_slave_updates")
	require.NoError(t, err)
	ro, _ := r.GetInt(0, 0)
	assert.Zero(t, ro)
	mode, _ := r.GetStringByName(0, "mode")
	assert.Equal(t, "ON", mode)
	executed, _ := r.GetString(0, 3)
	assert.Equal(t, th.DefaultUUID+":1-4", executed)
	logBin, _ := r.GetInt(0, 4)
	assert.EqualValues(t, 1, logBin)

	p.SetVar("read_only", "1")
	p.SetVar("super_read_only", "ON")
	r, err = c.Execute("SELECT @@read_only, @@super_read_only")
	require.NoError(t, err)
	ro, _ = r.GetInt(0, 0)
	sro, _ := r.GetString(0, 1)
	assert.EqualValues(t, 1, ro)
	assert.Equal(t, "ON", sro)

	r, err = c.Execute("SHOW MASTER STATUS")
	require.NoError(t, err)
	file, _ := r.GetStringByName(0, "File")
	pos, _ := r.GetIntByName(0, "Position")
	set, _ := r.GetStringByName(0, "Executed_Gtid_Set")
	assert.Equal(t, bl.Files[1].Name, file)
	assert.EqualValues(t, len(bl.Files[1].Data), pos)
	assert.Equal(t, executed, set)
	r, err = c.Execute("SHOW BINARY LOG STATUS")
	require.NoError(t, err)
	assert.Equal(t, 1, r.RowNumber())

	r, err = c.Execute("SHOW BINARY LOGS")
	require.NoError(t, err)
	assert.Equal(t, 2, r.RowNumber())

	r, err = c.Execute("SHOW GLOBAL VARIABLES LIKE 'binlog_checksum'")
	require.NoError(t, err)
	v, _ := r.GetString(0, 1)
	assert.Equal(t, "CRC32", v)
	r, err = c.Execute("SHOW VARIABLES WHERE Variable_name IN ('rpl_semi_sync_master_enabled', 'rpl_semi_sync_source_enabled')")
	require.NoError(t, err)
	assert.Zero(t, r.RowNumber())

	p.UnsetVar("gtid_mode")
	_, err = c.Execute("SELECT @@gtid_mode")
	var me *mysql.MyError
	require.ErrorAs(t, err, &me)
	assert.EqualValues(t, mysql.ER_UNKNOWN_SYSTEM_VARIABLE, me.Code)

	_, err = c.Execute("KILL 4000000")
	require.ErrorAs(t, err, &me)
	assert.EqualValues(t, mysql.ER_NO_SUCH_THREAD, me.Code)

	// KILL from another connection ends this one.
	k, err := client.Connect(p.Addr(), p.User(), p.Password(), "")
	require.NoError(t, err)
	defer k.Close()
	_, err = k.Execute(fmt.Sprintf("KILL %d", c.GetConnectionID()))
	require.NoError(t, err)
	_, err = c.Execute("SELECT 1")
	assert.Error(t, err)
}

func TestQueriesMariaDB(t *testing.T) {
	bl := script(th.NewBuilder(th.MariaDB, th.Domain(3), th.ServerID(9))).Build()
	p := start(t, bl)
	c, err := client.Connect(p.Addr(), p.User(), p.Password(), "")
	require.NoError(t, err)
	defer c.Close()
	r, err := c.Execute("SELECT @@global.gtid_binlog_pos, @@read_only")
	require.NoError(t, err)
	pos, _ := r.GetString(0, 0)
	assert.Equal(t, "3-9-4", pos)
	for _, v := range []string{"@@gtid_mode", "@@super_read_only", "@@gtid_executed"} {
		_, err = c.Execute("SELECT " + v)
		var me *mysql.MyError
		require.ErrorAs(t, err, &me, v)
		assert.EqualValues(t, mysql.ER_UNKNOWN_SYSTEM_VARIABLE, me.Code)
	}
	r, err = c.Execute("SHOW MASTER STATUS")
	require.NoError(t, err)
	assert.Equal(t, 4, len(r.Fields))
}

func TestHeartbeatsAndAppend(t *testing.T) {
	for _, f := range flavors() {
		t.Run(string(f), func(t *testing.T) {
			b := script(th.NewBuilder(f))
			bl := b.Build()
			p := start(t, bl)
			st, err := newSyncer(t, p, f, func(c *replication.BinlogSyncerConfig) { c.HeartbeatPeriod = 20 * time.Millisecond }).
				StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 4})
			require.NoError(t, err)
			read(t, st, dumpLen(bl))
			hb := read(t, st, 2)
			for _, ev := range hb {
				h, ok := ev.Event.(*replication.HeartbeatEvent)
				require.True(t, ok, "idle: heartbeats, got %s", ev.Header.EventType)
				assert.Equal(t, bl.Files[1].Name, h.Filename)
				assert.EqualValues(t, len(bl.Files[1].Data), ev.Header.LogPos)
			}
			// A blocked dump goes on with appended events.
			b.Txn(func(t *th.Txn) { t.Insert(users, rows(50, 1)...) })
			grown := b.Build()
			require.NoError(t, p.Append(grown))
			var got []replication.EventType
			for len(got) < len(grown.Events)-len(bl.Events) {
				ev := read(t, st, 1)[0]
				if _, ok := ev.Event.(*replication.HeartbeatEvent); !ok {
					got = append(got, ev.Header.EventType)
				}
			}
			var want []replication.EventType
			for _, e := range grown.Events[len(bl.Events):] {
				want = append(want, e.Type)
			}
			assert.Equal(t, want, got)
		})
	}
}

// streamErr reads until the stream fails and returns the events before.
func streamErr(t *testing.T, st *replication.BinlogStreamer) ([]*replication.BinlogEvent, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []*replication.BinlogEvent
	for {
		ev, err := st.GetEvent(ctx)
		if err != nil {
			require.NotErrorIs(t, err, context.DeadlineExceeded)
			return out, err
		}
		out = append(out, ev)
	}
}

func TestCutAfterEvents(t *testing.T) {
	bl := script(th.NewBuilder(th.MySQL)).Build()
	p := start(t, bl)
	for _, n := range []int{0, 1, 2, 5, dumpLen(bl) - 1} {
		p.InjectFaults(fakeprimary.Fault{AfterEvents: n})
		st, err := newSyncer(t, p, th.MySQL).StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 4})
		require.NoError(t, err)
		evs, err := streamErr(t, st)
		require.ErrorIs(t, err, mysql.ErrBadConn, "cut after %d", n)
		// GetEvent may return the error before events queued ahead of it.
		assert.LessOrEqual(t, len(evs), n)
	}
}

func TestCutAfterBytes(t *testing.T) {
	bl := script(th.NewBuilder(th.MySQL)).Build()
	p := start(t, bl)
	// The fake Rotate's packet: 4-byte header, OK byte, event.
	rotate := int64(4 + 1 + len(th.FakeRotate(bl.ServerID, bl.Files[0].Name, 4, false)))
	for _, n := range []int64{1, rotate - 1, rotate, rotate + 10} {
		p.InjectFaults(fakeprimary.Fault{AfterBytes: n})
		st, err := newSyncer(t, p, th.MySQL).StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 4})
		require.NoError(t, err)
		evs, err := streamErr(t, st)
		require.ErrorIs(t, err, mysql.ErrBadConn, "cut after %d bytes", n)
		assert.LessOrEqual(t, len(evs), int(n/rotate))
	}
}

func TestStall(t *testing.T) {
	bl := script(th.NewBuilder(th.MySQL)).Build()
	p := start(t, bl)
	p.InjectFaults(fakeprimary.Fault{AfterEvents: 3, Stall: true})
	st, err := newSyncer(t, p, th.MySQL).StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 4})
	require.NoError(t, err)
	read(t, st, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err = st.GetEvent(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "stalled")
	assert.Equal(t, 1, p.OpenConnections(), "the stalled connection stays open")
	p.Unstall()
	read(t, st, dumpLen(bl)-3)

	// Stall in the middle of a packet, then the global stall.
	p.InjectFaults(fakeprimary.Fault{AfterBytes: 10, Stall: true})
	st, err = newSyncer(t, p, th.MySQL).StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 4})
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond)
	p.Stall()
	p.Unstall() // releases the fault; the global stall is lifted with it
	read(t, st, dumpLen(bl))

	// The global stall holds heartbeats too.
	p.Stall()
	st, err = newSyncer(t, p, th.MySQL, func(c *replication.BinlogSyncerConfig) { c.HeartbeatPeriod = 10 * time.Millisecond }).
		StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 4})
	require.NoError(t, err)
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err = st.GetEvent(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "stalled")
	p.Unstall()
	read(t, st, dumpLen(bl)+1)
}

func TestRefuse(t *testing.T) {
	bl := script(th.NewBuilder(th.MySQL)).Build()
	p := start(t, bl)

	p.Refuse(fakeprimary.RefuseClose)
	_, err := client.Connect(p.Addr(), p.User(), p.Password(), "")
	require.Error(t, err)
	var me *mysql.MyError
	assert.False(t, errors.As(err, &me), "a closed connection is no server error: %v", err)

	p.Refuse(fakeprimary.RefuseAuth)
	_, err = client.Connect(p.Addr(), p.User(), p.Password(), "")
	require.ErrorAs(t, err, &me)
	assert.EqualValues(t, mysql.ER_ACCESS_DENIED_ERROR, me.Code)

	p.Refuse(fakeprimary.Accept)
	p.RefuseNext(1, fakeprimary.RefuseClose)
	_, err = newSyncer(t, p, th.MySQL).StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 4})
	require.Error(t, err)
	st, err := newSyncer(t, p, th.MySQL).StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 4})
	require.NoError(t, err)
	read(t, st, dumpLen(bl))
	assert.Equal(t, 4, p.Connections())
}

// TestPromote: the promoted server's copy splits the in-flight
// transaction's rows differently; open dumps are cut, new ones see it.
func TestPromote(t *testing.T) {
	old := th.NewBuilder(th.MySQL, th.MaxRowsPerEvent(2)).Txn(func(t *th.Txn) { t.Insert(users, rows(1, 6)...) }).Build()
	promoted := th.NewBuilder(th.MySQL, th.MaxRowsPerEvent(3)).Txn(func(t *th.Txn) { t.Insert(users, rows(1, 6)...) }).Build()
	p := start(t, old)
	st, err := newSyncer(t, p, th.MySQL).StartSync(mysql.Position{Name: old.Files[0].Name, Pos: 4})
	require.NoError(t, err)
	read(t, st, dumpLen(old))
	p.Promote(promoted)
	_, err = streamErr(t, st)
	require.ErrorIs(t, err, mysql.ErrBadConn)

	st, err = newSyncer(t, p, th.MySQL).StartSync(mysql.Position{Name: promoted.Files[0].Name, Pos: 4})
	require.NoError(t, err)
	var writes int
	for _, ev := range read(t, st, dumpLen(promoted)) {
		if ev.Header.EventType == replication.WRITE_ROWS_EVENTv2 {
			writes++
		}
	}
	assert.Equal(t, 2, writes)
}

func TestTransactionPayloadOverTheWire(t *testing.T) {
	bl, err := th.CompressTransactions(script(th.NewBuilder(th.MySQL, th.MaxRowsPerEvent(2))).Build())
	require.NoError(t, err)
	p := start(t, bl)
	st, err := newSyncer(t, p, th.MySQL).StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 4})
	require.NoError(t, err)
	var payloads, inner int
	for _, ev := range read(t, st, dumpLen(bl)) {
		if pe, ok := ev.Event.(*replication.TransactionPayloadEvent); ok {
			payloads++
			inner += len(pe.Events)
		}
	}
	assert.Equal(t, 3, payloads)
	assert.Positive(t, inner)
}

// TestCloseLeavesNothing: Close ends every goroutine of the primary, with
// a stalled dump, a caught-up dump, a half-open connection and a client
// that never closes.
func TestCloseLeavesNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		bl := script(th.NewBuilder(th.MySQL)).Build()
		p, err := fakeprimary.Start(bl)
		require.NoError(t, err)
		c1 := replication.NewBinlogSyncer(syncerConfig(p, th.MySQL))
		st, err := c1.StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 4})
		require.NoError(t, err)
		read(t, st, dumpLen(bl))
		p.InjectFaults(fakeprimary.Fault{AfterEvents: 1, Stall: true})
		c2 := replication.NewBinlogSyncer(syncerConfig(p, th.MySQL))
		st2, err := c2.StartSync(mysql.Position{Name: bl.Files[0].Name, Pos: 4})
		require.NoError(t, err)
		read(t, st2, 1)
		idle, err := client.Connect(p.Addr(), p.User(), p.Password(), "")
		require.NoError(t, err)

		done := make(chan error, 1)
		go func() { done <- p.Close() }()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("Close hangs")
		}
		require.NoError(t, p.Close(), "Close twice")
		c1.Close()
		c2.Close()
		idle.Close()
	}()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines left (before: %d):\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
