package mysqljson_test

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/mysqljson"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// partialBody builds a PARTIAL_UPDATE_ROWS_EVENT of one row: JSON column
// j1 logged as a diff, id left out of the after image, s and e changed,
// and returns the event body (without its header) and its Table_map.
func partialBody(t testing.TB) ([]byte, *replication.TableMapEvent) {
	tbl := th.Table{ID: 3, Schema: "s", Name: "t", Columns: []th.Column{
		{Name: "j1", Type: th.JSON}, {Name: "id", Type: th.BigInt}, {Name: "s", Type: th.Varchar(300)}, {Name: "e", Type: th.Enum("a")}}}
	b := th.NewBuilder(th.MySQL, th.Checksum(false))
	b.Txn(func(x *th.Txn) {
		x.PartialUpdate(tbl, th.Row{`{"a":[1]}`, int64(1), "x", 1}, th.Row{th.JSONDiffs{th.JSONRemove("$.a[0]")}, th.Absent, "y", nil})
	})
	bl := b.Build()
	p := replication.NewBinlogParser()
	for _, e := range bl.Events {
		ev, err := p.Parse(bl.Files[0].Data[e.Start:e.End])
		require.NoError(t, err)
		if e.Type == replication.PARTIAL_UPDATE_ROWS_EVENT {
			return ev.RawData[replication.EventHeaderSize:], ev.Event.(*replication.RowsEvent).Table
		}
	}
	t.Fatal("no partial rows event")
	return nil, nil
}

// TestReadImagePair: the walker finds each column of both images, the
// diff vector of the partial JSON column among them.
func TestReadImagePair(t *testing.T) {
	body, tm := partialBody(t)
	before, after, err := mysqljson.ReadImagePair(body, tm, 1)
	require.NoError(t, err)
	require.Len(t, before, 4)
	require.Len(t, after, 4)
	for c, col := range before {
		assert.True(t, col.Present, "before column %d", c)
		assert.False(t, col.Null || col.Partial, "before column %d", c)
	}
	doc, err := mysqljson.DecodeBinary(before[0].Data)
	require.NoError(t, err)
	assert.Equal(t, `{"a":[1]}`, doc.String())
	assert.Equal(t, "x", string(before[2].Data))
	assert.True(t, after[0].Present && after[0].Partial && !after[0].Null)
	diffs, err := mysqljson.ReadDiffs(after[0].Data)
	require.NoError(t, err)
	require.Len(t, diffs, 1)
	assert.Equal(t, mysqljson.Diff{Op: replication.JsonDiffOperationRemove, Path: "$.a[0]"}, diffs[0].Diff(true))
	assert.False(t, after[1].Present, "left out of the after image")
	assert.Equal(t, "y", string(after[2].Data))
	assert.True(t, after[3].Present && after[3].Null)
}

// FuzzPartialRowImages: the row image walker never panics on a corrupt
// event body.
func FuzzPartialRowImages(f *testing.F) {
	body, tm := partialBody(f)
	f.Add(body)
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _, _ = mysqljson.ReadImagePair(body, tm, 1)
	})
}
