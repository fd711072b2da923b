package binlogstream

import (
	"bytes"
	"slices"

	"github.com/binlogstream/binlogstream/internal/schema"
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

// TableChange is one table a DDL statement touched (Event.DDL).
type TableChange struct {
	Schema, Name string
	// Table is the table after the statement, its Columns the declared
	// ones (without MariaDB's implicit system-versioning columns and the
	// hidden columns of long unique keys); nil when the statement dropped
	// it or renamed it away, or when the history cannot prove its layout
	// (Unknown says why).
	Table *Table
	// Charset is the table's default charset, "" when not known.
	Charset string
	// Unknown says why the history cannot prove the table's layout, ""
	// when it can (or the table is gone).
	Unknown string
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
func (t *Table) Column(name string) int { return schema.ColumnIndex(t.Columns, name) }

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
