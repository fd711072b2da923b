package tablemap

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/require"
)

// tableMapBytes is a Table_map event's bytes (header, body, checksum) for
// columns of types with metadata meta.
func tableMapBytes(types []byte, meta []byte) []byte {
	b := make([]byte, replication.EventHeaderSize)
	b = append(b, 7, 0, 0, 0, 0, 0, 1, 0) // table id, flags
	b = append(b, 1, 'd', 0, 1, 't', 0)
	b = append(b, byte(len(types)))
	b = append(b, types...)
	b = append(b, byte(len(meta)))
	b = append(b, meta...)
	b = append(b, make([]byte, (len(types)+7)/8)...) // null bitmap
	return append(b, 0, 0, 0, 0)
}

// TestFixCompressedMeta: a Table_map with COMPRESSED columns gets each
// column's metadata from its bytes; one without is left alone, and bytes
// that do not agree with go-mysql's columns change nothing.
func TestFixCompressedMeta(t *testing.T) {
	types := []byte{mysql.MYSQL_TYPE_LONG, TypeBlobCompressed, TypeVarcharCompressed, mysql.MYSQL_TYPE_STRING,
		mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_DATETIME2}
	meta := []byte{2, 0x2d, 0x01, 0xfe, 0x28, 10, 2, 0x90, 0x01, 6}
	raw := tableMapBytes(types, meta)
	tm := &replication.TableMapEvent{ColumnCount: uint64(len(types)), ColumnType: types, ColumnMeta: make([]uint16, len(types))}
	FixCompressedMeta(tm, raw)
	require.Equal(t, []uint16{0, 2, 0x12d, 0xfe28, 0x0a02, 0x190, 6}, tm.ColumnMeta)

	plain := &replication.TableMapEvent{ColumnCount: 1, ColumnType: []byte{mysql.MYSQL_TYPE_LONG}, ColumnMeta: []uint16{0}}
	FixCompressedMeta(plain, nil)
	require.Equal(t, []uint16{0}, plain.ColumnMeta)

	for name, bad := range map[string][]byte{
		"cut":                raw[:replication.EventHeaderSize+12],
		"other types":        tableMapBytes(append([]byte{mysql.MYSQL_TYPE_TINY}, types[1:]...), meta),
		"metadata too short": tableMapBytes(types, meta[:len(meta)-1]),
		"metadata too long":  tableMapBytes(types, append(meta, 0)),
	} {
		tm := &replication.TableMapEvent{ColumnCount: uint64(len(types)), ColumnType: types, ColumnMeta: make([]uint16, len(types))}
		FixCompressedMeta(tm, bad)
		require.Equal(t, make([]uint16, len(types)), tm.ColumnMeta, name)
	}
}

// TestCollationMapCompressed: the charsets of MINIMAL and FULL metadata
// go to the character columns, COMPRESSED ones among them.
func TestCollationMapCompressed(t *testing.T) {
	tm := &replication.TableMapEvent{ColumnCount: 5,
		ColumnType: []byte{mysql.MYSQL_TYPE_LONG, TypeBlobCompressed, mysql.MYSQL_TYPE_STRING, TypeVarcharCompressed, mysql.MYSQL_TYPE_VARCHAR},
		ColumnMeta: []uint16{0, 2, 0xfe08, 0x191, 40}}
	tm.DefaultCharset = []uint64{45, 1, 63, 2, 8} // default utf8mb4_general_ci; the 2nd character column binary, the 3rd latin1
	require.Equal(t, map[int]uint64{1: 45, 2: 63, 3: 8, 4: 45}, CollationMap(tm, mysql.MariaDBFlavor))
	tm.DefaultCharset, tm.ColumnCharset = nil, []uint64{8, 63, 45, 33}
	require.Equal(t, map[int]uint64{1: 8, 2: 63, 3: 45, 4: 33}, CollationMap(tm, mysql.MariaDBFlavor))
}
