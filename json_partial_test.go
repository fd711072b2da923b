package binlogstream_test

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// partialCases are diff vectors as MySQL writes them, each with the after
// document written out by hand (keys in MySQL's order: shorter first,
// then bytewise).
var partialCases = []struct {
	name   string
	before string
	diffs  th.JSONDiffs
	after  string
}{
	{"replace a member", `{"a":1,"b":"x"}`, th.JSONDiffs{th.JSONReplace("$.a", `"new"`)},
		`{"a":"new","b":"x"}`},
	{"three diffs in one column", `{"a":1,"b":2,"c":3}`,
		th.JSONDiffs{th.JSONReplace("$.a", `10`), th.JSONRemove("$.b"), th.JSONInsert("$.d", `[true,null]`)},
		`{"a":10,"c":3,"d":[true,null]}`},
	{"nested path", `{"a":{"b":{"c":1},"x":0}}`, th.JSONDiffs{th.JSONReplace("$.a.b.c", `2.5`), th.JSONInsert("$.a.b.d", `{}`)},
		`{"a":{"b":{"c":2.5,"d":{}},"x":0}}`},
	{"array insert at the front and in a member", `{"a":[1,2,3,4]}`,
		th.JSONDiffs{th.JSONInsert("$.a[0]", `0`), th.JSONInsert("$.a[2]", `"two"`)},
		`{"a":[0,1,"two",2,3,4]}`},
	{"array insert past the end appends", `[1]`, th.JSONDiffs{th.JSONInsert("$[9]", `2`)}, `[1,2]`},
	{"array remove, the last element too", `{"a":[1,2,3]}`,
		th.JSONDiffs{th.JSONRemove("$.a[1]"), th.JSONRemove("$.a[1]")}, `{"a":[1]}`},
	{"remove the only element", `[[7]]`, th.JSONDiffs{th.JSONRemove("$[0][0]")}, `[[]]`},
	{"last and last-N cells", `[1,2,3]`, th.JSONDiffs{th.JSONReplace("$[last]", `30`), th.JSONRemove("$[last-2]")}, `[2,30]`},
	{"key insert in MySQL's order", `{"b":1,"aa":2,"ccc":3}`,
		th.JSONDiffs{th.JSONInsert("$.a", `0`), th.JSONInsert("$.ab", `4`), th.JSONInsert("$.c", `5`)},
		`{"a":0,"b":1,"c":5,"aa":2,"ab":4,"ccc":3}`},
	{"quoted member with a space", `{"key with space":1,"k":2}`,
		th.JSONDiffs{th.JSONReplace(`$."key with space"`, `"v"`), th.JSONInsert(`$."a \"q\""`, `1`)},
		`{"k":2,"a \"q\"":1,"key with space":"v"}`},
	{"member of an array cell", `[{"x":1},{"x":2}]`, th.JSONDiffs{th.JSONReplace("$[1].x", `{"y":[2.0,-7,"\n"]}`)},
		`[{"x":1},{"x":{"y":[2.0,-7,"\n"]}}]`},
	{"scalar types", `{"a":0}`,
		th.JSONDiffs{th.JSONReplace("$.a", `4294967296`), th.JSONInsert("$.b", `18446744073709551615`), th.JSONInsert("$.c", `-1.25e-7`), th.JSONInsert("$.d", `false`)},
		`{"a":4294967296,"b":18446744073709551615,"c":-1.25e-07,"d":false}`},
}

// TestPartialJSONApply applies each diff vector to the before document in
// MySQL's binary form, and checks the after document against the one
// written by hand, and against the same document written whole in binary
// form and decoded: the diff path and the whole-document path agree.
func TestPartialJSONApply(t *testing.T) {
	for _, c := range partialCases {
		t.Run(c.name, func(t *testing.T) {
			require.NotEqual(t, c.before, c.after)
			pj, err := binlogstream.ApplyJSONDiffVector(th.JSONBinary(c.before), c.diffs.Binary())
			require.NoError(t, err)
			assert.Equal(t, c.after, pj.After)
			whole, err := binlogstream.DecodeJSONBinaryText(th.JSONBinary(c.after))
			require.NoError(t, err)
			assert.Equal(t, c.after, whole, "the hand-written after document is not in MySQL's order")
			require.Len(t, pj.Diffs, len(c.diffs), "every diff of the vector is read")
			text, err := binlogstream.ApplyJSONDiffs(c.before, pj.Diffs)
			require.NoError(t, err)
			assert.Equal(t, c.after, text, "the diffs applied to the document as text")
			for k, d := range c.diffs {
				assert.Equal(t, d.Op, pj.Diffs[k].Op)
				assert.Equal(t, d.Path, pj.Diffs[k].Path)
				if d.Op != replication.JsonDiffOperationRemove {
					want, err := binlogstream.DecodeJSONBinaryText(th.JSONBinary(d.Value))
					require.NoError(t, err)
					assert.Equal(t, want, pj.Diffs[k].Value)
				}
			}
		})
	}
}

