package binlogstream_test

import (
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// TestPartialJSONEventImages reads the diff vectors of a partial rows
// event go-mysql parsed, with and without checksums: the second row's
// after image, and the same after the event's first row was trimmed as
// delivered before a resume (SkippedRows).
func TestPartialJSONEventImages(t *testing.T) {
	tbl := th.Table{ID: 3, Schema: "s", Name: "t", Columns: []th.Column{
		{Name: "j1", Type: th.JSON}, {Name: "id", Type: th.BigInt}, {Name: "s", Type: th.Varchar(300)}, {Name: "j2", Type: th.JSON}}}
	for _, crc := range []bool{true, false} {
		b := th.NewBuilder(th.MySQL, th.Checksum(crc))
		b.Txn(func(x *th.Txn) {
			x.PartialUpdate(tbl,
				th.Row{`{"a":[1]}`, int64(1), "long " + strings.Repeat("s", 280), `[0]`},
				th.Row{th.JSONDiffs{th.JSONInsert("$.a[0]", `0`)}, int64(1), "x", th.JSONDiffs{th.JSONReplace("$[0]", `1`)}},
				th.Row{`{"a":[2]}`, int64(2), "", nil},
				th.Row{th.JSONDiffs{th.JSONRemove("$.a[0]"), th.JSONInsert("$.b", `"b"`)}, int64(2), "y", nil},
				th.Row{`{}`, int64(3), "", nil}, th.Row{`[]`, int64(3), "", nil}, // no diff: value options 0
				th.Row{`{"a":[3]}`, int64(4), "z", `[1]`},
				th.Row{th.JSONDiffs{th.JSONReplace("$.a", `4`)}, int64(4), "z", th.JSONDiffs{th.JSONInsert("$[1]", `2`)}})
		})
		bl := b.Build()
		info, ok := bl.Nth(replication.PARTIAL_UPDATE_ROWS_EVENT, 1)
		require.True(t, ok)
		p := replication.NewBinlogParser()
		var ev *replication.BinlogEvent
		for _, e := range bl.Events {
			var err error
			ev, err = p.Parse(bl.Files[0].Data[e.Start:e.End])
			require.NoError(t, err)
			if e == info {
				break
			}
		}
		e := binlogstream.Event{BinlogEvent: ev}
		check := func(i, col int, want string, diffs int) {
			t.Helper()
			pj, err := e.PartialJSON(i, col)
			require.NoError(t, err)
			require.NotNil(t, pj, "image %d column %d", i, col)
			assert.Equal(t, want, pj.After)
			assert.Len(t, pj.Diffs, diffs)
		}
		check(1, 0, `{"a":[0,1]}`, 1)
		check(1, 3, `[1]`, 1)
		check(3, 0, `{"a":[],"b":"b"}`, 2)
		pj, err := e.PartialJSON(3, 3)
		assert.NoError(t, err)
		assert.Nil(t, pj, "NULL in the after image")
		pj, err = e.PartialJSON(5, 0)
		assert.NoError(t, err)
		assert.Nil(t, pj, "logged whole")
		check(7, 0, `{"a":4}`, 1)
		check(7, 3, `[1,2]`, 1)
		re := ev.Event.(*replication.RowsEvent)
		re.Rows, e.SkippedRows = re.Rows[2:], 1
		check(1, 0, `{"a":[],"b":"b"}`, 2)
		check(5, 3, `[1,2]`, 1)
	}
}

// TestPartialJSONEmptyVector: a diff vector without diffs leaves the
// document as it was.
func TestPartialJSONEmptyVector(t *testing.T) {
	tbl := th.Table{ID: 3, Schema: "s", Name: "t", Columns: []th.Column{{Name: "j", Type: th.JSON}}}
	b := th.NewBuilder(th.MySQL)
	b.Txn(func(x *th.Txn) { x.PartialUpdate(tbl, th.Row{`{"b":1,"aa":2}`}, th.Row{th.JSONDiffs{}}) })
	e := parsedEvent(t, b.Build(), replication.PARTIAL_UPDATE_ROWS_EVENT)
	pj, err := e.PartialJSON(1, 0)
	require.NoError(t, err)
	require.NotNil(t, pj)
	assert.Empty(t, pj.Diffs)
	assert.Equal(t, `{"b":1,"aa":2}`, pj.After)
}

// parsedEvent parses bl with go-mysql up to the first event of type typ.
func parsedEvent(t testing.TB, bl *th.Binlog, typ replication.EventType) binlogstream.Event {
	t.Helper()
	p := replication.NewBinlogParser()
	for _, e := range bl.Events {
		ev, err := p.Parse(bl.Files[0].Data[e.Start:e.End])
		require.NoError(t, err)
		if e.Type == typ {
			return binlogstream.Event{BinlogEvent: ev}
		}
	}
	t.Fatalf("no %s", typ)
	return binlogstream.Event{}
}

// TestPartialJSONEmptyVectorsFromMySQL reads an after image MySQL wrote
// (the bytes of go-mysql v1.16.0's TestRowsEventDecodeImageWithEmptyJSON):
// value options PARTIAL_JSON, all three JSON columns partial with empty
// diff vectors, around INT and DATETIME2 columns. The walker finds each
// column, and the after documents are the before ones.
func TestPartialJSONEmptyVectorsFromMySQL(t *testing.T) {
	after := []byte("\x01\a\x00\xf6+\x0f\x00\xeb\xafP\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x99\xac\xfa\xbe\xc3\x99\xaf\xab1\x184\x11\x00\x00") // "Ù" in go-mysql's literal is UTF-8 C3 99
	tm := &replication.TableMapEvent{Schema: []byte("s"), Table: []byte("t"),
		ColumnType: []byte{3, 3, 245, 245, 245, 18, 18, 3}, ColumnMeta: []uint16{0, 0, 4, 4, 4, 0, 0, 0}}
	docs := []string{`{"b":[1,2]}`, `"s"`, `{"a":null,"bb":1.5}`}
	before := []byte{0x00, 0xf6, 0x2b, 0x0f, 0x00, 0xeb, 0xaf, 0x50, 0x02}
	for _, d := range docs {
		bin := th.JSONBinary(d)
		before = append(append(before, byte(len(bin)), 0, 0, 0), bin...)
	}
	before = append(before, after[len(after)-14:]...) // the two DATETIME2 and the INT
	body := []byte{9, 0, 0, 0, 0, 0, 0, 0, 2, 0, 8, 0xff, 0xff}
	body = append(append(body, before...), after...)
	raw := append(make([]byte, replication.EventHeaderSize), body...)
	rows := [][]any{
		{int32(994294), int32(38842347), docs[0], docs[1], docs[2], "x", "y", int32(4404)},
		{int32(994294), int32(38842347), []byte{}, []byte{}, []byte{}, "x", "y", int32(4404)},
	}
	e := binlogstream.Event{BinlogEvent: &replication.BinlogEvent{RawData: raw,
		Header: &replication.EventHeader{EventType: replication.PARTIAL_UPDATE_ROWS_EVENT},
		Event:  &replication.RowsEvent{Table: tm, Rows: rows}}}
	for c, d := range docs {
		pj, err := e.PartialJSON(1, 2+c)
		require.NoError(t, err)
		require.NotNil(t, pj, "column %d", 2+c)
		assert.Empty(t, pj.Diffs)
		assert.Equal(t, d, pj.Before)
		assert.Equal(t, d, pj.After)
	}
}

// BenchmarkPartialJSONRowValues: RowValues over every image of a partial
// update of 50 rows (a 4-key document, three diffs per row), against the
// same rows logged whole in an UPDATE_ROWS_EVENT. Each after image walks
// the event's raw bytes up to itself.
func BenchmarkPartialJSONRowValues(b *testing.B) {
	tbl := th.Table{ID: 3, Schema: "s", Name: "t", Columns: []th.Column{
		{Name: "id", Type: th.BigInt}, {Name: "doc", Type: th.JSON}, {Name: "note", Type: th.Varchar(40)}}}
	doc := `{"id":1,"tags":["a","b","c"],"name":"some name","nested":{"x":1.5,"y":[1,2,3]}}`
	want := `{"id":2,"name":"some name","tags":["a","b","c","d"],"nested":{"y":[1,2,3]}}`
	var partial, whole []th.Row
	for i := range 50 {
		partial = append(partial, th.Row{int64(i), doc, "n"}, th.Row{int64(i),
			th.JSONDiffs{th.JSONReplace("$.id", `2`), th.JSONInsert("$.tags[3]", `"d"`), th.JSONRemove("$.nested.x")}, "n"})
		whole = append(whole, th.Row{int64(i), doc, "n"}, th.Row{int64(i), want, "n"})
	}
	for _, c := range []struct {
		name string
		kind func(*th.Txn, th.Table, ...th.Row) *th.Txn
		rows []th.Row
		typ  replication.EventType
	}{
		{"partial", (*th.Txn).PartialUpdate, partial, replication.PARTIAL_UPDATE_ROWS_EVENT},
		{"whole", (*th.Txn).Update, whole, replication.UPDATE_ROWS_EVENTv2},
	} {
		bld := th.NewBuilder(th.MySQL)
		bld.Txn(func(x *th.Txn) { c.kind(x, tbl, c.rows...) })
		e := parsedEvent(b, bld.Build(), c.typ)
		e.Table = &binlogstream.Table{Columns: []binlogstream.Column{{DataType: "bigint"}, {DataType: "json"}, {DataType: "varchar"}}}
		n := len(e.Event.(*replication.RowsEvent).Rows)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				for i := range n {
					v := e.RowValues(i)
					if i%2 == 1 && v[1] != want && c.name == "partial" {
						b.Fatalf("%v", v[1])
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n/2), "ns/row")
		})
	}
}

