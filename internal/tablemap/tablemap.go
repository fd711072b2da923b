// Package tablemap reads what go-mysql leaves out or gets wrong in a
// Table_map event: MariaDB's COMPRESSED column types, whose metadata
// go-mysql does not parse, and the column charsets of a Table_map that
// has such a column.
package tablemap

import (
	"bytes"
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// MariaDB's COMPRESSED columns have binlog types of their own, which
// go-mysql does not know: a BLOB or TEXT column's is TypeBlobCompressed,
// a VARCHAR or VARBINARY column's TypeVarcharCompressed. Their Table_map
// metadata is a BLOB's (the length's size) and a VARCHAR's (its maximum
// bytes, the compression header's one included); their values are a
// BLOB's and a VARCHAR's, holding the stored form (a header byte,
// then the value, zlib-compressed or not).
const (
	TypeBlobCompressed    byte = 140
	TypeVarcharCompressed byte = 141
)

// HasCompressedColumns reports whether a Table_map has a COMPRESSED column.
func HasCompressedColumns(tm *replication.TableMapEvent) bool {
	return bytes.IndexByte(tm.ColumnType, TypeBlobCompressed) >= 0 || bytes.IndexByte(tm.ColumnType, TypeVarcharCompressed) >= 0
}

// FixCompressedMeta reads again the column metadata of a Table_map that
// has a COMPRESSED column, from its bytes (raw: header, body, checksum):
// go-mysql gives such a column no metadata and reads the next columns'
// from its bytes. It runs before the table's rows events are parsed.
// Bytes it cannot read leave tm as it is (its rows then fail to decode).
func FixCompressedMeta(tm *replication.TableMapEvent, raw []byte) {
	if !HasCompressedColumns(tm) {
		return
	}
	if meta, ok := tableMapMeta(raw, tm); ok {
		tm.ColumnMeta = meta
	}
}

// tableMapMeta decodes a Table_map's column metadata from its event bytes
// (a 6-byte table id, as every server since MySQL 5.1 writes), checked
// against the columns go-mysql read.
func tableMapMeta(raw []byte, tm *replication.TableMapEvent) ([]uint16, bool) {
	const idAndFlags = 8
	if len(raw) < replication.EventHeaderSize+idAndFlags+2 {
		return nil, false
	}
	b := raw[replication.EventHeaderSize+idAndFlags:]
	for range 2 { // schema and table: length, name, NUL
		if len(b) < 1 || len(b) < 2+int(b[0]) {
			return nil, false
		}
		b = b[2+int(b[0]):]
	}
	n, _, k := mysql.LengthEncodedInt(b)
	if k == 0 || n != tm.ColumnCount || len(b) < k+int(n) || !bytes.Equal(b[k:k+int(n)], tm.ColumnType) {
		return nil, false
	}
	b = b[k+int(n):]
	size, _, k := mysql.LengthEncodedInt(b)
	if k == 0 || uint64(len(b)-k) < size {
		return nil, false
	}
	data := b[k : k+int(size)]
	meta := make([]uint16, n)
	pos := 0
	for i, t := range tm.ColumnType {
		var w int
		switch t {
		case mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_NEWDECIMAL:
			w = 2 // big-endian: real type or precision first
		case mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_BIT, TypeVarcharCompressed:
			w = -2 // little-endian
		case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_DOUBLE, mysql.MYSQL_TYPE_FLOAT, mysql.MYSQL_TYPE_GEOMETRY,
			mysql.MYSQL_TYPE_VECTOR, mysql.MYSQL_TYPE_JSON, mysql.MYSQL_TYPE_TIME2, mysql.MYSQL_TYPE_DATETIME2,
			mysql.MYSQL_TYPE_TIMESTAMP2, TypeBlobCompressed:
			w = 1
		}
		switch {
		case w == 0:
		case pos+max(w, -w) > len(data):
			return nil, false
		case w == 1:
			meta[i] = uint16(data[pos])
		case w == 2:
			meta[i] = uint16(data[pos])<<8 | uint16(data[pos+1])
		default:
			meta[i] = binary.LittleEndian.Uint16(data[pos:])
		}
		pos += max(w, -w)
	}
	if pos != len(data) {
		return nil, false
	}
	return meta, true
}

// CollationMap is tm.CollationMap(), but for a Table_map with a COMPRESSED
// column: go-mysql does not count those among the character columns whose
// charsets MINIMAL and FULL metadata list, and gives the charsets after
// one to the wrong columns. BLOB and VARCHAR COMPRESSED count as BLOB and
// VARCHAR do (and, on MariaDB, geometry columns as go-mysql counts them).
func CollationMap(tm *replication.TableMapEvent, flavor string) map[int]uint64 {
	if !HasCompressedColumns(tm) {
		return tm.CollationMap()
	}
	character := func(i int) bool {
		switch t := tm.ColumnType[i]; t {
		case mysql.MYSQL_TYPE_STRING:
			real := byte(tm.ColumnMeta[i] >> 8)
			return real != mysql.MYSQL_TYPE_ENUM && real != mysql.MYSQL_TYPE_SET
		case mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_BLOB, TypeBlobCompressed, TypeVarcharCompressed:
			return true
		case mysql.MYSQL_TYPE_GEOMETRY:
			return flavor == mysql.MariaDBFlavor
		}
		return false
	}
	out := map[int]uint64{}
	switch {
	case len(tm.DefaultCharset) != 0:
		except := map[int]uint64{}
		for i := 1; i+1 < len(tm.DefaultCharset); i += 2 {
			except[int(tm.DefaultCharset[i])] = tm.DefaultCharset[i+1]
		}
		p := 0
		for i := range int(tm.ColumnCount) {
			if !character(i) {
				continue
			}
			out[i] = tm.DefaultCharset[0]
			if c, ok := except[p]; ok {
				out[i] = c
			}
			p++
		}
	case len(tm.ColumnCharset) != 0:
		p := 0
		for i := range int(tm.ColumnCount) {
			if character(i) && p < len(tm.ColumnCharset) {
				out[i] = tm.ColumnCharset[p]
				p++
			}
		}
	default:
		return nil
	}
	return out
}
