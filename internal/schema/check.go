package schema

import (
	"fmt"
	"strconv"

	"github.com/binlogstream/binlogstream/internal/charset"
	"github.com/binlogstream/binlogstream/internal/tablemap"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Merge checks a history table against the Table_map that describes the
// rows that follow it and returns the columns and primary key (indexes in
// the columns) of that version, or a diff saying how they disagree: names and
// declared types from the history, codes and nullability from the map,
// and signedness and charsets from the map where it logs them
// (binlog_row_metadata=MINIMAL), which must then agree with the history.
func Merge(h *Table, tm *replication.TableMapEvent, flavor string) (columns []Column, pk []int, diff string) {
	cols := h.RowCols()
	if int(tm.ColumnCount) != len(cols) {
		return nil, nil, fmt.Sprintf("the binlog has %d columns, the schema history %d (%s)", tm.ColumnCount, len(cols), columnList(cols))
	}
	columns = PositionalColumns(tm, flavor)
	for i := range columns {
		c, hc := &columns[i], &cols[i]
		if diff := checkColumn(hc, c.BinlogType, c.BinlogMeta); diff != "" {
			return nil, nil, fmt.Sprintf("column %d `%s` %s: %s", i+1, hc.Name, hc.Type, diff)
		}
		if len(tm.SignednessBitmap) > 0 && tm.IsNumericColumn(i) && c.Unsigned != hc.Unsigned {
			return nil, nil, fmt.Sprintf("column %d `%s` %s: the binlog says it is %s", i+1, hc.Name, hc.Type, signedness(c.Unsigned))
		}
		if c.Charset != "" && hc.Charset != "" && c.Charset != hc.Charset {
			return nil, nil, fmt.Sprintf("column %d `%s` %s: charset %s in the history, %s in the binlog", i+1, hc.Name, hc.Type, hc.Charset, c.Charset)
		}
		fromMap := *c
		*c = *hc
		c.BinlogType, c.BinlogMeta, c.Nullable = fromMap.BinlogType, fromMap.BinlogMeta, fromMap.Nullable
		if c.Charset == "" {
			c.Charset, c.Collation = fromMap.Charset, fromMap.Collation
		} else if c.Collation == "" && c.Charset == fromMap.Charset {
			c.Collation = fromMap.Collation // a default the history cannot know, MINIMAL and FULL log it
		}
		if c.Elems == nil {
			c.Elems = fromMap.Elems
		}
		if c.DataType == "json" && c.BinlogType == mysql.MYSQL_TYPE_JSON {
			c.Charset, c.Collation = "utf8mb4", "utf8mb4_bin" // MySQL's JSON: binary, text out in UTF-8
		}
	}
	for _, name := range h.RowPK() {
		if i := ColumnIndex(columns, name); i >= 0 {
			pk = append(pk, i)
		}
	}
	return columns, pk, ""
}

func signedness(unsigned bool) string {
	if unsigned {
		return "UNSIGNED"
	}
	return "signed"
}

func columnList(cols []Column) string {
	s := ""
	for i, c := range cols {
		if i > 0 {
			s += ", "
		}
		s += c.Name
	}
	return s
}

// checkColumn says how a Table_map column's type code and metadata differ
// from what the declared type is written as, "" when they agree. Only
// what the declared type fixes is compared: lengths of text columns need
// the charset's width and are skipped when it is unknown.
func checkColumn(c *Column, code byte, meta uint16) string {
	want := func(codes ...byte) string {
		for _, w := range codes {
			if code == w {
				return ""
			}
		}
		return "the binlog writes it as " + typeCodeName(code, meta)
	}
	switch c.DataType {
	case "tinyint", "bool", "boolean":
		return want(mysql.MYSQL_TYPE_TINY)
	case "smallint":
		return want(mysql.MYSQL_TYPE_SHORT)
	case "mediumint":
		return want(mysql.MYSQL_TYPE_INT24)
	case "int", "integer":
		return want(mysql.MYSQL_TYPE_LONG)
	case "bigint":
		return want(mysql.MYSQL_TYPE_LONGLONG)
	case "float":
		return want(mysql.MYSQL_TYPE_FLOAT)
	case "double", "real":
		return want(mysql.MYSQL_TYPE_DOUBLE)
	case "decimal", "numeric":
		if d := want(mysql.MYSQL_TYPE_NEWDECIMAL); d != "" {
			return d
		}
		if p, s := int(meta>>8), int(meta&0xff); p != c.Precision || s != c.Scale {
			return fmt.Sprintf("the binlog writes decimal(%d,%d)", p, s)
		}
	case "year":
		return want(mysql.MYSQL_TYPE_YEAR)
	case "date":
		return want(mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE)
	case "time":
		return temporal(c, code, meta, mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2)
	case "datetime":
		return temporal(c, code, meta, mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2)
	case "timestamp":
		return temporal(c, code, meta, mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2)
	case "bit":
		if d := want(mysql.MYSQL_TYPE_BIT); d != "" {
			return d
		}
		if n := int(meta>>8)*8 + int(meta&0xff); n != c.Length {
			return "the binlog writes bit(" + strconv.Itoa(n) + ")"
		}
	case "json":
		if code == mysql.MYSQL_TYPE_BLOB && meta == 4 { // MariaDB: JSON is LONGTEXT
			return ""
		}
		return want(mysql.MYSQL_TYPE_JSON)
	case "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
		return want(mysql.MYSQL_TYPE_GEOMETRY)
	case "enum", "set":
		real := mysql.MYSQL_TYPE_ENUM
		if c.DataType == "set" {
			real = mysql.MYSQL_TYPE_SET
		}
		if code != mysql.MYSQL_TYPE_STRING || byte(meta>>8) != real {
			return "the binlog writes it as " + typeCodeName(code, meta)
		}
		if c.Elems != nil {
			if n := enumSetPackLen(c.DataType, len(c.Elems)); int(meta&0xff) != n {
				return fmt.Sprintf("the binlog stores it in %d bytes, %d members take %d", meta&0xff, len(c.Elems), n)
			}
		}
	case "char", "binary":
		if code != mysql.MYSQL_TYPE_STRING || byte(meta>>8)|0x30 != mysql.MYSQL_TYPE_STRING {
			return "the binlog writes it as " + typeCodeName(code, meta)
		}
		if w := textWidth(c); w > 0 && stringFieldLength(meta) != c.Length*w {
			return fmt.Sprintf("the binlog stores up to %d bytes, the declared type %d", stringFieldLength(meta), c.Length*w)
		}
	case "varchar", "varbinary":
		if d := want(mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, tablemap.TypeVarcharCompressed); d != "" {
			return d
		}
		if code == tablemap.TypeVarcharCompressed {
			meta-- // the compression header's byte
		}
		if w := textWidth(c); w > 0 && int(meta) != c.Length*w {
			return fmt.Sprintf("the binlog stores up to %d bytes, the declared type %d", meta, c.Length*w)
		}
	case "tinytext", "tinyblob", "text", "blob", "mediumtext", "mediumblob", "longtext", "longblob":
		if d := want(mysql.MYSQL_TYPE_BLOB, tablemap.TypeBlobCompressed); d != "" {
			return d
		}
		if n := blobPackLenOf(c.DataType); int(meta) != n {
			return "the binlog writes it as " + blobName(int(meta), c.Charset == "binary")
		}
	case "uuid", "inet6", "inet4":
		return want(mysql.MYSQL_TYPE_STRING)
	}
	return ""
}

func temporal(c *Column, code byte, meta uint16, old, v2 byte) string {
	switch code {
	case old:
		return ""
	case v2:
		if int(meta) != c.FSP {
			return fmt.Sprintf("the binlog writes %d fractional digits", meta)
		}
		return ""
	}
	return "the binlog writes it as " + typeCodeName(code, meta)
}

// textWidth is the bytes per character of a text column, 1 for binary
// strings, 0 when unknown.
func textWidth(c *Column) int {
	switch c.DataType {
	case "binary", "varbinary":
		return 1
	}
	return charset.Width(c.Charset)
}

func enumSetPackLen(dt string, members int) int {
	if dt == "set" {
		return min((members+7)/8, 8)
	}
	if members < 256 {
		return 1
	}
	return 2
}

func blobPackLenOf(dt string) int {
	switch dt {
	case "tinytext", "tinyblob":
		return 1
	case "mediumtext", "mediumblob":
		return 3
	case "longtext", "longblob":
		return 4
	}
	return 2
}

// typeCodeName names a Table_map column type for messages.
func typeCodeName(code byte, meta uint16) string {
	c := Column{BinlogType: code, BinlogMeta: meta}
	TypeFromBinlog(&c, "")
	if c.DataType == "" {
		return "type code " + strconv.Itoa(int(code))
	}
	if c.DataType == "char" && c.Charset == "" {
		return "char/binary of " + strconv.Itoa(c.Length) + " bytes"
	}
	if c.DataType == "varchar" && c.Charset == "" {
		return "varchar/varbinary of " + strconv.Itoa(c.Length) + " bytes"
	}
	return c.Type
}
