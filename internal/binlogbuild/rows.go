package binlogbuild

import (
	"encoding/binary"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// ColumnType is a column's binlog type and Table_map metadata. Only the
// types the tests need are offered; each round-trips through go-mysql.
type ColumnType struct {
	code  byte
	meta  uint16
	elems []string // ENUM and SET members
}

// Column types.
var (
	// Int is INT (MYSQL_TYPE_LONG); row values are int32 (or int).
	Int = ColumnType{code: mysql.MYSQL_TYPE_LONG}
	// BigInt is BIGINT (MYSQL_TYPE_LONGLONG); row values are int64 (or int).
	BigInt = ColumnType{code: mysql.MYSQL_TYPE_LONGLONG}
	// TinyInt is TINYINT (MYSQL_TYPE_TINY); row values are int8 (or int).
	TinyInt = ColumnType{code: mysql.MYSQL_TYPE_TINY}
)

// Enum is ENUM(members...) with up to 255 members; row values are the
// 1-based member index (int).
func Enum(members ...string) ColumnType {
	return ColumnType{code: mysql.MYSQL_TYPE_STRING, meta: uint16(mysql.MYSQL_TYPE_ENUM)<<8 | 1, elems: members}
}

// Set is SET(members...) with up to 8 members; row values are the bitmask
// (int).
func Set(members ...string) ColumnType {
	return ColumnType{code: mysql.MYSQL_TYPE_STRING, meta: uint16(mysql.MYSQL_TYPE_SET)<<8 | 1, elems: members}
}

func (c ColumnType) realType() byte {
	if c.code == mysql.MYSQL_TYPE_STRING {
		return byte(c.meta >> 8)
	}
	return c.code
}

func (c ColumnType) numeric() bool {
	switch c.code {
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONGLONG:
		return true
	}
	return false
}

// Varchar is VARCHAR with a maximum of maxBytes bytes (the Table_map
// metadata; 256 or more switches values to a 2-byte length prefix, as
// VARCHAR(64) in utf8mb4 does). Row values are strings.
func Varchar(maxBytes int) ColumnType {
	return ColumnType{code: mysql.MYSQL_TYPE_VARCHAR, meta: uint16(maxBytes)}
}

// Column is one nullable table column.
type Column struct {
	Name string
	Type ColumnType
	// Unsigned is logged in the signedness metadata (MINIMAL, FULL).
	Unsigned bool
	// Collation of a VARCHAR column, logged in MINIMAL and FULL metadata
	// when set (0: none logged).
	Collation uint64
}

// Table is what a Table_map event describes. ID is the server's table id
// (6 bytes on the wire).
type Table struct {
	ID     uint64
	Schema string
	Name   string
	// Columns are all nullable; the Table_map carries their names (as with
	// binlog_row_metadata=FULL) so tests can check them, unless Metadata
	// says otherwise.
	Columns []Column
	// Metadata is the binlog_row_metadata the Table_map is written with.
	Metadata RowMetadata
	// PrimaryKey holds column indexes, logged with FULL metadata.
	PrimaryKey []int
}

// RowMetadata is a binlog_row_metadata mode: what a Table_map carries
// beyond column types.
type RowMetadata uint8

const (
	// MetadataFull: signedness and column names (the default here).
	MetadataFull RowMetadata = iota
	// MetadataMinimal: signedness only.
	MetadataMinimal
	// MetadataNoLog: nothing (MariaDB 10.11's default).
	MetadataNoLog
)

// Row is one row image: one value per column, nil for NULL.
type Row []any

// TableMapBody encodes t as a Table_map event body with 6-byte table id.
func TableMapBody(t Table) []byte {
	b := appendUint48(nil, t.ID)
	b = binary.LittleEndian.AppendUint16(b, 1) // TM_BIT_LEN_EXACT_F
	b = append(b, byte(len(t.Schema)))
	b = append(b, t.Schema...)
	b = append(b, 0, byte(len(t.Name)))
	b = append(b, t.Name...)
	b = append(b, 0)
	b = mysql.AppendLengthEncodedInteger(b, uint64(len(t.Columns)))
	var meta []byte
	for _, c := range t.Columns {
		b = append(b, c.Type.code)
		switch c.Type.code {
		case mysql.MYSQL_TYPE_VARCHAR:
			meta = binary.LittleEndian.AppendUint16(meta, c.Type.meta)
		case mysql.MYSQL_TYPE_STRING:
			meta = append(meta, byte(c.Type.meta>>8), byte(c.Type.meta))
		case mysql.MYSQL_TYPE_JSON:
			meta = append(meta, byte(c.Type.meta))
		}
	}
	b = mysql.AppendLengthEncodedInteger(b, uint64(len(meta)))
	b = append(b, meta...)
	b = append(b, allSet(len(t.Columns))...) // every column nullable

	// Optional metadata (TLV), in the order MySQL 8 writes it: signedness
	// of numeric columns, charsets of text columns, then (FULL) names,
	// SET and ENUM members and the primary key.
	if t.Metadata == MetadataNoLog {
		return b
	}
	var signed, names, charsets, sets, enums, pk []byte
	numeric, text, logCharsets := 0, 0, false
	for _, c := range t.Columns {
		if c.Type.numeric() {
			if numeric%8 == 0 {
				signed = append(signed, 0)
			}
			if c.Unsigned {
				signed[numeric/8] |= 0x80 >> (numeric % 8)
			}
			numeric++
		}
		if c.Type.code == mysql.MYSQL_TYPE_VARCHAR {
			if c.Collation != 0 {
				logCharsets = true
			}
			charsets = mysql.AppendLengthEncodedInteger(charsets, c.Collation)
			text++
		}
		names = mysql.AppendLengthEncodedInteger(names, uint64(len(c.Name)))
		names = append(names, c.Name...)
		switch c.Type.realType() {
		case mysql.MYSQL_TYPE_ENUM:
			enums = appendMembers(enums, c.Type.elems)
		case mysql.MYSQL_TYPE_SET:
			sets = appendMembers(sets, c.Type.elems)
		}
	}
	for _, i := range t.PrimaryKey {
		pk = mysql.AppendLengthEncodedInteger(pk, uint64(i))
	}
	b = appendTLV(b, replication.TABLE_MAP_OPT_META_SIGNEDNESS, signed)
	if logCharsets {
		b = appendTLV(b, replication.TABLE_MAP_OPT_META_COLUMN_CHARSET, charsets)
	}
	if t.Metadata == MetadataMinimal {
		return b
	}
	b = appendTLV(b, replication.TABLE_MAP_OPT_META_COLUMN_NAME, names)
	if sets != nil {
		b = appendTLV(b, replication.TABLE_MAP_OPT_META_SET_STR_VALUE, sets)
	}
	if enums != nil {
		b = appendTLV(b, replication.TABLE_MAP_OPT_META_ENUM_STR_VALUE, enums)
	}
	if pk != nil {
		b = appendTLV(b, replication.TABLE_MAP_OPT_META_SIMPLE_PRIMARY_KEY, pk)
	}
	return b
}

func appendMembers(b []byte, members []string) []byte {
	b = mysql.AppendLengthEncodedInteger(b, uint64(len(members)))
	for _, m := range members {
		b = mysql.AppendLengthEncodedInteger(b, uint64(len(m)))
		b = append(b, m...)
	}
	return b
}

func appendTLV(b []byte, typ byte, v []byte) []byte {
	b = append(b, typ)
	b = mysql.AppendLengthEncodedInteger(b, uint64(len(v)))
	return append(b, v...)
}

// RowsBody encodes a Rows event body. For UPDATE types rows alternate
// before, after. The v2 types get the 2-byte extra data length; the
// MariaDB compressed types get their rows compressed. A value Absent
// leaves its column out of the images of that side (before or after);
// a PARTIAL_UPDATE_ROWS_EVENT writes binlog_row_value_options
// PARTIAL_JSON in every after image that has a JSONDiffs value (logged as
// a diff), 0 in the others.
func RowsBody(typ replication.EventType, t Table, flags uint16, rows []Row) ([]byte, error) {
	b := appendUint48(nil, t.ID)
	b = binary.LittleEndian.AppendUint16(b, flags)
	if isRowsV2(typ) {
		b = binary.LittleEndian.AppendUint16(b, 2) // extra data: only its own length
	}
	b = mysql.AppendLengthEncodedInteger(b, uint64(len(t.Columns)))
	sides := 1
	if isUpdate(typ) {
		if len(rows)%2 != 0 {
			return nil, fmt.Errorf("binlogbuild: update of %s needs before/after pairs, got %d rows", t.Name, len(rows))
		}
		sides = 2
	}
	bitmaps := make([][]byte, sides)
	for s := range bitmaps {
		bitmaps[s] = allSet(len(t.Columns))
		if s < len(rows) {
			for i, v := range rows[s] {
				if v == Absent {
					bitmaps[s][i/8] &^= 1 << (i % 8)
				}
			}
		}
		b = append(b, bitmaps[s]...)
	}
	var data []byte
	for k, r := range rows {
		side := k % sides
		if typ == replication.PARTIAL_UPDATE_ROWS_EVENT && side == 1 {
			if bits, has := partialBits(t, r); has {
				data = append(data, 1) // binlog_row_value_options: PARTIAL_JSON
				data = append(data, bits...)
			} else {
				data = append(data, 0) // no partial JSON in this row: no bitmap
			}
		}
		var err error
		if data, err = appendRowImage(data, t, r, bitmaps[side]); err != nil {
			return nil, err
		}
	}
	if isCompressed(typ) {
		data = CompressMariaDB(data)
	}
	return append(b, data...), nil
}

// partialBits has a bit for every JSON column of the table, set where the
// after image logs a diff (MySQL's rpl_record.h); has says whether one is.
func partialBits(t Table, r Row) (bits []byte, has bool) {
	n := 0
	for i, c := range t.Columns {
		if c.Type.code != mysql.MYSQL_TYPE_JSON {
			continue
		}
		if n%8 == 0 {
			bits = append(bits, 0)
		}
		if i < len(r) {
			if _, ok := r[i].(JSONDiffs); ok {
				bits[n/8] |= 1 << (n % 8)
				has = true
			}
		}
		n++
	}
	return bits, has
}

func appendRowImage(b []byte, t Table, r Row, present []byte) ([]byte, error) {
	if len(r) != len(t.Columns) {
		return nil, fmt.Errorf("binlogbuild: row for %s has %d values, table has %d columns", t.Name, len(r), len(t.Columns))
	}
	var nulls []byte
	n := 0
	for i, v := range r {
		in := present[i/8]&(1<<(i%8)) != 0
		if in != (v != Absent) {
			return nil, fmt.Errorf("binlogbuild: %s.%s: Absent must be the same in every image of one side", t.Name, t.Columns[i].Name)
		}
		if !in {
			continue
		}
		if n%8 == 0 {
			nulls = append(nulls, 0)
		}
		if v == nil {
			nulls[n/8] |= 1 << (n % 8)
		}
		n++
	}
	b = append(b, nulls...)
	for i, v := range r {
		if v == nil || v == Absent {
			continue
		}
		c := t.Columns[i]
		switch c.Type.code {
		case mysql.MYSQL_TYPE_LONG:
			n, ok := asInt(v)
			if !ok || int64(int32(n)) != n {
				return nil, fmt.Errorf("binlogbuild: %s.%s: INT value %#v", t.Name, c.Name, v)
			}
			b = binary.LittleEndian.AppendUint32(b, uint32(n))
		case mysql.MYSQL_TYPE_LONGLONG:
			n, ok := asInt(v)
			if !ok {
				return nil, fmt.Errorf("binlogbuild: %s.%s: BIGINT value %#v", t.Name, c.Name, v)
			}
			b = binary.LittleEndian.AppendUint64(b, uint64(n))
		case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_STRING: // TINYINT, ENUM and SET of one byte
			n, ok := asInt(v)
			if !ok || n < -128 || n > 255 {
				return nil, fmt.Errorf("binlogbuild: %s.%s: one-byte value %#v", t.Name, c.Name, v)
			}
			b = append(b, byte(n))
		case mysql.MYSQL_TYPE_VARCHAR:
			s, ok := v.(string)
			if !ok || len(s) > int(c.Type.meta) {
				return nil, fmt.Errorf("binlogbuild: %s.%s: VARCHAR(%d) value %#v", t.Name, c.Name, c.Type.meta, v)
			}
			if c.Type.meta < 256 {
				b = append(b, byte(len(s)))
			} else {
				b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
			}
			b = append(b, s...)
		case mysql.MYSQL_TYPE_JSON:
			var doc []byte
			var err error
			switch v := v.(type) {
			case string:
				if doc, err = jsonBinary(v); err != nil {
					return nil, err
				}
				doc = append(binary.LittleEndian.AppendUint32(nil, uint32(len(doc))), doc...)
			case JSONRaw:
				doc = append(binary.LittleEndian.AppendUint32(nil, uint32(len(v))), v...)
			case JSONDiffs:
				if doc, err = v.binary(); err != nil {
					return nil, err
				}
			default:
				return nil, fmt.Errorf("binlogbuild: %s.%s: JSON value %#v", t.Name, c.Name, v)
			}
			b = append(b, doc...)
		default:
			return nil, fmt.Errorf("binlogbuild: %s.%s: unsupported column type %d", t.Name, c.Name, c.Type.code)
		}
	}
	return b, nil
}

func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int8:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}

