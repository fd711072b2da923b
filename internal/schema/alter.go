package schema

import (
	"fmt"
	"slices"
	"strings"

	"github.com/binlogstream/binlogstream/internal/charset"
	"github.com/binlogstream/binlogstream/internal/ddl"
	"github.com/pingcap/tidb/pkg/parser/ast"
	pmysql "github.com/pingcap/tidb/pkg/parser/mysql"
)

func (h *History) alterTable(db string, s *ast.AlterTableStmt, ch *Change) error {
	k := tableKeyOf(db, s.Table)
	ch.Touched = append(ch.Touched, k)
	old := h.Tables[k]
	if old == nil {
		if _, ok := h.Unknown[k]; !ok {
			h.Unknown[k] = "altered, but the schema before the ALTER is unknown"
		}
		// A rename still moves the (unknown) table.
		for _, sp := range s.Specs {
			if sp.Tp == ast.AlterTableRenameTable {
				to := tableKeyOf(db, sp.NewTable)
				h.move(k, to)
				ch.Touched = append(ch.Touched, to)
				k = to
			}
		}
		h.convertPartition(db, k, nil, ch)
		return nil
	}
	t := old.clone()
	switch {
	case h.notes.Versioning > 0 && !h.notes.Period:
		t.versioned = true
	case h.notes.Versioning < 0 && !t.versioned:
		// Declared row start and end columns, or none the history
		// knows of: which columns the DROP took is not proven.
		delete(h.Tables, k)
		h.Unknown[k] = "DROP SYSTEM VERSIONING of a table whose row start and end columns are declared: the columns dropped are not known"
		return nil
	case h.notes.Versioning < 0:
		t.versioned = false
	}
	// The table's default charset first: the statement's new columns
	// take it wherever its option stands; CONVERT TO converts every text
	// column last, those the statement declares with a charset too.
	convert, convertCharset, convertCollation, others := false, "", "", 0
	for _, sp := range s.Specs {
		if sp.Tp != ast.AlterTableOption {
			continue
		}
		afterConvert := false
		for _, o := range sp.Options {
			if o.Tp == ast.TableOptionEngine {
				t.engine = o.StrValue
			}
			if o.Tp != ast.TableOptionCharset && o.Tp != ast.TableOptionCollate {
				afterConvert = false
				continue
			}
			t.charset = CharsetOfOption(o.Tp == ast.TableOptionCharset, o.Tp == ast.TableOptionCollate, o.StrValue, "")
			t.collation = h.collationOfOption(o, "")
			switch {
			case o.UintValue == ast.TableOptionCharsetWithConvertTo:
				if convert {
					others++
				}
				convert, convertCharset, convertCollation, afterConvert = true, t.charset, t.collation, true
			case afterConvert && o.Tp == ast.TableOptionCollate:
				convertCollation, afterConvert = t.collation, false // CONVERT TO CHARACTER SET x COLLATE y
			default:
				others++
				afterConvert = false
			}
		}
	}
	if convert && others > 0 {
		// Which of them sets the table's default, and the charset of the
		// columns the statement defines, is the server's to settle.
		h.alterUnknown(db, k, s, ch, "CONVERT TO CHARACTER SET with another charset or collation in the same ALTER TABLE: the resulting charsets are not known")
		return nil
	}
	// DROP PRIMARY KEY drops the key the table had, wherever it stands:
	// the statement's own PRIMARY KEY stays.
	for _, sp := range s.Specs {
		if sp.Tp == ast.AlterTableDropPrimaryKey {
			t.pk = nil
		}
	}
	how, err := h.alterColumns(t, s.Specs, k)
	if why, ok := err.(notModelled); ok {
		h.alterUnknown(db, k, s, ch, string(why))
		return nil
	}
	if err != nil {
		return err
	}
	added := len(t.uniques) // the statement's own UNIQUE keys from here
	for _, sp := range s.Specs {
		switch sp.Tp {
		case ast.AlterTableDropIndex:
			if !t.dropIndex(sp.Name) {
				h.alterUnknown(db, k, s, ch, "DROP INDEX "+sp.Name+": the history cannot tell whether it was a long unique key (a hash in a hidden column)")
				return nil
			}
			added = min(added, len(t.uniques))
		case ast.AlterTableRenameIndex:
			if i := t.uniqueIndex(sp.FromKey.O); i >= 0 {
				t.uniques[i].name = sp.ToKey.O
			}
		}
	}
	for _, sp := range s.Specs {
		switch sp.Tp {
		case ast.AlterTableAddColumns, ast.AlterTableModifyColumn, ast.AlterTableChangeColumn:
			for _, cd := range sp.NewColumns {
				if u := columnUnique(cd); u != nil {
					t.addUnique(u)
				}
			}
		case ast.AlterTableAddConstraint:
			if sp.Constraint != nil && sp.Constraint.Tp == ast.ConstraintPrimaryKey {
				t.pk = constraintColumns(sp.Constraint)
			}
			if sp.Constraint != nil {
				u, ok := uniqueFromConstraint(sp.Constraint)
				if !ok {
					h.alterUnknown(db, k, s, ch, "a UNIQUE key on an expression, which may be a long unique key with a hidden column")
					return nil
				}
				if u != nil {
					t.addUnique(u)
				}
			}
		}
	}
	// Any ALTER TABLE but a rename decides anew which UNIQUE keys are
	// long unique keys, and forgets a USING HASH the key did not need
	// (MariaDB 10.11: ALTER TABLE t COMMENT 'x' turns a short one into a
	// B-tree).
	renameOnly := true
	for _, sp := range s.Specs {
		renameOnly = renameOnly && sp.Tp == ast.AlterTableRenameTable
		switch sp.Tp {
		case ast.AlterTablePartition:
			t.partitioned = t.partitioned || sp.Partition != nil
		case ast.AlterTableRemovePartitioning:
			t.partitioned = false
		}
	}
	for i := range t.uniques[:added] {
		t.uniques[i].using = ""
	}
	if !renameOnly && !t.keepsHashKeys() {
		h.alterUnknown(db, k, s, ch, notSureOfKeys)
		return nil
	}
	for _, sp := range s.Specs {
		switch sp.Tp {
		case ast.AlterTableRenameTable:
			to := tableKeyOf(db, sp.NewTable)
			delete(h.Tables, k)
			delete(h.Unknown, k)
			ch.Touched = append(ch.Touched, to)
			k = to
		}
	}
	if convert {
		t.convertTo(convertCharset, convertCollation, how)
	}
	if !renameOnly && !t.classifyAll(nil) {
		h.alterUnknown(db, k, s, ch, notSureOfKeys)
		return nil
	}
	delete(h.Unknown, k)
	h.Tables[k] = t
	h.convertPartition(db, k, t, ch)
	return nil
}

