package schema

import (
	"strconv"
	"strings"

	"github.com/binlogstream/binlogstream/internal/charset"
	"github.com/binlogstream/binlogstream/internal/tablemap"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// PositionalColumns describes the columns from what any Table_map carries:
// types, metadata, nullability, and (MINIMAL, FULL) signedness, charsets,
// ENUM/SET members, the primary key.
func PositionalColumns(tm *replication.TableMapEvent, flavor string) []Column {
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
			c.Charset, c.Collation = charset.Names(flavor, id)
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

// IsGeometryType reports whether dt names a spatial type.
func IsGeometryType(dt string) bool {
	for _, g := range geometryTypes {
		if dt == g {
			return true
		}
	}
	return false
}

// FullMapColumns describes the exact columns and primary key (indexes in
// the columns) of a FULL-metadata Table_map. The declared type is what
// the binlog tells: its code, metadata and signedness (the character
// length of a text column needs its charset's width, which is known from
// the collation).
func FullMapColumns(tm *replication.TableMapEvent, flavor string) (cols []Column, pk []int) {
	cols = PositionalColumns(tm, flavor)
	for i := range cols {
		c := &cols[i]
		c.Name = string(tm.ColumnName[i])
		TypeFromBinlog(c, flavor)
	}
	for _, k := range tm.PrimaryKey {
		pk = append(pk, int(k))
	}
	return cols, pk
}

// TypeFromBinlog fills DataType, Length, Precision, Scale, FSP and Type
// from a column's binlog type, metadata and charset.
func TypeFromBinlog(c *Column, flavor string) {
	meta := c.BinlogMeta
	if name := plainTypeName(c.BinlogType); name != "" {
		c.DataType = name
		c.Type = FormatType(c)
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
		if !IsGeometryType(c.DataType) {
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
			c.DataType, c.Length = "varchar", charset.CharsFromBytes(int(meta), c.Charset)
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
				c.DataType, c.Length = "char", charset.CharsFromBytes(n, c.Charset)
			}
		}
	}
	c.Type = FormatType(c)
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

// FormatType renders the canonical declared type of c.
func FormatType(c *Column) string {
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