// TestApplyJSONDiffsToText: a consumer's own copy of a document, in any
// key order and spacing, takes the diffs as the server's copy does.
func TestApplyJSONDiffsToText(t *testing.T) {
	diffs := []binlogstream.JSONDiff{
		{Op: replication.JsonDiffOperationInsert, Path: "$.ab", Value: `{"z":1,"a":[2.50]}`},
		{Op: replication.JsonDiffOperationRemove, Path: "$.zz[0]"},
		{Op: replication.JsonDiffOperationReplace, Path: `$."b"`, Value: `"<&>"`},
	}
	got, err := binlogstream.ApplyJSONDiffs(`{ "zz": [1, 2], "b": 0, "c": 1e2 }`, diffs)
	require.NoError(t, err)
	assert.Equal(t, `{"b":"<&>","c":1e2,"ab":{"a":[2.50],"z":1},"zz":[2]}`, got)
	_, err = binlogstream.ApplyJSONDiffs(`{"b":0}`, diffs)
	assert.ErrorContains(t, err, "diff 2 of 3")
	_, err = binlogstream.ApplyJSONDiffs(`{"b":0} x`, diffs)
	assert.Error(t, err)
	_, err = binlogstream.ApplyJSONDiffs(`{"b":0}`, []binlogstream.JSONDiff{{Op: replication.JsonDiffOperationInsert, Path: "$.x", Value: `{`}})
	assert.Error(t, err)
}
