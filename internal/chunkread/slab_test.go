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
