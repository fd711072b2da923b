package tailline

import "github.com/binlogstream/binlogstream"

// AppendKey appends the primary key of row, a row image of tbl, as a JSON
// object of its columns by name, each written as a row line writes it;
// nil (appends nothing and reports false) when the table has no known
// primary key or row is not a full image of it.
func AppendKey(b []byte, tbl *binlogstream.Table, row []any) ([]byte, bool) {
	if !tbl.Known() || len(tbl.PrimaryKey) == 0 || len(tbl.Columns) != len(row) {
		return b, false
	}
	b = append(b, '{')
	for j, i := range tbl.PrimaryKey {
		if j > 0 {
			b = append(b, ',')
		}
		b = append(appendString(b, tbl.Columns[i].Name), ':')
		b = appendColumn(b, tbl, i, row[i])
	}
	return append(b, '}'), true
}

// AppendValue appends v, a column's value as Table.Value gives it, as a
// row line writes it.
func AppendValue(b []byte, v any) []byte { return appendValue(b, v) }