func appendUint48(b []byte, v uint64) []byte {
	var x [8]byte
	binary.LittleEndian.PutUint64(x[:], v)
	return append(b, x[:6]...)
}

func allSet(n int) []byte {
	b := make([]byte, (n+7)/8)
	for i := range n {
		b[i/8] |= 1 << (i % 8)
	}
	return b
}

// RowsKind says what a Rows event does.
type RowsKind int

// Rows event kinds.
const (
	Insert RowsKind = iota
	Update
	Delete
	// PartialUpdate is MySQL 8's PARTIAL_UPDATE_ROWS_EVENT
	// (binlog_row_value_options=PARTIAL_JSON); MySQL flavor only.
	PartialUpdate
)

func (k RowsKind) String() string {
	return [...]string{"Write_rows", "Update_rows", "Delete_rows", "Partial_update_rows"}[k]
}

// pairs reports whether the kind's rows alternate before, after.
func (k RowsKind) pairs() bool { return k == Update || k == PartialUpdate }

// RowsEventType is the event type a flavor writes for kind: v2 (30-32) on
// MySQL 8, v1 (23-25) on MariaDB, MariaDB's compressed v1 (166-168) when
// compressed is set.
func RowsEventType(f Flavor, kind RowsKind, compressed bool) replication.EventType {
	switch {
	case kind == PartialUpdate:
		if f != MySQL {
			panic("binlogbuild: partial JSON updates are MySQL's")
		}
		return replication.PARTIAL_UPDATE_ROWS_EVENT
	case f == MariaDB && compressed:
		return replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1 + replication.EventType(kind)
	case f == MariaDB:
		return []replication.EventType{replication.WRITE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv1}[kind]
	default:
		return replication.WRITE_ROWS_EVENTv2 + replication.EventType(kind)
	}
}

// IsRowsEvent reports whether typ is one of the Rows event types the
// encoder writes.
func IsRowsEvent(typ replication.EventType) bool {
	switch typ {
	case replication.WRITE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv1,
		replication.WRITE_ROWS_EVENTv2, replication.UPDATE_ROWS_EVENTv2, replication.DELETE_ROWS_EVENTv2,
		replication.PARTIAL_UPDATE_ROWS_EVENT:
		return true
	}
	return isCompressed(typ)
}

func isRowsV2(typ replication.EventType) bool {
	return typ >= replication.WRITE_ROWS_EVENTv2 && typ <= replication.DELETE_ROWS_EVENTv2 ||
		typ == replication.PARTIAL_UPDATE_ROWS_EVENT
}

func isUpdate(typ replication.EventType) bool {
	return typ == replication.UPDATE_ROWS_EVENTv1 || typ == replication.UPDATE_ROWS_EVENTv2 ||
		typ == replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1 || typ == replication.PARTIAL_UPDATE_ROWS_EVENT
}

func isCompressed(typ replication.EventType) bool {
	return typ >= replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1 && typ <= replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1
}