// convertPartition applies MariaDB's ALTER TABLE k CONVERT PARTITION p TO
// TABLE name (name is created with k's columns, t; unknown when t is
// nil) and CONVERT TABLE name TO PARTITION p (name is gone), which
// ddl.Parse noted.
func (h *History) convertPartition(db string, k ddl.Key, t *Table, ch *Change) {
	if h.notes.ConvertTo != "" {
		to := ddl.KeyOfName(db, h.notes.ConvertTo)
		ch.Touched = append(ch.Touched, to)
		delete(h.Tables, to)
		delete(h.Unknown, to)
		if t != nil {
			h.Tables[to] = t
		} else {
			h.Unknown[to] = "made from a partition of " + k.String() + ", whose schema is unknown"
		}
	}
	if h.notes.ConvertFrom != "" {
		from := ddl.KeyOfName(db, h.notes.ConvertFrom)
		ch.Touched = append(ch.Touched, from)
		delete(h.Tables, from)
		delete(h.Unknown, from)
	}
}

// notModelled is an ALTER TABLE the server runs in a way the history
// does not model: its table becomes unknown.
type notModelled string

func (e notModelled) Error() string { return string(e) }

// alterUnknown makes the table an ALTER TABLE alters (and renames)
// unknown, for why.
func (h *History) alterUnknown(db string, k ddl.Key, s *ast.AlterTableStmt, ch *Change, why string) {
	delete(h.Tables, k)
	for _, sp := range s.Specs {
		if sp.Tp == ast.AlterTableRenameTable {
			k = tableKeyOf(db, sp.NewTable)
			ch.Touched = append(ch.Touched, k)
		}
	}
	delete(h.Tables, k)
	h.Unknown[k] = why
}

// defined says whether an ALTER TABLE defines a column (ADD, CHANGE,
// MODIFY), and with the BINARY attribute alone (its charset's _bin
// collation, whatever charset a CONVERT TO gives it).
type defined uint8

const (
	notDefined defined = iota
	definedPlain
	definedBinary
)

func definedHow(cd *ast.ColumnDef) defined {
	if pmysql.HasBinaryFlag(cd.Tp.GetFlag()) && cd.Tp.GetCharset() == "" && !namesCollation(cd) {
		return definedBinary
	}
	return definedPlain
}

