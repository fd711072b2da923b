package binlogstream_test

import (
	"context"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// recordingSource records whether each rows event a dump returned had its
// rows decoded.
type recordingSource struct {
	*th.FakeSource
	decoded, skipped int
}

func (r *recordingSource) OpenFileReplay(ctx context.Context, pos mysql.Position, streamed binlogstream.Position) (binlogstream.Stream, error) {
	st, err := r.FakeSource.OpenFileReplay(ctx, pos, streamed)
	return &recordingStream{Stream: st, r: r}, err
}

type recordingStream struct {
	binlogstream.Stream
	r *recordingSource
}

func (s *recordingStream) Next(ctx context.Context) (*replication.BinlogEvent, error) {
	ev, err := s.Stream.Next(ctx)
	if re, ok := ev.Event.(*replication.RowsEvent); err == nil && ok {
		if re.Rows == nil {
			s.r.skipped++
		} else {
			s.r.decoded++
		}
	}
	return ev, err
}

// TestResumeSkipsDecodingReplayedRows: a resume inside a 40-event
// statement leaves the rows of the replayed events undecoded, decodes the
// rest, and delivers exactly what an uninterrupted run does.
func TestResumeSkipsDecodingReplayedRows(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		bl := th.NewBuilder(f, th.MaxRowsPerEvent(5)).
			Txn(func(t *th.Txn) { t.Insert(orders, orderRows(0, 200)...) }).
			Rotate().
			Txn(func(t *th.Txn) { t.Insert(users, userRows(0, 12)...) }).Build()
		sc := scenario{bl: bl}
		full := uninterrupted(t, sc)
		rowsType := replication.WRITE_ROWS_EVENTv2
		if f == th.MariaDB {
			rowsType = replication.WRITE_ROWS_EVENTv1
		}
		thirty, ok := bl.Nth(rowsType, 30)
		require.True(t, ok)
		k := thirty.Index + 1
		tok := full.tokens[k-1]
		require.Less(t, tok.Safe.Offset, tok.Streamed.Offset, "the token is inside the statement")

		src := &recordingSource{FakeSource: sc.source()}
		rest := stream(t, src, roundTrip(t, tok), len(bl.Events)-k, nil)
		require.ErrorIs(t, rest.err, context.Canceled)
		assert.Equal(t, full.entries[full.first[k]:], rest.entries)
		assert.Equal(t, 30, src.skipped, "the 30 replayed rows events were not decoded")
		assert.Equal(t, 10+3, src.decoded, "the statement's other 10 events and the next file's 3 were")
		dropped := uint64(31) // the Table_map and 30 rows events
		if f == th.MariaDB {
			dropped++ // and the statement's Annotate_rows
		}
		assert.Equal(t, dropped, rest.stats.DroppedAtStart, f)

		// Between two rows: the partly delivered event is decoded and trimmed.
		mid := stream(t, &recordingSource{FakeSource: sc.source()}, roundTrip(t, tok), 1, nil)
		require.Len(t, mid.entries, 5)
	}
}
