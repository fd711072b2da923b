package binlogstream_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// TestWireParallelDecode: with rows decoded on worker goroutines, the
// events reach the listener in binlog order with their rows, the same as
// with go-mysql decoding them itself; a rows event whose rows cannot be
// decoded stops the stream with a *DecodeError wrapping go-mysql's
// *replication.EventError, after every event before it.
func TestWireParallelDecode(t *testing.T) {
	b := th.NewBuilder(th.MySQL, th.Checksum(false), th.MaxRowsPerEvent(3))
	for i := range 50 {
		b.Txn(func(x *th.Txn) { x.Insert(users, userRows(i*10, 7)...) })
	}
	bl := b.Build()
	p := startPrimary(t, bl)
	run := func(workers int) ([]string, error) {
		src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
			DSN:      binlogstream.DSN{User: p.User(), Password: p.Password(), Host: p.Host(), Port: p.Port()},
			ServerID: 4243, Flavor: mysql.MySQLFlavor, DecodeWorkers: workers, EventCacheCount: 16,
		})
		require.NoError(t, err)
		s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, MaxReconnectAttempts: -1,
			Start: binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})})
		require.NoError(t, err)
		var got []string
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
			got = append(got, entries(ev)...)
			if len(got) >= 50*7+100 || ev.End.Compare(binlogstream.Position{File: bl.Files[0].Name, Offset: uint64(bl.Events[len(bl.Events)-1].End)}) >= 0 {
				cancel()
			}
			return nil
		})
		err = s.Run(ctx)
		return got, err
	}
	serial, err := run(1)
	require.ErrorIs(t, err, context.Canceled)
	parallel, err := run(4)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, serial, parallel)
	assert.Greater(t, len(serial), 350)

	// A rows event whose VARCHAR length runs past its end.
	ev, ok := bl.Nth(replication.WRITE_ROWS_EVENTv2, 30)
	require.True(t, ok)
	data := bl.Files[0].Data
	// header 19, table id 6, flags 2, extra 2, column count 1, bitmap 1,
	// then the first row: null bitmap 1, id 4, the name's length byte
	data[int(ev.Start)+19+6+2+2+1+1+1+4] = 200
	p2 := startPrimary(t, bl)
	p = p2
	got, err := run(4)
	var de *binlogstream.DecodeError
	require.ErrorAs(t, err, &de)
	var ee *replication.EventError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, replication.WRITE_ROWS_EVENTv2, ee.Header.EventType)
	assert.Equal(t, serial[:len(got)], got, "everything before the broken event, in order")
	assert.NotEmpty(t, got)
}

// TestWireTableFilter: with SyncerConfig.DecodeTable wanting one table, the
// other's rows events are not delivered while everything else is as
// without the filter; a crash after every event, resumed with the same
// filter, delivers exactly the filtered uninterrupted run, in file and
// GTID mode, decoding on go-mysql's goroutine and on workers.
func TestWireTableFilter(t *testing.T) {
	b := th.NewBuilder(th.MySQL, th.MaxRowsPerEvent(2))
	for i := range 6 {
		b.Txn(func(x *th.Txn) {
			x.Insert(users, userRows(i*10, 3)...)
			x.MultiTable(th.Inserted(orders, orderRows(i*10, 3)...), th.Inserted(users, userRows(i*10+5, 1)...))
		})
	}
	bl := b.Build()
	p := startPrimary(t, bl)
	onlyOrders := func(schema, table string) bool { return table == "orders" }
	src := func(workers int, filter func(string, string) bool) binlogstream.Source {
		s, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
			DSN:      binlogstream.DSN{User: p.User(), Password: p.Password(), Host: p.Host(), Port: p.Port()},
			ServerID: 4244, Flavor: mysql.MySQLFlavor, DecodeWorkers: workers, DecodeTable: filter,
		})
		require.NoError(t, err)
		return s
	}
	for _, gtid := range []bool{false, true} {
		start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
		if gtid {
			var err error
			start, err = binlogstream.StartAtGTID("mysql", "")
			require.NoError(t, err)
		}
		n := len(bl.Events) // delivered: every event in file mode, those of transactions in GTID mode
		if gtid {
			n = 0
			for _, e := range bl.Events {
				if e.GTID != "" {
					n++
				}
			}
		}
		all := runWire(t, src(1, nil), start, n)
		var want []string
		for _, e := range all.entries {
			if !strings.Contains(e, " app.users ") {
				want = append(want, e)
			}
		}
		require.Less(t, len(want), len(all.entries))
		filtered := 0 // the users rows events, not delivered
		for _, ty := range all.entries {
			if strings.Contains(ty, " app.users ") {
				filtered++
			}
		}
		_ = filtered
		// The same filter on the binlog's files (DirConfig.DecodeTable).
		dir := writeDir(t, bl, false).Dir()
		dirSrc := func(workers int, filter func(string, string) bool) binlogstream.Source {
			s, err := binlogstream.NewDirSource(binlogstream.DirConfig{Dir: dir, DecodeWorkers: workers, DecodeTable: filter,
				PollInterval: time.Millisecond, HeartbeatPeriod: 5 * time.Millisecond})
			require.NoError(t, err)
			return s
		}
		for _, source := range []struct {
			name string
			make func(int, func(string, string) bool) binlogstream.Source
		}{{"server", src}, {"files", dirSrc}} {
			for _, workers := range []int{1, 3} {
				full := runWire(t, source.make(workers, onlyOrders), start, n-usersRowsEvents(bl, gtid))
				require.Equal(t, want, full.entries, "%s gtid=%v workers=%d", source.name, gtid, workers)
				for k := 1; k < full.events; k++ {
					first := runWire(t, source.make(workers, onlyOrders), start, k)
					rest := runWire(t, source.make(workers, onlyOrders), reparseToken(t, first.last), full.events-k)
					require.True(t, rest.err == nil || errors.Is(rest.err, context.Canceled), "%s gtid=%v workers=%d crash after %d: %v",
						source.name, gtid, workers, k, rest.err)
					require.Equal(t, want, append(first.entries, rest.entries...), "%s gtid=%v workers=%d crash after %d", source.name, gtid, workers, k)
				}
			}
		}
	}
}

func reparseToken(t *testing.T, r binlogstream.ResumePosition) binlogstream.ResumePosition {
	back, err := binlogstream.ParseResumePosition(r.String())
	require.NoError(t, err)
	return back
}

// usersRowsEvents counts the rows events of app.users in the binlog.
func usersRowsEvents(bl *th.Binlog, gtid bool) int {
	n := 0
	for _, e := range bl.Events {
		if th.IsRowsEvent(e.Type) && strings.Contains(e.Desc, "users") && (!gtid || e.GTID != "") {
			n++
		}
	}
	return n
}