// alterColumns applies an ALTER TABLE's column changes to t as the server
// does. DROP, CHANGE, MODIFY and RENAME COLUMN name t's columns as they
// were before the statement (so CHANGE a b, CHANGE b a swaps two names),
// AFTER names them as they are after it. Columns keep their places unless
// FIRST or AFTER moves them; new ones go last, those placed in the
// statement's order.
func (h *History) alterColumns(t *Table, specs []*ast.AlterTableSpec, k ddl.Key) (how []defined, err error) {
	type def struct {
		col Column
		pk  bool
		how defined
		pos *ast.ColumnPosition // nil where it stays (a change) or goes last (an addition)
		// changes: it changes a column of the table; done: it is placed
		changes, done bool
	}
	var defs []*def
	gone := map[string]bool{}    // dropped, by lower-case name
	changes := map[string]*def{} // by the lower-case name of the column changed
	renames := map[string]string{}
	exists := func(name string) bool { return t.find(name) >= 0 }
	added := func(name string) bool {
		for _, d := range defs {
			if strings.EqualFold(d.col.Name, name) {
				return true
			}
		}
		return false
	}
	placed := func(p *ast.ColumnPosition) *ast.ColumnPosition {
		if p == nil || p.Tp == ast.ColumnPositionNone {
			return nil
		}
		return p
	}
	for _, sp := range specs {
		switch sp.Tp {
		case ast.AlterTableAddColumns:
			for i, cd := range sp.NewColumns {
				c, pk := h.column(cd, t)
				if sp.IfNotExists && (exists(c.Name) || added(c.Name)) {
					continue
				}
				d := &def{col: c, pk: pk, how: definedHow(cd)}
				if i == 0 { // ADD (a, b): in order at the end
					d.pos = placed(sp.Position)
				}
				defs = append(defs, d)
			}
		case ast.AlterTableDropColumn:
			name := sp.OldColumnName.Name.O
			if !exists(name) || gone[strings.ToLower(name)] {
				if sp.IfExists {
					continue
				}
				return nil, fmt.Errorf("DROP COLUMN %s: %s has no such column", name, k)
			}
			gone[strings.ToLower(name)] = true
		case ast.AlterTableModifyColumn, ast.AlterTableChangeColumn:
			oldName := sp.NewColumns[0].Name.Name.O
			if sp.Tp == ast.AlterTableChangeColumn {
				oldName = sp.OldColumnName.Name.O
			}
			if !exists(oldName) {
				if sp.IfExists {
					continue
				}
				return nil, fmt.Errorf("%s %s: %s has no such column", alterVerb(sp.Tp), oldName, k)
			}
			if changes[strings.ToLower(oldName)] != nil {
				return nil, notModelled("column " + oldName + " changed twice in one ALTER TABLE")
			}
			c, pk := h.column(sp.NewColumns[0], t)
			d := &def{col: c, pk: pk, how: definedHow(sp.NewColumns[0]), pos: placed(sp.Position)}
			changes[strings.ToLower(oldName)] = d
			defs = append(defs, d)
		case ast.AlterTableRenameColumn:
			if !exists(sp.OldColumnName.Name.O) {
				return nil, fmt.Errorf("RENAME COLUMN %s: %s has no such column", sp.OldColumnName.Name.O, k)
			}
			renames[strings.ToLower(sp.OldColumnName.Name.O)] = sp.NewColumnName.Name.O
		}
	}
	// Each column after the ALTER with the name a key part finds it by:
	// its name before, or its own when the statement adds it.
	type col struct {
		Column
		source string
		how    defined
	}
	var cols []col
	for _, c := range t.cols {
		l := strings.ToLower(c.Name)
		switch d, changed := changes[l]; {
		case gone[l]:
			if changed {
				// MariaDB reads some of these (when the change's new name
				// is also added), in ways not modelled here
				return nil, notModelled("column " + c.Name + " both dropped and changed in one ALTER TABLE")
			}
			continue
		case changed:
			// in place; one placed elsewhere moves below
			cols, d.done, d.changes = append(cols, col{d.col, c.Name, d.how}), d.pos == nil, true
			continue
		}
		source := c.Name
		if to, ok := renames[l]; ok {
			c.Name = to
		}
		cols = append(cols, col{c, source, notDefined})
	}
	index := func(name string) int {
		for i := range cols {
			if strings.EqualFold(cols[i].Name, name) {
				return i
			}
		}
		return -1
	}
	for _, d := range defs {
		if d.done {
			continue
		}
		c := col{d.col, d.col.Name, d.how}
		if d.changes {
			i := index(d.col.Name)
			c = cols[i]
			cols = slices.Delete(cols, i, i+1)
		}
		i := len(cols)
		switch {
		case d.pos == nil:
		case d.pos.Tp == ast.ColumnPositionFirst:
			i = 0
		default:
			if i = index(d.pos.RelativeColumn.Name.O); i < 0 {
				return nil, fmt.Errorf("AFTER %s: %s has no such column", d.pos.RelativeColumn.Name.O, k)
			}
			i++
		}
		cols = slices.Insert(cols, i, c)
	}
	// A column the statement names after one the table keeps as it is:
	// the server would have refused it, so the history is not the
	// server's. Other duplicates are a reading of the statement the
	// server does not share.
	kept := func(name string) bool {
		l := strings.ToLower(name)
		return exists(name) && !gone[l] && changes[l] == nil && renames[l] == ""
	}
	for old, d := range changes {
		if !strings.EqualFold(d.col.Name, old) && kept(d.col.Name) {
			return nil, fmt.Errorf("CHANGE %s %s: %s already has %s", old, d.col.Name, k, d.col.Name)
		}
	}
	for _, d := range defs {
		if !d.changes && kept(d.col.Name) {
			return nil, fmt.Errorf("ADD COLUMN %s: %s already has it", d.col.Name, k)
		}
	}
	for i := range cols {
		for _, c := range cols[:i] {
			if strings.EqualFold(c.Name, cols[i].Name) {
				return nil, notModelled("two columns named " + c.Name + " after the ALTER TABLE as the history reads it")
			}
		}
	}
	// A key part keeps the first column whose source is its column's
	// name; a part whose column is dropped, and not added again, goes.
	var pk []string
	for _, n := range t.pk {
		for _, c := range cols {
			if strings.EqualFold(c.source, n) {
				pk = append(pk, c.Name)
				break
			}
		}
	}
	for _, d := range defs {
		if d.pk {
			pk = []string{d.col.Name}
		}
	}
	// So do the UNIQUE keys' parts; a key whose columns are all dropped
	// goes.
	var uniques []uniqueKey
	for _, u := range t.uniques {
		var parts []keyPart
		for _, p := range u.parts {
			for _, c := range cols {
				if strings.EqualFold(c.source, p.col) {
					parts = append(parts, keyPart{c.Name, p.length})
					break
				}
			}
		}
		if len(parts) > 0 {
			u.parts = parts
			uniques = append(uniques, u)
		}
	}
	t.uniques = uniques
	t.cols, t.pk = t.cols[:0:0], pk
	for _, c := range cols {
		t.cols = append(t.cols, c.Column)
		how = append(how, c.how)
	}
	return how, nil
}

