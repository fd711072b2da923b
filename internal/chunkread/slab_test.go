package chunkread

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/stretchr/testify/require"
)

// textRow is a text-protocol row packet of vals (nil: NULL).
func textRow(vals ...[]byte) mysql.RowData {
	var p []byte
	for _, v := range vals {
		if v == nil {
			p = append(p, 0xfb)
			continue
		}
		p = append(p, byte(len(v)))
		p = append(p, v...)
	}
	return p
}

// TestSlabRowNoAllocPerValue: a chunk row's values are boxed in the
// slab's own memory: reading rows allocates only a new slab now and
// then, never per value, and the values are what FieldRaw gives.
func TestSlabRowNoAllocPerValue(t *testing.T) {
	fields := []*mysql.Field{
		{Type: mysql.MYSQL_TYPE_LONGLONG, Charset: 63},
		{Type: mysql.MYSQL_TYPE_LONGLONG, Flag: mysql.UNSIGNED_FLAG, Charset: 63},
		{Type: mysql.MYSQL_TYPE_VAR_STRING, Charset: 45},
		{Type: mysql.MYSQL_TYPE_VAR_STRING, Charset: 63},
		{Type: mysql.MYSQL_TYPE_DOUBLE, Charset: 63},
		{Type: mysql.MYSQL_TYPE_FLOAT, Charset: 63},
		{Type: mysql.MYSQL_TYPE_NEWDECIMAL, Charset: 63},
		{Type: mysql.MYSQL_TYPE_BLOB, Charset: 63},
		{Type: mysql.MYSQL_TYPE_LONG, Charset: 63},
	}
	vals, err := textRow([]byte("-123456789"), []byte("18446744073709551615"), []byte("customer-1"), []byte{0, 1, 0xff},
		[]byte("2.5"), []byte("1.25"), []byte("12.3400"), []byte("blob"), nil).ParseText(fields, nil)
	require.NoError(t, err)

	var s slab
	row := s.row(vals, fields, 1, "fill")
	want := []any{int64(-123456789), uint64(18446744073709551615), "customer-1", []byte{0, 1, 0xff},
		2.5, float32(1.25), "12.3400", []byte("blob"), nil, "fill"}
	require.Equal(t, want, row)
	for j := range vals {
		require.Equal(t, FieldRaw(&vals[j], fields[j]), row[j], "column %d", j)
	}

	perRow := testing.AllocsPerRun(2000, func() { s.row(vals, fields, 1, "fill") })
	require.Less(t, perRow, 0.1, "allocations per row of %d values", len(vals))
	// Values boxed earlier keep theirs while later rows fill the slab.
	require.Equal(t, want, row)
}

// TestBinaryRowNoAllocPerValue: a binary-protocol row's values, temporal
// text included, are written into the slab with no allocation per
// value, in the forms the text protocol's row gives.
func TestBinaryRowNoAllocPerValue(t *testing.T) {
	fields := []*mysql.Field{
		{Type: mysql.MYSQL_TYPE_LONGLONG},
		{Type: mysql.MYSQL_TYPE_LONG, Flag: mysql.UNSIGNED_FLAG},
		{Type: mysql.MYSQL_TYPE_VAR_STRING, Charset: 63},
		{Type: mysql.MYSQL_TYPE_DOUBLE},
		{Type: mysql.MYSQL_TYPE_NEWDECIMAL, Charset: 63},
		{Type: mysql.MYSQL_TYPE_DATETIME, Decimal: 3},
		{Type: mysql.MYSQL_TYPE_DATE},
		{Type: mysql.MYSQL_TYPE_TIME, Decimal: 6},
		{Type: mysql.MYSQL_TYPE_LONG},
	}
	p := []byte{0, 0, 0b100}                                           // header; NULL bitmap, offset 2: the last column
	p = append(p, 0xf6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)      // -10
	p = append(p, 0xff, 0xff, 0xff, 0xff)                              // 4294967295
	p = append(p, 3, 'a', 0, 0xff)                                     // bytes
	p = append(p, 0, 0, 0, 0, 0, 0, 4, 0x40)                           // 2.5
	p = append(p, 5, '1', '.', '2', '5', '0')                          // DECIMAL text
	p = append(p, 11, 0xe8, 0x07, 2, 29, 23, 59, 58, 0x40, 0xe2, 1, 0) // 2024-02-29 23:59:58.123456
	p = append(p, 0)                                                   // 0000-00-00
	p = append(p, 8, 1, 2, 0, 0, 0, 3, 4, 5)                           // -51:04:05
	var s slab
	row, err := s.binaryRow(p, fields, 1, "fill")
	require.NoError(t, err)
	want := []any{int64(-10), uint64(4294967295), []byte{'a', 0, 0xff}, 2.5, "1.250",
		"2024-02-29 23:59:58.123", "0000-00-00", "-51:04:05.000000", nil, "fill"}
	require.Equal(t, want, row)

	perRow := testing.AllocsPerRun(2000, func() { _, _ = s.binaryRow(p, fields, 1, "fill") })
	require.Less(t, perRow, 0.1, "allocations per row of %d values", len(fields))
	require.Equal(t, want, row)
}
