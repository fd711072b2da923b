package binlogstream

import (
	lcharset "github.com/binlogstream/binlogstream/internal/charset"
	"github.com/binlogstream/binlogstream/internal/tablemap"

	"bytes"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// SchemaSource says where a Table's column names and declared types come
// from.
type SchemaSource uint8

const (
	// SchemaUnknown: no schema can be proven for the table at this
	// position (binlog_row_metadata NO_LOG or MINIMAL, and no schema
	// history covers it). Columns carry what the Table_map says (binlog
	// type, nullability, and signedness and charset under MINIMAL), but no
	// names; Table.Unknown says why. Row values stay positional.
	SchemaUnknown SchemaSource = iota
	// SchemaFromBinlog: the Table_map itself carried the column names
	// (binlog_row_metadata=FULL). Exact, no history needed.
	SchemaFromBinlog
	// SchemaFromHistory: the schema history (a proven information_schema
	// snapshot, or the CREATE statement in the binlog, advanced by every
	// DDL statement of the binlog since), checked against the Table_map.
	SchemaFromHistory
)

func (s SchemaSource) String() string {
	switch s {
	case SchemaFromBinlog:
		return "binlog"
	case SchemaFromHistory:
		return "history"
	}
	return "unknown"
}

// Table describes a table as of one binlog position. Every event of one
// table version shares one *Table; it is never modified, so listeners may
// keep it and compare pointers to notice a new version.
type Table struct {
	Schema string
	Name   string
	// Columns in the order of the row images (every column the table has,
	// generated and invisible ones included, as the server logs them).
	Columns []Column
	// PrimaryKey holds the indexes in Columns of the primary key's
	// columns, in key order; nil when the table has none or it is unknown.
	PrimaryKey []int
	// Source says where the names and declared types come from.
	Source SchemaSource
	// Unknown says why no schema could be proven (Source SchemaUnknown).
	Unknown string
}

// Column is one column of a Table.
type Column struct {
	// Name is "" when the table's Source is SchemaUnknown.
	Name string
	// Type is the declared type in a canonical lower-case form:
	// "int unsigned", "varchar(40)", "decimal(10,2)", "datetime(6)",
	// "enum('a','b')", "binary(16)", "bit(64)". Display widths are left
	// out. "" when unknown.
	Type string
	// DataType is Type's base name ("int", "varchar", "json", ...).
	DataType string
	Unsigned bool
	// Length is the declared length: characters for CHAR and VARCHAR,
	// bytes for BINARY and VARBINARY, bits for BIT; 0 where none applies.
	Length int
	// Precision and Scale of DECIMAL.
	Precision, Scale int
	// FSP is the fractional seconds digits of TIME, DATETIME, TIMESTAMP.
	FSP int
	// Charset and Collation of text columns ("" when unknown or not
	// text; "binary" for binary strings).
	Charset, Collation string
	// Elems are the members of ENUM and SET, when known.
	Elems []string
	// Nullable comes from the Table_map, so it is always known.
	Nullable bool
	// Generated is true for a generated (virtual or stored) column.
	Generated bool
	// BinlogType and BinlogMeta are what the Table_map says of the
	// column: its mysql.MYSQL_TYPE_* code and type metadata.
	BinlogType byte
	BinlogMeta uint16
}

// Known reports whether the column names are known (Source is not
// SchemaUnknown).
func (t *Table) Known() bool { return t != nil && t.Source != SchemaUnknown }

// ColumnNames returns the column names in row-image order.
func (t *Table) ColumnNames() []string {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	return names
}

// Column returns the index of the column named name (case-insensitive, as
// MySQL compares column names), or -1.
func (t *Table) Column(name string) int { return columnIndex(t.Columns, name) }

func columnIndex(cols []Column, name string) int {
	for i := range cols {
		if strings.EqualFold(cols[i].Name, name) {
			return i
		}
	}
	return -1
}

// fullName is `schema`.`table` for messages.
func (t *Table) fullName() string { return quoteName(t.Schema, t.Name) }

func quoteName(schema, table string) string {
	return "`" + schema + "`.`" + table + "`"
}

// hasNames reports whether a Table_map carries binlog_row_metadata=FULL
// column names for every column.
func hasNames(tm *replication.TableMapEvent) bool {
	return len(tm.ColumnName) == int(tm.ColumnCount) && tm.ColumnCount > 0
}

// positionalColumns describes the columns from what any Table_map carries:
// types, metadata, nullability, and (MINIMAL, FULL) signedness, charsets,
// ENUM/SET members, the primary key.
func positionalColumns(tm *replication.TableMapEvent, flavor string) []Column {
	cols := make([]Column, tm.ColumnCount)
	unsigned := tm.UnsignedMap()
	colls := tablemap.CollationMap(tm, flavor)
	if esc := tm.EnumSetCollationMap(); esc != nil {
		if colls == nil {
			colls = esc
		} else {
			for k, v := range esc {
				colls[k] = v
			}
		}
	}
	enums, sets, geoms := tm.EnumStrValueMap(), tm.SetStrValueMap(), tm.GeometryTypeMap()
	for i := range cols {
		c := &cols[i]
		c.BinlogType, c.BinlogMeta = tm.ColumnType[i], tm.ColumnMeta[i]
		_, c.Nullable = tm.Nullable(i)
		c.Unsigned = unsigned[i] && c.BinlogType != mysql.MYSQL_TYPE_YEAR // the server flags YEAR unsigned
		if id, ok := colls[i]; ok {
			c.Charset, c.Collation = lcharset.Names(flavor, id)
		}
		if e, ok := enums[i]; ok {
			c.Elems = e
		} else if s, ok := sets[i]; ok {
			c.Elems = s
		}
		if g, ok := geoms[i]; ok && g < uint64(len(geometryTypes)) {
			c.DataType = geometryTypes[g]
		}
	}
	return cols
}

// geometryTypes names the Table_map's geometry subtypes (MINIMAL, FULL).
var geometryTypes = [...]string{"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection"}

func isGeometryType(dt string) bool {
	for _, g := range geometryTypes {
		if dt == g {
			return true
		}
	}
	return false
}

// tableFromFullMap builds the exact Table of a FULL-metadata Table_map.
// The declared type is what the binlog tells: its code, metadata and
// signedness (the character length of a text column needs its charset's
// width, which is known from the collation).
func tableFromFullMap(tm *replication.TableMapEvent, flavor string) *Table {
	t := &Table{Schema: string(tm.Schema), Name: string(tm.Table), Source: SchemaFromBinlog}
	t.Columns = positionalColumns(tm, flavor)
	for i := range t.Columns {
		c := &t.Columns[i]
		c.Name = string(tm.ColumnName[i])
		typeFromBinlog(c, flavor)
	}
	for _, k := range tm.PrimaryKey {
		t.PrimaryKey = append(t.PrimaryKey, int(k))
	}
	return t
}

// typeFromBinlog fills DataType, Length, Precision, Scale, FSP and Type
// from a column's binlog type, metadata and charset.
func typeFromBinlog(c *Column, flavor string) {
	meta := c.BinlogMeta
	if name := plainTypeName(c.BinlogType); name != "" {
		c.DataType = name
		c.Type = formatType(c)
		return
	}
	switch c.BinlogType {
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		c.DataType, c.Precision, c.Scale = "decimal", int(meta>>8), int(meta&0xff)
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		c.DataType, c.FSP = "time", int(meta)
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2:
		c.DataType, c.FSP = "datetime", int(meta)
	case mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		c.DataType, c.FSP = "timestamp", int(meta)
	case mysql.MYSQL_TYPE_BIT:
		c.DataType, c.Length = "bit", int(meta>>8)*8+int(meta&0xff)
	case mysql.MYSQL_TYPE_JSON:
		c.DataType = "json"
	case mysql.MYSQL_TYPE_GEOMETRY:
		if !isGeometryType(c.DataType) {
			c.DataType = "geometry"
		}
	case mysql.MYSQL_TYPE_BLOB, tablemap.TypeBlobCompressed:
		binary := c.Charset == "binary"
		c.DataType = blobName(int(meta), binary)
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, tablemap.TypeVarcharCompressed:
		if c.BinlogType == tablemap.TypeVarcharCompressed {
			meta-- // the compression header's byte
		}
		if c.Charset == "binary" {
			c.DataType, c.Length = "varbinary", int(meta)
		} else {
			c.DataType, c.Length = "varchar", lcharset.CharsFromBytes(int(meta), c.Charset)
		}
	case mysql.MYSQL_TYPE_STRING:
		real := byte(meta >> 8)
		switch real {
		case mysql.MYSQL_TYPE_ENUM:
			c.DataType = "enum"
		case mysql.MYSQL_TYPE_SET:
			c.DataType = "set"
		default:
			n := stringFieldLength(meta)
			if c.Charset == "binary" {
				c.DataType, c.Length = "binary", n
			} else {
				c.DataType, c.Length = "char", lcharset.CharsFromBytes(n, c.Charset)
			}
		}
	}
	c.Type = formatType(c)
}

// plainTypeName names the types a code alone says all of (no length,
// precision or charset). The codes are MySQL's, which the binlog and the
// TiDB parser's field types share.
func plainTypeName(code byte) string {
	switch code {
	case mysql.MYSQL_TYPE_TINY:
		return "tinyint"
	case mysql.MYSQL_TYPE_SHORT:
		return "smallint"
	case mysql.MYSQL_TYPE_INT24:
		return "mediumint"
	case mysql.MYSQL_TYPE_LONG:
		return "int"
	case mysql.MYSQL_TYPE_LONGLONG:
		return "bigint"
	case mysql.MYSQL_TYPE_FLOAT:
		return "float"
	case mysql.MYSQL_TYPE_DOUBLE:
		return "double"
	case mysql.MYSQL_TYPE_YEAR:
		return "year"
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		return "date"
	}
	return ""
}

// stringFieldLength decodes a CHAR/BINARY column's byte length from its
// Table_map metadata (lengths past 255 borrow two bits of the real type).
func stringFieldLength(meta uint16) int {
	b0, b1 := int(meta>>8), int(meta&0xff)
	if b0&0x30 != 0x30 {
		return b1 | (((b0 & 0x30) ^ 0x30) << 4)
	}
	return b1
}

func blobName(packLen int, binary bool) string {
	names := [...]string{"", "tiny", "", "medium", "long"}
	prefix := ""
	if packLen >= 0 && packLen < len(names) {
		prefix = names[packLen]
	}
	if binary {
		return prefix + "blob"
	}
	return prefix + "text"
}

// formatType renders the canonical declared type of c.
func formatType(c *Column) string {
	var b strings.Builder
	b.WriteString(c.DataType)
	switch c.DataType {
	case "":
		return ""
	case "decimal":
		b.WriteString("(" + strconv.Itoa(c.Precision) + "," + strconv.Itoa(c.Scale) + ")")
	case "char", "varchar", "binary", "varbinary", "bit":
		b.WriteString("(" + strconv.Itoa(c.Length) + ")")
	case "time", "datetime", "timestamp":
		if c.FSP > 0 {
			b.WriteString("(" + strconv.Itoa(c.FSP) + ")")
		}
	case "enum", "set":
		if c.Elems != nil {
			b.WriteByte('(')
			for i, e := range c.Elems {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString("'" + strings.ReplaceAll(e, "'", "''") + "'")
			}
			b.WriteByte(')')
		}
	}
	if c.Unsigned {
		b.WriteString(" unsigned")
	}
	return b.String()
}

// sameTableMap compares the parts of two Table_maps a Table is built from,
// to reuse one *Table for every statement of one table version.
func sameTableMap(a, b *replication.TableMapEvent) bool {
	return a.ColumnCount == b.ColumnCount && bytes.Equal(a.Schema, b.Schema) && bytes.Equal(a.Table, b.Table) &&
		bytes.Equal(a.ColumnType, b.ColumnType) && slices.Equal(a.ColumnMeta, b.ColumnMeta) &&
		bytes.Equal(a.NullBitmap, b.NullBitmap) && bytes.Equal(a.SignednessBitmap, b.SignednessBitmap) &&
		slices.Equal(a.DefaultCharset, b.DefaultCharset) && slices.Equal(a.ColumnCharset, b.ColumnCharset) &&
		equalNames(a.ColumnName, b.ColumnName) && slices.Equal(a.PrimaryKey, b.PrimaryKey) &&
		equalStrValues(a.EnumStrValue, b.EnumStrValue) && equalStrValues(a.SetStrValue, b.SetStrValue) &&
		slices.Equal(a.EnumSetDefaultCharset, b.EnumSetDefaultCharset) && slices.Equal(a.EnumSetColumnCharset, b.EnumSetColumnCharset)
}

func equalNames(a, b [][]byte) bool { return slices.EqualFunc(a, b, bytes.Equal) }

func equalStrValues(a, b [][][]byte) bool { return slices.EqualFunc(a, b, equalNames) }