// TestPartialJSONRejected: diffs a MySQL replica rejects are errors, never
// a guessed document.
func TestPartialJSONRejected(t *testing.T) {
	for _, c := range []struct {
		before string
		diff   th.JSONDiff
	}{
		{`{"a":1}`, th.JSONReplace("$.b", `1`)},
		{`{"a":1}`, th.JSONInsert("$.a", `2`)},
		{`{"a":1}`, th.JSONRemove("$.b")},
		{`[1,2]`, th.JSONRemove("$[2]")},
		{`[1,2]`, th.JSONReplace("$[5]", `0`)},
		{`{"a":1}`, th.JSONReplace("$[0]", `0`)}, // no auto-wrapping
		{`{"a":1}`, th.JSONInsert("$.a.b", `0`)}, // parent is a scalar
		{`{"a":1}`, th.JSONInsert("$.x.y", `0`)}, // parent missing
		{`{"a":1}`, th.JSONReplace("$", `0`)},    // the root
		{`{"a":1}`, th.JSONRemove("$.*")},        // wildcards never occur in a diff
		{`{"a":1}`, th.JSONRemove("$[1 to 2]")},
	} {
		_, err := binlogstream.ApplyJSONDiffVector(th.JSONBinary(c.before), th.JSONDiffs{c.diff}.Binary())
		assert.Error(t, err, "%s %s on %s", c.diff.Op, c.diff.Path, c.before)
	}
	_, err := binlogstream.ApplyJSONDiffVector(th.JSONBinary(`{}`), []byte{3, 0, 0, 0, 7, 1, '$'})
	assert.ErrorIs(t, err, replication.ErrCorruptedJSONDiff, "unknown operation")
	_, err = binlogstream.ApplyJSONDiffVector(th.JSONBinary(`{}`), []byte{3, 0, 0, 0, 0, 9, '$'})
	assert.ErrorIs(t, err, replication.ErrCorruptedJSONDiff, "truncated path")
}

// TestJSONBinaryLargeLayout: a document past 64 KiB uses 4-byte offsets.
func TestJSONBinaryLargeLayout(t *testing.T) {
	big := `{"a":"` + repeat("x", 70000) + `","b":[1,2,70000]}`
	doc := th.JSONBinary(big)
	require.Equal(t, byte(0x01), doc[0], "large object")
	got, err := binlogstream.DecodeJSONBinaryText(doc)
	require.NoError(t, err)
	assert.Equal(t, big, got)
	pj, err := binlogstream.ApplyJSONDiffVector(doc, th.JSONDiffs{th.JSONRemove("$.a"), th.JSONInsert("$.b[1]", `1.5`)}.Binary())
	require.NoError(t, err)
	assert.Equal(t, `{"b":[1,1.5,2,70000]}`, pj.After)
}

func repeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}

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
				th.Row{`{"a":[1]}`, int64(1), "long " + repeat("s", 280), `[0]`},
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

// FuzzJSONDiffVector: any document and diff vector give a result or an
// error, never a panic; a result is valid JSON.
func FuzzJSONDiffVector(f *testing.F) {
	for _, c := range partialCases {
		f.Add(th.JSONBinary(c.before), c.diffs.Binary())
	}
	f.Fuzz(func(t *testing.T, doc, vector []byte) {
		pj, err := binlogstream.ApplyJSONDiffVector(doc, vector)
		if err == nil && utf8.ValidString(pj.After) {
			require.True(t, json.Valid([]byte(pj.After)), "%q", pj.After)
		}
	})
}

// FuzzPartialRowImages: the row image walker never panics on a corrupt
// event body.
func FuzzPartialRowImages(f *testing.F) {
	tbl := th.Table{ID: 3, Schema: "s", Name: "t", Columns: []th.Column{
		{Name: "j1", Type: th.JSON}, {Name: "id", Type: th.BigInt}, {Name: "s", Type: th.Varchar(300)}, {Name: "e", Type: th.Enum("a")}}}
	b := th.NewBuilder(th.MySQL, th.Checksum(false))
	b.Txn(func(x *th.Txn) {
		x.PartialUpdate(tbl, th.Row{`{"a":[1]}`, int64(1), "x", 1}, th.Row{th.JSONDiffs{th.JSONRemove("$.a[0]")}, th.Absent, "y", nil})
	})
	e := parsedEvent(f, b.Build(), replication.PARTIAL_UPDATE_ROWS_EVENT)
	tm := e.Event.(*replication.RowsEvent).Table
	f.Add(e.RawData[replication.EventHeaderSize:])
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _ = binlogstream.ReadRowImages(body, tm, 2)
	})
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
