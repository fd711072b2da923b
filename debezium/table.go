package debezium

import (
	"strconv"
	"strings"

	"github.com/binlogstream/binlogstream"
)

// A schema change's table, as Debezium's MySQL connector describes the
// table a DDL statement leaves (its io.debezium.connector.schema.Table):
// the default charset, the primary key's column names and each column's
// name, JDBC type, type name, charset, length, scale, position and flags.

// droppedTable is a DROP's table.
const droppedTable = `{"defaultCharsetName":null,"primaryKeyColumnNames":[],"columns":[],"comment":null}`

// changed is the table of ddl named db.name, nil when none.
func changed(ddl []binlogstream.TableChange, db, name string) *binlogstream.TableChange {
	for i := range ddl {
		if strings.EqualFold(ddl[i].Schema, db) && strings.EqualFold(ddl[i].Name, name) {
			return &ddl[i]
		}
	}
	return nil
}

// appendTable writes tc's table.
func appendTable(b []byte, tc *binlogstream.TableChange) []byte {
	t := tc.Table
	b = append(b, `{"defaultCharsetName":`...)
	b = appendOptString(b, tc.Charset)
	b = append(b, `,"primaryKeyColumnNames":[`...)
	for n, k := range t.PrimaryKey {
		if n > 0 {
			b = append(b, ',')
		}
		b = appendString(b, t.Columns[k].Name)
	}
	b = append(b, `],"columns":[`...)
	for i := range t.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTableColumn(b, &t.Columns[i], i+1)
	}
	return append(b, `],"comment":null}`...)
}

// appendTableColumn writes column c at position pos (from 1).
func appendTableColumn(b []byte, c *binlogstream.Column, pos int) []byte {
	name := strings.ToUpper(c.DataType)
	if c.Unsigned && numeric(c.DataType) {
		name += " UNSIGNED"
	}
	b = append(b, `{"name":`...)
	b = appendString(b, c.Name)
	b = append(b, `,"jdbcType":`...)
	b = strconv.AppendInt(b, int64(jdbcType(c)), 10)
	b = append(b, `,"nativeType":null,"typeName":`...)
	b = appendString(b, name)
	b = append(b, `,"typeExpression":`...)
	b = appendString(b, name)
	b = append(b, `,"charsetName":`...)
	cs := ""
	if textual(c.DataType) {
		cs = c.Charset
	}
	b = appendOptString(b, cs)
	length, scale := -1, -1
	switch c.DataType {
	case "char", "varchar", "binary", "varbinary", "bit":
		length = c.Length
	case "decimal":
		length, scale = c.Precision, c.Scale
	case "time", "datetime", "timestamp":
		if c.FSP > 0 {
			length = c.FSP
		}
	}
	b = append(b, `,"length":`...)
	b = appendOptInt(b, length)
	b = append(b, `,"scale":`...)
	b = appendOptInt(b, scale)
	b = append(b, `,"position":`...)
	b = strconv.AppendInt(b, int64(pos), 10)
	b = append(b, `,"optional":`...)
	b = strconv.AppendBool(b, c.Nullable)
	// The schema history does not keep AUTO_INCREMENT.
	b = append(b, `,"autoIncremented":false,"generated":`...)
	b = strconv.AppendBool(b, c.Generated)
	b = append(b, `,"comment":null,"defaultValueExpression":null,"enumValues":`...)
	if (c.DataType == "enum" || c.DataType == "set") && len(c.Elems) > 0 {
		b = append(b, '[')
		for i, e := range c.Elems {
			if i > 0 {
				b = append(b, ',')
			}
			// As the DDL writes a member: quoted, a quote doubled.
			b = appendString(b, "'"+strings.ReplaceAll(e, "'", "''")+"'")
		}
		b = append(b, ']')
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

func appendOptString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

func appendOptInt(b []byte, n int) []byte {
	if n < 0 {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(n), 10)
}

func numeric(dataType string) bool {
	switch dataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "float", "double", "decimal":
		return true
	}
	return false
}

// textual: the column has a character set (Debezium's charsetName).
func textual(dataType string) bool {
	switch dataType {
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set":
		return true
	}
	return false
}

// java.sql.Types codes, as Debezium's MySQL DDL parser gives each type.
const (
	jdbcBit         = -7
	jdbcBigint      = -5
	jdbcVarbinary   = -3
	jdbcBinary      = -2
	jdbcChar        = 1
	jdbcDecimal     = 3
	jdbcInteger     = 4
	jdbcSmallint    = 5
	jdbcFloat       = 6
	jdbcDouble      = 8
	jdbcVarchar     = 12
	jdbcDate        = 91
	jdbcTime        = 92
	jdbcTimestamp   = 93
	jdbcOther       = 1111
	jdbcBlob        = 2004
	jdbcTimestampTZ = 2014
)

func jdbcType(c *binlogstream.Column) int {
	switch c.DataType {
	case "tinyint", "smallint":
		return jdbcSmallint
	case "mediumint", "int", "year":
		return jdbcInteger
	case "bigint":
		return jdbcBigint
	case "float":
		return jdbcFloat
	case "double":
		return jdbcDouble
	case "decimal":
		return jdbcDecimal
	case "bit":
		return jdbcBit
	case "char", "enum", "set":
		return jdbcChar
	case "varchar", "tinytext", "text", "mediumtext", "longtext":
		return jdbcVarchar
	case "binary":
		return jdbcBinary
	case "varbinary":
		return jdbcVarbinary
	case "tinyblob", "blob", "mediumblob", "longblob":
		return jdbcBlob
	case "date":
		return jdbcDate
	case "time":
		return jdbcTime
	case "datetime":
		return jdbcTimestamp
	case "timestamp":
		return jdbcTimestampTZ
	}
	return jdbcOther // JSON, the spatial types, MariaDB's UUID and INET types
}
