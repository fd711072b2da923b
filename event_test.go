package binlogstream_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// rowSink is what a consumer that writes one row change at a time keeps:
// the changes applied and, committed with each, a token.
type rowSink struct {
	applied []string
	token   string
}

var errCrashRow = errors.New("crash between rows")

// consumeRows runs a consumer from the sink's token (or start) to the
// binlog's end. It applies one change at a time, storing beside each the
// token tokenFor gives, and crashes after the crashAt-th change it
// applies (never when crashAt is 0).
func consumeRows(t *testing.T, bl *th.Binlog, start binlogstream.ResumePosition, sink *rowSink, crashAt int,
	perEventToken bool) error {
	t.Helper()
	if sink.token != "" {
		var err error
		start, err = binlogstream.ParseResumePosition(sink.token)
		require.NoError(t, err)
	}
	last := bl.Files[len(bl.Files)-1]
	end := binlogstream.Position{File: last.Name, Offset: uint64(len(last.Data))}
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: th.NewFakeSource(bl), Start: start})
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := 0
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		for change, resume := range ev.Changes() {
			if perEventToken {
				resume = ev.Resume // the trap: Resume covers every change of the event
			}
			sink.applied = append(sink.applied, fmt.Sprint(binlogstream.RowKind(ev.Header.EventType), change))
			sink.token = resume.String()
			if n++; n == crashAt {
				return errCrashRow
			}
		}
		if binlogstream.RowChanges(ev.BinlogEvent) == 0 {
			sink.token = ev.Resume.String()
		}
		if ev.End.Compare(end) >= 0 {
			cancel()
		}
		return nil
	})
	err = s.Run(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// A consumer that stores the token Changes yields beside each change loses
// and repeats nothing over a crash between any two changes, in file and
// GTID mode; one that stores ev.Resume beside each change loses the rest
// of the event.
func TestEventChangesCrashBetweenRows(t *testing.T) {
	bl := th.NewBuilder(th.MariaDB).
		Txn(func(x *th.Txn) { x.Insert(users, userRows(1, 4)...) }).
		Txn(func(x *th.Txn) {
			x.Update(users, th.Row{int32(1), "user-1"}, th.Row{int32(1), "a"}, th.Row{int32(2), "user-2"}, th.Row{int32(2), "b"})
			x.Delete(users, userRows(3, 2)...)
		}).
		Txn(func(x *th.Txn) { x.Insert(users, userRows(5, 3)...) }).Build()
	fileStart := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
	gtidStart, err := binlogstream.StartAtGTID(string(bl.Flavor), "")
	require.NoError(t, err)

	for _, mode := range []struct {
		name  string
		start binlogstream.ResumePosition
	}{{"file", fileStart}, {"gtid", gtidStart}} {
		t.Run(mode.name, func(t *testing.T) {
			var full rowSink
			require.NoError(t, consumeRows(t, bl, mode.start, &full, 0, false))
			require.Len(t, full.applied, 11)
			for crashAt := 1; crashAt < len(full.applied); crashAt++ {
				var sink rowSink
				require.ErrorIs(t, consumeRows(t, bl, mode.start, &sink, crashAt, false), errCrashRow)
				require.NoError(t, consumeRows(t, bl, mode.start, &sink, 0, false))
				require.Equal(t, full.applied, sink.applied, "crash after change %d", crashAt)
			}

			// Negative control: the per-event token beside each change.
			lost := 0
			for crashAt := 1; crashAt < len(full.applied); crashAt++ {
				var sink rowSink
				require.ErrorIs(t, consumeRows(t, bl, mode.start, &sink, crashAt, true), errCrashRow)
				require.NoError(t, consumeRows(t, bl, mode.start, &sink, 0, true))
				lost += len(full.applied) - len(sink.applied)
			}
			assert.Positive(t, lost, "storing ev.Resume beside each change loses changes")
			t.Logf("ev.Resume beside each change: %d changes lost over %d crashes", lost, len(full.applied)-1)
		})
	}
}

// Changes stops when the loop breaks, and yields nothing for an event
// without rows.
func TestEventChangesBreakAndNoRows(t *testing.T) {
	bl := th.NewBuilder(th.MySQL).Txn(func(x *th.Txn) { x.Insert(users, userRows(1, 3)...) }).Build()
	var got []any
	nonRows := 0
	var sink rowSink
	start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: th.NewFakeSource(bl), Start: start})
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if _, ok := ev.Event.(*replication.RowsEvent); !ok {
			for range ev.Changes() {
				nonRows++
			}
		}
		for change, resume := range ev.Changes() {
			got = append(got, change[0][0])
			sink.token = resume.String()
			if len(got) == 2 {
				break
			}
		}
		if _, ok := ev.Event.(*replication.XIDEvent); ok {
			cancel()
		}
		return nil
	})
	require.ErrorIs(t, s.Run(ctx), context.Canceled)
	assert.Equal(t, []any{int32(1), int32(2)}, got)
	assert.Zero(t, nonRows)
}
