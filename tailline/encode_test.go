package tailline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"testing/quick"
	"time"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/digits"
)

type stringer struct{ s string }

func (s stringer) String() string { return s.s }

func TestAppendValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"null", nil, `null`},
		{"int8", int8(-128), `-128`},
		{"int16", int16(-32768), `-32768`},
		{"int32", int32(2147483647), `2147483647`},
		{"int64", int64(math.MinInt64), `-9223372036854775808`},
		{"int (YEAR)", 2024, `2024`},
		{"uint8", uint8(255), `255`},
		{"uint16", uint16(65535), `65535`},
		{"uint32", uint32(4294967295), `4294967295`},
		{"uint64", uint64(math.MaxUint64), `18446744073709551615`},
		{"float32", float32(1.5), `1.5`},
		{"float32 shortest", float32(0.1), `0.1`},
		{"float64", 3.141592653589793, `3.141592653589793`},
		{"float64 exponent", 1e21, `1e+21`},
		{"float64 NaN", math.NaN(), `"NaN"`},
		{"decimal string", "12.50", `"12.50"`},
		{"string", "héllo", `"héllo"`},
		{"string escapes", "a\"b\\c\nd\re\tf\x00g\x1f", `"a\"b\\c\nd\re\tf\u0000g\u001f"`},
		{"string non-UTF-8", "\xff\xfe", `{"base64":"//4="}`},
		{"bytes UTF-8", []byte("blob"), `"blob"`},
		{"bytes empty", []byte{}, `""`},
		{"bytes binary", []byte{0, 0xff, 0x80}, `{"base64":"AP+A"}`},
		{"time.Time", time.Date(2024, 1, 2, 3, 4, 5, 600000000, time.FixedZone("x", 3600)), `"2024-01-02 02:04:05.6"`},
		{"datetime string", "2024-01-02 03:04:05.123", `"2024-01-02 03:04:05.123"`},
		{"bool", true, `true`},
		{"stringer (decimal.Decimal)", stringer{"1.23"}, `"1.23"`},
		{"other", struct{ A int }{1}, `"{1}"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(appendValue(nil, tc.v))
			assert.Equal(t, tc.want, got)
			assert.True(t, json.Valid([]byte(got)), got)
		})
	}
}

// Every valid UTF-8 string round-trips through encoding/json; every other
// byte string round-trips through the base64 form.
func TestAppendStringRoundTrip(t *testing.T) {
	f := func(s string) bool {
		out := appendString(nil, s)
		if utf8.ValidString(s) {
			var back string
			return json.Unmarshal(out, &back) == nil && back == s
		}
		var back struct{ Base64 []byte }
		return json.Unmarshal(out, &back) == nil && string(back.Base64) == s
	}
	require.NoError(t, quick.Check(f, &quick.Config{MaxCount: 5000}))
	for _, s := range []string{"\u2028", "\x7f", "<>&", "\xc3", "ok\xc3("} {
		assert.True(t, f(s), "%q", s)
	}
}

func testEvent(typ replication.EventType, ev replication.Event, gtid string) *binlogstream.Event {
	return &binlogstream.Event{
		BinlogEvent: &replication.BinlogEvent{Header: &replication.EventHeader{EventType: typ}, Event: ev},
		Start:       binlogstream.Position{File: "bin.000001", Offset: 100},
		End:         binlogstream.Position{File: "bin.000001", Offset: 200},
		GTID:        gtid,
		Resume: binlogstream.ResumePosition{Safe: binlogstream.Position{File: "bin.000001", Offset: 50},
			Streamed: binlogstream.Position{File: "bin.000001", Offset: 200}},
	}
}

func TestLines(t *testing.T) {
	re := &replication.RowsEvent{Table: &replication.TableMapEvent{Schema: []byte("d"), Table: []byte("t")}}
	ev := testEvent(replication.UPDATE_ROWS_EVENTv1, re, "0-1-5")
	tok := ev.Resume.String()

	// a table whose columns are unknown: positional
	unknown := &binlogstream.Table{Schema: "d", Name: "t", Columns: make([]binlogstream.Column, 2), Unknown: "no metadata"}
	got := string(appendRowLine(nil, "update", re, unknown, []any{int32(1), "a"}, []any{int32(1), nil}, nil, nil, ev, ev.Resume))
	assert.Equal(t, `{"type":"update","schema":"d","table":"t","positional":true,"row":[1,null],"before":[1,"a"],"gtid":"0-1-5","file":"bin.000001","pos":200,"resume":"`+tok+`"}`+"\n", got)

	// a known table: keyed by name, in column order; a column the image
	// left out is absent, a NULL is null
	known := &binlogstream.Table{Schema: "d", Name: "t", Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{{Name: "id", Type: "int"}, {Name: "v", Type: "varchar(3)"}}}
	got = string(appendRowLine(nil, "update", re, known, []any{int32(1), nil}, []any{int32(1), nil}, []int{1}, nil, ev, ev.Resume))
	assert.Equal(t, `{"type":"update","schema":"d","table":"t","row":{"id":1,"v":null},"before":{"id":1},"gtid":"0-1-5","file":"bin.000001","pos":200,"resume":"`+tok+`"}`+"\n", got)

	ev.GTID = ""
	one := &binlogstream.Table{Source: binlogstream.SchemaFromBinlog, Columns: []binlogstream.Column{{Name: "n\"x"}}}
	got = string(appendRowLine(nil, "delete", re, one, nil, []any{int64(7)}, nil, nil, ev, ev.Resume))
	assert.Equal(t, `{"type":"delete","schema":"d","table":"t","row":{"n\"x":7},"file":"bin.000001","pos":200,"resume":"`+tok+`"}`+"\n", got)

	known.PrimaryKey = []int{0}
	known.Columns[1].Charset, known.Columns[1].Nullable = "utf8mb4", true
	got = string(AppendTableLine(nil, re.Table, known, ev))
	assert.Equal(t, `{"type":"table","schema":"d","table":"t","source":"history","columns":[{"name":"id","type":"int","nullable":false},{"name":"v","type":"varchar(3)","charset":"utf8mb4","nullable":true}],"primary_key":["id"],"file":"bin.000001","pos":200,"resume":"`+tok+`"}`+"\n", got)
	got = string(AppendTableLine(nil, re.Table, unknown, ev))
	assert.Equal(t, `{"type":"table","schema":"d","table":"t","source":"unknown","columns":[{"name":null,"type":null,"nullable":false},{"name":null,"type":null,"nullable":false}],"unknown":"no metadata","file":"bin.000001","pos":200,"resume":"`+tok+`"}`+"\n", got)

	q := &replication.QueryEvent{Schema: []byte("d"), Query: []byte("ALTER TABLE t\nADD x INT")}
	got = string(AppendQueryLine(nil, q, testEvent(replication.QUERY_EVENT, q, "")))
	assert.Equal(t, `{"type":"query","schema":"d","query":"ALTER TABLE t\nADD x INT","file":"bin.000001","pos":200,"resume":"`+tok+`"}`+"\n", got)
	assert.True(t, json.Valid([]byte(strings.TrimSpace(got))))
}

func TestRowKindAndMarkers(t *testing.T) {
	assert.Equal(t, "insert", binlogstream.RowKind(replication.WRITE_ROWS_EVENTv2))
	assert.Equal(t, "insert", binlogstream.RowKind(replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1))
	assert.Equal(t, "update", binlogstream.RowKind(replication.UPDATE_ROWS_EVENTv1))
	assert.Equal(t, "update", binlogstream.RowKind(replication.PARTIAL_UPDATE_ROWS_EVENT))
	assert.Equal(t, "delete", binlogstream.RowKind(replication.DELETE_ROWS_EVENTv2))
	assert.Equal(t, "", binlogstream.RowKind(replication.TABLE_MAP_EVENT))
	for _, q := range []string{"BEGIN", "COMMIT", "ROLLBACK", " commit "} {
		assert.True(t, IsTxnMarker([]byte(q)), q)
	}
	for _, q := range []string{"CREATE TABLE t (a INT)", "SAVEPOINT a", "BEGIN NOT ATOMIC SELECT 1; END"} {
		assert.False(t, IsTxnMarker([]byte(q)), q)
	}
}

// appendText checks UTF-8 in the same pass as it escapes: it must take
// the base64 form exactly when utf8.Valid says no, for both input types.
func TestAppendTextAgreesWithUTF8Valid(t *testing.T) {
	isBase64 := func(out []byte) bool { return bytes.HasPrefix(out, []byte(`{"base64":`)) }
	f := func(v []byte) bool {
		return isBase64(appendBytes(nil, v)) == !utf8.Valid(v) &&
			isBase64(appendString(nil, string(v))) == !utf8.Valid(v)
	}
	require.NoError(t, quick.Check(f, &quick.Config{MaxCount: 20000}))
	for _, s := range []string{
		"\xc2\x80", "\xc1\xbf", "\xe0\xa0\x80", "\xe0\x9f\xbf", "\xed\x9f\xbf", "\xed\xa0\x80",
		"\xef\xbf\xbd", "\xf0\x90\x80\x80", "\xf0\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf", "\xf4\x90\x80\x80",
		"\xf5\x80\x80\x80", "\xe2\x82", "a\xf0\x9f\x98", "\x80", "\xff",
	} {
		assert.True(t, f([]byte(s)), "%q", s)
	}
	// Every 2-, 3- and 4-byte prefix of the interesting lead bytes.
	for c0 := 0x80; c0 <= 0xff; c0++ {
		for c1 := 0x70; c1 <= 0xc0; c1 += 0x08 {
			for _, tail := range []string{"", "\x80", "\x80\x80", "\xbf\xbf", "A"} {
				v := append([]byte{byte(c0), byte(c1)}, tail...)
				assert.True(t, f(v), "%q", v)
			}
		}
	}
}

// appendColumn's shortcuts write what Table.Value's result would.
func TestAppendColumnAgreesWithValue(t *testing.T) {
	tbl := &binlogstream.Table{Source: binlogstream.SchemaFromHistory, Columns: []binlogstream.Column{
		{DataType: "int"}, {DataType: "int", Unsigned: true}, {DataType: "tinyint", Unsigned: true},
		{DataType: "varchar", Charset: "utf8mb4"}, {DataType: "varchar", Charset: "latin1"}, {DataType: "varchar"},
		{DataType: "char", Charset: "ascii"}, {DataType: "enum", Elems: []string{"a", "b"}}, {DataType: "bigint"},
	}}
	f := func(n int64, s string) bool {
		for i := range tbl.Columns {
			for _, raw := range []any{int8(n), int16(n), int32(n), n, s, uint8(n)} {
				if string(appendColumn(nil, tbl, i, raw)) != string(appendValue(nil, tbl.Value(i, raw))) {
					t.Logf("column %d %#v", i, raw)
					return false
				}
			}
		}
		return true
	}
	require.NoError(t, quick.Check(f, &quick.Config{MaxCount: 2000}))
}

// plainWord says yes exactly when each of the eight bytes is plainASCII,
// whatever the other bytes are: every byte value at every position of a
// plain word, every pair of byte classes, and random words.
func TestPlainWord(t *testing.T) {
	perByte := func(x uint64) bool {
		for k := range 8 {
			if textClass[byte(x>>(8*k))] != plainASCII {
				return false
			}
		}
		return true
	}
	base := load8("abcdefgh", 0)
	for c := range 256 {
		for k := range 8 {
			x := base&^(0xff<<(8*k)) | uint64(c)<<(8*k)
			require.Equal(t, perByte(x), plainWord(x), "byte %#x at %d", c, k)
		}
	}
	interesting := []byte{0, 0x01, 0x1f, 0x20, 0x21, '"', 0x23, 0x5b, '\\', 0x5d, 0x7f, 0x80, 0x9f, 0xa2, 0xdc, 0xff}
	for _, c1 := range interesting {
		for _, c2 := range interesting {
			for k1 := range 8 {
				for k2 := range 8 {
					x := base&^(0xff<<(8*k1)) | uint64(c1)<<(8*k1)
					x = x&^(0xff<<(8*k2)) | uint64(c2)<<(8*k2)
					require.Equal(t, perByte(x), plainWord(x), "%#x", x)
				}
			}
		}
	}
	require.NoError(t, quick.Check(func(x uint64) bool { return perByte(x) == plainWord(x) }, &quick.Config{MaxCount: 100000}))
}

// appendText writes what encoding/json reads back, for strings of every
// length up to 40 mixing plain bytes with the ones that need escaping or
// are not ASCII, so that every word boundary meets each of them.
func TestAppendTextWordBoundaries(t *testing.T) {
	alphabet := []string{"a", "Z", " ", "~", "\x7f", "\"", "\\", "\n", "\x00", "\x1f", "é", "€", "😀", "\xff"}
	rng := uint64(1)
	for n := 0; n <= 40; n++ {
		for range 200 {
			var sb strings.Builder
			for sb.Len() < n {
				rng = rng*6364136223846793005 + 1442695040888963407
				if rng>>60 < 12 { // mostly plain
					sb.WriteByte(byte('a' + rng>>33%26))
				} else {
					sb.WriteString(alphabet[rng>>33%uint64(len(alphabet))])
				}
			}
			s := sb.String()
			out := appendString([]byte("x"), s)[1:]
			if !utf8.ValidString(s) {
				require.True(t, bytes.HasPrefix(out, []byte(`{"base64":`)), "%q", s)
				continue
			}
			var back string
			require.NoError(t, json.Unmarshal(out, &back), "%q -> %s", s, out)
			require.Equal(t, s, back)
			want, _ := json.Marshal(s) // the same bytes but for json's HTML and U+2028 escapes
			if !strings.ContainsAny(s, "<>&\u2028\u2029") {
				require.Equal(t, string(want), string(out), "%q", s)
			}
		}
	}
}

// appendInt and appendUint write strconv's digits.
func TestAppendIntegers(t *testing.T) {
	var vals []uint64
	for p := uint64(1); ; p *= 10 {
		vals = append(vals, p-1, p, p+1)
		if p > math.MaxUint64/10 {
			break
		}
	}
	vals = append(vals, math.MaxUint64, math.MaxUint64-1, math.MaxInt64, 1<<63, 99, 100, 101, 0)
	for _, v := range vals {
		require.Equal(t, strconv.FormatUint(v, 10), string(digits.AppendUint([]byte("x"), v)[1:]))
		require.Equal(t, strconv.FormatInt(int64(v), 10), string(appendInt([]byte("x"), int64(v))[1:]))
		require.Equal(t, strconv.FormatInt(-int64(v), 10), string(appendInt(nil, -int64(v))))
	}
	require.Equal(t, "-9223372036854775808", string(appendInt(nil, math.MinInt64)))
	require.NoError(t, quick.Check(func(u uint64, i int64, shift uint8) bool {
		u >>= shift % 64
		i >>= shift % 64
		return string(digits.AppendUint(nil, u)) == strconv.FormatUint(u, 10) &&
			string(appendInt(nil, i)) == strconv.FormatInt(i, 10)
	}, &quick.Config{MaxCount: 100000}))
}

// TestTableFormatMatchesAppendColumn: a tableFormat writes every value of
// every column kind it has a shortcut for exactly as the general path
// (Table.Value, then appendValue) does, the values the decoders give and
// the odd ones that must fall back to it.
func TestTableFormatMatchesAppendColumn(t *testing.T) {
	cols := []binlogstream.Column{
		{DataType: "int"}, {DataType: "bigint"},
		{DataType: "tinyint", Unsigned: true}, {DataType: "smallint", Unsigned: true}, {DataType: "mediumint", Unsigned: true},
		{DataType: "int", Unsigned: true}, {DataType: "bigint", Unsigned: true},
		{DataType: "varchar", Charset: "utf8mb4"}, {DataType: "text", Charset: "latin1"}, {DataType: "varbinary"},
		{DataType: "decimal"}, {DataType: "double"}, {DataType: "float"},
		{DataType: "datetime"}, {DataType: "datetime", FSP: 3}, {DataType: "timestamp", FSP: 6},
		{DataType: "time"}, {DataType: "time", FSP: 1}, {DataType: "time", FSP: 3}, {DataType: "time", FSP: 6},
		{DataType: "date"}, {DataType: "year"},
		{DataType: "enum", Elems: []string{"new", "open", "closed"}}, {DataType: "enum"},
		{DataType: "set", Elems: []string{"x", "y", "w\"q", "ü"}}, {DataType: "set"}, {DataType: "bit"}, {DataType: "json"},
		{DataType: "json", Charset: "latin1"}, // MariaDB's JSON (a LONGTEXT) converted to latin1
	}
	for i := range cols {
		cols[i].Name = fmt.Sprintf("c%d", i)
	}
	tbl := &binlogstream.Table{Source: binlogstream.SchemaFromHistory, Columns: cols}
	tf := newTableFormat(tbl)
	require.NotNil(t, tf)
	values := []any{
		int64(0), int64(1), int64(-1), int64(127), int64(-128), int64(255), int64(-32768), int64(65535), int64(-8388608),
		int64(16777215), int64(-2147483648), int64(4294967295), int64(math.MinInt64), int64(math.MaxInt64),
		int32(-5), int16(7), int8(-1), uint64(0), uint64(math.MaxUint64), uint32(7), 3,
		float64(0.1), float64(-1e300), float32(1.5), float32(-0.333),
		"", "abc", "caf\xe9", "12:34:56", "-838:59:59", "12:34:56.5", "12:34:56.500", "12:34:56.123456", "12:34:56.1234567",
		"12:34:56.", "12:34:56.12a", "1.5:00", "2024-01-02", "2024-01-02 03:04:05", "2024-01-02 03:04:05.123",
		"2024-01-02 03:04:05.123456", "0000-00-00", []byte("bytes"), []byte{0xff, 0}, int64(15), int64(-2), int64(6),
		`{"a": [1, "\u00e9"]}`, []byte(`{"k": "v\n"}`), []byte("\xff"),
	}
	for i, c := range cols {
		for _, v := range values {
			want := string(appendColumn(nil, tbl, i, v))
			got := string(tf.appendColumn(nil, tbl, i, v))
			require.Equal(t, want, got, "column %d (%s unsigned=%v fsp=%d) value %T %v", i, c.DataType, c.Unsigned, c.FSP, v, v)
		}
	}
}