func alterVerb(tp ast.AlterTableType) string {
	if tp == ast.AlterTableChangeColumn {
		return "CHANGE COLUMN"
	}
	return "MODIFY COLUMN"
}

// convertTo applies CONVERT TO CHARACTER SET to every text column. A TEXT
// type grows to the next one that holds as many characters in the wider
// charset, as the server does, but for the columns the same statement
// defines (how, by index), which take the charset as declared.
func (t *Table) convertTo(cs, coll string, how []defined) {
	for i := range t.cols {
		c := &t.cols[i]
		if i < len(how) && how[i] != notDefined {
			if IsTextType(c.DataType) && c.Charset != "binary" || c.DataType == "json" {
				c.Charset, c.Collation = cs, coll
				if how[i] == definedBinary {
					c.Collation = charset.Normalize(cs) + "_bin"
				}
				widenVarchar(c)
				c.Type = FormatType(c)
			}
			continue
		}
		if c.DataType == "json" {
			// MariaDB's JSON is a LONGTEXT, which CONVERT TO converts
			// (MySQL's is not text: Merge gives it its charset back).
			c.Charset, c.Collation = cs, coll
			continue
		}
		if !IsTextType(c.DataType) || c.Charset == "binary" {
			continue
		}
		if oldW, newW := charset.Width(c.Charset), charset.Width(cs); oldW > 0 && newW > oldW {
			c.DataType = widerText(c.DataType, oldW, newW)
		}
		c.Charset, c.Collation = cs, coll
		widenVarchar(c)
		c.Type = FormatType(c)
	}
}

// textSizes are the TEXT types and the bytes each holds.
var textSizes = []struct {
	name  string
	bytes int64
}{{"tinytext", 255}, {"text", 65535}, {"mediumtext", 16777215}, {"longtext", 4294967295}}

func widerText(dt string, oldW, newW int) string {
	for i, ts := range textSizes {
		if ts.name != dt {
			continue
		}
		need := ts.bytes / int64(oldW) * int64(newW)
		for _, bigger := range textSizes[i:] {
			if bigger.bytes >= need {
				return bigger.name
			}
		}
		return "longtext"
	}
	return dt
}

func (t *Table) find(name string) int { return ColumnIndex(t.cols, name) }
