package binlogstream_test

import (
	"context"
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
