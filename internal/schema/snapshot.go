package schema

import "slices"

// FromSnapshot is a table as an information_schema snapshot describes
// it: its columns (information_schema.COLUMNS, without a system-versioned
// table's implicit row_start and row_end), primary key column names,
// default charset, whether it is system-versioned, its engine and whether
// it is partitioned. The columns' Type is rendered again (FormatType);
// a system-versioned primary key's trailing row_end is dropped, since
// RowPK adds it. AddUniqueKey adds its UNIQUE keys.
func FromSnapshot(cols []Column, pk []string, charset string, versioned bool, engine string, partitioned bool) *Table {
	t := &Table{cols: slices.Clone(cols), pk: pk, charset: charset, versioned: versioned, engine: engine, partitioned: partitioned}
	if t.versioned && len(t.pk) > 1 && t.pk[len(t.pk)-1] == implicitRowEnd.Name {
		t.pk = t.pk[:len(t.pk)-1]
	}
	for i := range t.cols {
		t.cols[i].Type = FormatType(&t.cols[i])
	}
	return t
}

// AddUniqueKey adds to a table FromSnapshot made a UNIQUE key as the
// snapshot read it: its name, columns, the prefix length of each column
// (0 or missing: the whole column) and whether it is a long unique key
// (a hash in a hidden column at the end of every row image).
func (t *Table) AddUniqueKey(name string, cols []string, subParts []int, hash bool) {
	u := uniqueKey{name: name, hash: hash}
	for i, c := range cols {
		p := keyPart{col: c}
		if i < len(subParts) {
			p.length = subParts[i]
		}
		u.parts = append(u.parts, p)
	}
	t.uniques = append(t.uniques, u)
}

// Columns are the table's declared columns, without the implicit and
// hidden ones RowCols adds. The caller must not modify them.
func (t *Table) Columns() []Column { return t.cols }

// Charset is the table's default charset ("" when not known).
func (t *Table) Charset() string { return t.charset }

// Versioned reports whether the table has MariaDB system versioning with
// implicit row_start and row_end columns.
func (t *Table) Versioned() bool { return t.versioned }
