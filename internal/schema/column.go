// Package schema is the schema history: the tables of the streamed
// databases as of one binlog position, advanced by each DDL statement of
// the binlog in order (History.Apply), and checked against the Table_map
// that describes a table's rows (Merge). It also describes a table's
// columns from a Table_map alone (PositionalColumns, FullMapColumns).
// Pure: no I/O.
package schema

import (
	"strings"
)

// Column is one column of a table: the root package's Column (see its
// documentation there for each field).
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
	// Nullable comes from the Table_map, so it is always known for a rows
	// event's table; a table of the history alone has it from its DDL
	// (NULL unless NOT NULL or PRIMARY KEY) or snapshot.
	Nullable bool
	// Generated is true for a generated (virtual or stored) column.
	Generated bool
	// BinlogType and BinlogMeta are what the Table_map says of the
	// column: its mysql.MYSQL_TYPE_* code and type metadata.
	BinlogType byte
	BinlogMeta uint16
}

// ColumnIndex returns the index of the column named name in cols
// (case-insensitive, as MySQL compares column names), or -1.
func ColumnIndex(cols []Column, name string) int {
	for i := range cols {
		if strings.EqualFold(cols[i].Name, name) {
			return i
		}
	}
	return -1
}
