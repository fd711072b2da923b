package binlogstream

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValueConversions(t *testing.T) {
	tbl := &Table{Source: SchemaFromHistory, Columns: []Column{
		{Name: "tu", DataType: "tinyint", Unsigned: true},
		{Name: "mu", DataType: "mediumint", Unsigned: true},
		{Name: "iu", DataType: "int", Unsigned: true},
		{Name: "bu", DataType: "bigint", Unsigned: true},
		{Name: "i", DataType: "int"},
		{Name: "b64", DataType: "bit", Length: 64},
		{Name: "bn", DataType: "binary", Length: 8},
		{Name: "l1", DataType: "varchar", Charset: "latin1"},
		{Name: "u16", DataType: "varchar", Charset: "utf16"},
		{Name: "u16le", DataType: "varchar", Charset: "utf16le"},
		{Name: "u32", DataType: "char", Charset: "utf32"},
		{Name: "en", DataType: "enum", Elems: []string{"a", "b"}},
		{Name: "st", DataType: "set", Elems: []string{"x", "y", "z"}},
		{Name: "t3", DataType: "time", FSP: 3},
		{Name: "d6", DataType: "datetime", FSP: 6},
		{Name: "uu", DataType: "uuid"},
		{Name: "i6", DataType: "inet6"},
		{Name: "i4", DataType: "inet4"},
		{Name: "g", DataType: "point"},
		{Name: "x", DataType: "weird"},
		{Name: "enx", DataType: "enum"},
		{Name: "stx", DataType: "set"},
	}}
	col := func(name string) int { return tbl.Column(name) }
	cases := []struct {
		col  string
		raw  any
		want any
	}{
		{"tu", int8(-1), uint64(255)},
		{"tu", uint8(255), uint64(255)},
		{"mu", int32(-1), uint64(16777215)},
		{"iu", int32(-1), uint64(4294967295)},
		{"iu", int32(-2147483648), uint64(2147483648)},
		{"bu", int64(-1), uint64(18446744073709551615)},
		{"i", int32(-5), int64(-5)},
		{"b64", int64(-1), uint64(18446744073709551615)},
		{"b64", int64(-9223372036854775808), uint64(9223372036854775808)},
		{"bn", "ab", []byte{'a', 'b', 0, 0, 0, 0, 0, 0}},
		{"bn", "", make([]byte, 8)},
		{"l1", "\xc3\xa9", "Ã©"},
		{"l1", "\x80\x81", "€\u0081"},
		{"u16", "\x6f\x22", "漢"},
		{"u16", "\x00A\x00B", "AB"},
		{"u16le", "A\x00B\x00", "AB"},
		{"u32", "\x00\x00\x00A", "A"},
		{"en", int64(2), "b"},
		{"en", int64(0), ""},
		{"st", int64(5), "x,z"},
		{"st", int64(0), ""},
		{"t3", "-838:59:59", "-838:59:59.000"},
		{"t3", "12:00:00.5", "12:00:00.500"},
		{"d6", "2024-01-02 03:04:05.000000", "2024-01-02 03:04:05.000000"},
		{"d6", "0000-00-00 00:00:00", "0000-00-00 00:00:00.000000"},
		{"uu", "", "00000000-0000-0000-0000-000000000000"},
		{"i6", "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\x0a\x00\x00\x01", "::ffff:10.0.0.1"},
		{"i6", "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01", "::1"},
		{"i4", "\x0a\x00\x00\x01", "10.0.0.1"},
		{"g", []byte{0xE6, 0x10, 0, 0, 1, 1, 0, 0, 0}, Geometry{SRID: 4326, WKB: []byte{1, 1, 0, 0, 0}}},
		{"x", int32(7), int64(7)},
		{"i", nil, nil},
		// Members unknown: the index and the bitmask, as uint64.
		{"enx", int64(2), uint64(2)},
		{"stx", int64(5), uint64(5)},
		{"stx", int64(-9223372036854775808), uint64(9223372036854775808)},
		{"stx", "odd", "odd"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, tbl.Value(col(c.col), c.raw), "%s %#v", c.col, c.raw)
	}
	assert.Equal(t, RawText{Charset: "armscii8", Bytes: []byte("a")}, (&Table{Columns: []Column{{DataType: "char", Charset: "armscii8"}}}).Value(0, "a"))
}
