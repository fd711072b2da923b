package binlogstream

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/require"
)

// compressedForm stores v as MariaDB stores a COMPRESSED column's value
// that compresses: the header (raw deflate when raw), the length in n
// big-endian bytes, the zlib stream.
func compressedForm(t *testing.T, v []byte, n int, raw bool) []byte {
	var z bytes.Buffer
	if raw {
		w, err := flate.NewWriter(&z, flate.BestCompression)
		require.NoError(t, err)
		w.Write(v)
		require.NoError(t, w.Close())
	} else {
		w := zlib.NewWriter(&z)
		w.Write(v)
		require.NoError(t, w.Close())
	}
	h := byte(0x80 | n)
	if raw {
		h |= 8
	}
	out := []byte{h}
	for k := n - 1; k >= 0; k-- {
		out = append(out, byte(len(v)>>(8*k)))
	}
	return append(out, z.Bytes()...)
}

func TestUncompressColumn(t *testing.T) {
	v := bytes.Repeat([]byte("abcé"), 300)
	for _, c := range []struct {
		stored []byte
		want   []byte
	}{
		{nil, nil},
		{[]byte{0}, []byte{}},
		{append([]byte{0}, "short"...), []byte("short")},
		{compressedForm(t, v, 2, true), v},
		{compressedForm(t, v, 2, false), v},
		{compressedForm(t, v, 4, true), v},
		{compressedForm(t, []byte("x"), 1, true), []byte("x")},
	} {
		got, err := uncompressColumn(c.stored, 1<<16)
		require.NoError(t, err)
		require.Equal(t, len(c.want), len(got))
		require.True(t, bytes.Equal(c.want, got))
	}
	good := compressedForm(t, v, 2, true)
	for name, stored := range map[string][]byte{
		"longer than the column":    good,
		"no length bytes":           {0x80},
		"length cut":                {0x82, 0x01},
		"an unknown algorithm":      append([]byte{0x92}, good[1:]...),
		"a stream cut":              good[:len(good)-3],
		"more data than its length": append(compressedForm(t, v, 2, false)[:3:3], append(compressedForm(t, append(v, 'z'), 2, false)[3:], 0)...),
		"garbage":                   {0x8a, 0x00, 0x10, 0xff, 0xff, 0xff},
	} {
		max := 1 << 16
		if name == "longer than the column" {
			max = len(v) - 1
		}
		_, err := uncompressColumn(stored, max)
		require.Error(t, err, name)
	}
}

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
	types := []byte{mysql.MYSQL_TYPE_LONG, typeBlobCompressed, typeVarcharCompressed, mysql.MYSQL_TYPE_STRING,
		mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_DATETIME2}
	meta := []byte{2, 0x2d, 0x01, 0xfe, 0x28, 10, 2, 0x90, 0x01, 6}
	raw := tableMapBytes(types, meta)
	tm := &replication.TableMapEvent{ColumnCount: uint64(len(types)), ColumnType: types, ColumnMeta: make([]uint16, len(types))}
	fixCompressedMeta(tm, raw)
	require.Equal(t, []uint16{0, 2, 0x12d, 0xfe28, 0x0a02, 0x190, 6}, tm.ColumnMeta)

	plain := &replication.TableMapEvent{ColumnCount: 1, ColumnType: []byte{mysql.MYSQL_TYPE_LONG}, ColumnMeta: []uint16{0}}
	fixCompressedMeta(plain, nil)
	require.Equal(t, []uint16{0}, plain.ColumnMeta)

	for name, bad := range map[string][]byte{
		"cut":                raw[:replication.EventHeaderSize+12],
		"other types":        tableMapBytes(append([]byte{mysql.MYSQL_TYPE_TINY}, types[1:]...), meta),
		"metadata too short": tableMapBytes(types, meta[:len(meta)-1]),
		"metadata too long":  tableMapBytes(types, append(meta, 0)),
	} {
		tm := &replication.TableMapEvent{ColumnCount: uint64(len(types)), ColumnType: types, ColumnMeta: make([]uint16, len(types))}
		fixCompressedMeta(tm, bad)
		require.Equal(t, make([]uint16, len(types)), tm.ColumnMeta, name)
	}
}

// TestCollationMapCompressed: the charsets of MINIMAL and FULL metadata
// go to the character columns, COMPRESSED ones among them.
func TestCollationMapCompressed(t *testing.T) {
	tm := &replication.TableMapEvent{ColumnCount: 5,
		ColumnType: []byte{mysql.MYSQL_TYPE_LONG, typeBlobCompressed, mysql.MYSQL_TYPE_STRING, typeVarcharCompressed, mysql.MYSQL_TYPE_VARCHAR},
		ColumnMeta: []uint16{0, 2, 0xfe08, 0x191, 40}}
	tm.DefaultCharset = []uint64{45, 1, 63, 2, 8} // default utf8mb4_general_ci; the 2nd character column binary, the 3rd latin1
	require.Equal(t, map[int]uint64{1: 45, 2: 63, 3: 8, 4: 45}, collationMap(tm, mysql.MariaDBFlavor))
	tm.DefaultCharset, tm.ColumnCharset = nil, []uint64{8, 63, 45, 33}
	require.Equal(t, map[int]uint64{1: 8, 2: 63, 3: 45, 4: 33}, collationMap(tm, mysql.MariaDBFlavor))
}
