package schema

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/binlogstream/binlogstream/internal/charset"
	"github.com/binlogstream/binlogstream/internal/ddl"
	"github.com/pingcap/tidb/pkg/parser/ast"
	tidbcharset "github.com/pingcap/tidb/pkg/parser/charset"
	pmysql "github.com/pingcap/tidb/pkg/parser/mysql"
)

// Table is one table version the history knows: its columns (names,
// declared types, charsets; not the Table_map's codes) and primary key.
type Table struct {
	cols    []Column
	pk      []string // primary key column names, in key order
	charset string   // table default charset
	// collation is the table's default collation when a COLLATE names
	// it ("" when the charset's default, which the server decides).
	collation string
	// versioned: MariaDB system versioning with implicit row start and
	// end columns, which follow cols in every row image (and are in no
	// information_schema.COLUMNS).
	versioned bool
	// uniques are the UNIQUE keys; a long unique key's hidden hash
	// column ends every row image (see keys.go). engine is the
	// ENGINE the DDL named ("" for the server's default).
	uniques []uniqueKey
	engine  string
	// partitioned: PARTITION BY. A hash key a B-tree could not replace
	// (a B-tree UNIQUE key must hold the partitioning columns) stays one
	// through ALTER TABLE; the history does not model that rule.
	partitioned bool
}

// RowCols are the columns of the table's row images: cols, then the
// implicit row_start and row_end of a system-versioned table, then the
// hidden hash columns of its long unique keys.
func (t *Table) RowCols() []Column {
	n := t.HashKeys()
	if !t.versioned && n == 0 {
		return t.cols
	}
	cols := slices.Clone(t.cols)
	if t.versioned {
		cols = append(cols, implicitRowStart, implicitRowEnd)
	}
	for i := range n {
		cols = append(cols, HashColumn(i+1))
	}
	return cols
}

// clone is a copy of t that changes leave t as it is.
func (t *Table) clone() *Table {
	c := *t
	c.cols = slices.Clone(t.cols)
	c.uniques = slices.Clone(t.uniques)
	for i := range c.uniques {
		c.uniques[i].parts = slices.Clone(c.uniques[i].parts)
	}
	return &c
}

// RowPK is the table's primary key as the server has it: a
// system-versioned table's ends with its implicit row_end (each version
// of a row is one row).
func (t *Table) RowPK() []string {
	if !t.versioned || len(t.pk) == 0 {
		return t.pk
	}
	return append(slices.Clone(t.pk), implicitRowEnd.Name)
}

// The implicit columns of MariaDB's WITH SYSTEM VERSIONING.
var (
	implicitRowStart = Column{Name: "row_start", Type: "timestamp(6)", DataType: "timestamp", FSP: 6, Generated: true}
	implicitRowEnd   = Column{Name: "row_end", Type: "timestamp(6)", DataType: "timestamp", FSP: 6, Generated: true}
)

// History is the schema as of one binlog position. Its tables are
// immutable and replaced on change, so a copy of the maps is a copy of
// the history.
type History struct {
	// Tables holds the tables whose layout the history knows.
	Tables map[ddl.Key]*Table
	// Unknown holds tables whose layout the history cannot prove, with
	// the reason (an unparsable DDL, a CREATE ... SELECT, a LIKE of an
	// unknown table).
	Unknown map[ddl.Key]string
	// DBs holds the databases known to exist, with their default charset
	// ("" when unknown).
	DBs map[string]string
	// ServerCharset is character_set_server, the default of a CREATE
	// DATABASE without one.
	ServerCharset string
	// sqlMode is what the statement ApplyLogged applies ran under, the
	// flags of it that change how it reads (ddl.ParserModes); errorCode
	// the error the server logged it with (0: it succeeded).
	sqlMode   pmysql.SQLMode
	errorCode uint16
	// Version is a counter the caller bumps on every change, to tell
	// whether a table it looked up may have changed.
	Version uint64
	// notes, while Apply applies a statement, are what its parse
	// rewrote (ddl.Parse).
	notes ddl.Notes
}

// NewHistory is an empty history: no table, no database known.
func NewHistory() *History {
	return &History{Tables: map[ddl.Key]*Table{}, Unknown: map[ddl.Key]string{}, DBs: map[string]string{}}
}

// Change says what one DDL statement did to the history.
type Change struct {
	Touched []ddl.Key // tables whose definition changed (renames: both names)
	DBs     []string  // databases created, altered or dropped
}

// Contradiction is the error of a DDL statement that contradicts the
// history (an ALTER of a column it does not have): the history is then
// not the server's.
type Contradiction struct {
	Err       error  // how the statement contradicts the history
	Statement string // the statement, shortened (ddl.Truncate)
}

// Error is the contradiction and the statement.
func (e *Contradiction) Error() string { return fmt.Sprintf("%v (statement: %s)", e.Err, e.Statement) }

// Unwrap is Err.
func (e *Contradiction) Unwrap() error { return e.Err }

// Apply advances the history by one DDL statement run with default
// database db that succeeded, read without sql_mode flags. A statement
// the parser cannot read marks the tables it names as unknown (never
// guessed); a statement that contradicts the history (ALTER of a column
// that is not there) is a *Contradiction, since the history is then not
// the server's.
func (h *History) Apply(db, sql string) (Change, error) { return h.apply(db, sql) }

// ApplyLogged is Apply for a statement as a Query event logs it: read
// under the sql_mode flags of sqlMode that change how it reads
// (ddl.ParserModes), and, when errorCode is not 0, as a statement that
// failed on the server with that error (a failed CREATE OR REPLACE TABLE
// has dropped the table it replaces; what another failed DDL did is not
// known, so the tables it names become unknown).
func (h *History) ApplyLogged(db, sql string, sqlMode uint64, errorCode uint16) (Change, error) {
	h.sqlMode, h.errorCode = pmysql.SQLMode(sqlMode)&ddl.ParserModes, errorCode
	defer func() { h.sqlMode, h.errorCode = pmysql.ModeNone, 0 }()
	return h.apply(db, sql)
}

func (h *History) apply(db, sql string) (Change, error) {
	if h.errorCode != 0 {
		return h.applyFailed(db, sql), nil
	}
	stmts, notes, err := ddl.Parse(sql, h.sqlMode)
	h.notes = notes
	defer func() { h.notes = ddl.Notes{} }()
	if err != nil {
		keys := ddl.Targets(db, sql)
		for _, k := range keys {
			delete(h.Tables, k)
			h.Unknown[k] = "a DDL statement the schema parser cannot read: " + ddl.Truncate(sql) + " (" + err.Error() + ")"
		}
		ch := Change{Touched: keys}
		if dropDB := ddl.DroppedDatabase(sql); dropDB != "" {
			h.DropDatabase(dropDB)
			ch.DBs = append(ch.DBs, dropDB)
		}
		return ch, nil
	}
	var ch Change
	for _, st := range stmts {
		if err := h.applyStmt(db, st, sql, &ch); err != nil {
			return ch, &Contradiction{Err: err, Statement: ddl.Truncate(sql)}
		}
	}
	return ch, nil
}

// applyFailed applies a DDL statement the binlog logs with the error it
// failed with on the server (h.errorCode), which a replica repeats: a
// CREATE OR REPLACE TABLE that failed has dropped the table it replaces;
// what another failed DDL did is not known, so the tables it names become
// unknown.
func (h *History) applyFailed(db, sql string) Change {
	keys := ddl.Targets(db, sql)
	ch := Change{Touched: keys}
	for _, k := range keys {
		delete(h.Tables, k)
		delete(h.Unknown, k)
		if ddl.IsCreateOrReplace(sql) {
			continue
		}
		h.Unknown[k] = fmt.Sprintf("a DDL statement logged as failed (error %d), whose effect is not known: %s", h.errorCode, ddl.Truncate(sql))
	}
	return ch
}

func tableKeyOf(db string, tn *ast.TableName) ddl.Key {
	schema := tn.Schema.O
	if schema == "" {
		schema = db
	}
	return ddl.Key{Schema: schema, Name: tn.Name.O}
}

func (h *History) applyStmt(db string, st ast.StmtNode, sql string, ch *Change) error {
	switch s := st.(type) {
	case *ast.CreateDatabaseStmt:
		cs := ""
		for _, o := range s.Options {
			cs = CharsetOfOption(o.Tp == ast.DatabaseOptionCharset, o.Tp == ast.DatabaseOptionCollate, o.Value, cs)
		}
		if _, ok := h.DBs[s.Name.O]; !ok || !s.IfNotExists {
			h.DBs[s.Name.O] = cs
		}
		ch.DBs = append(ch.DBs, s.Name.O)
	case *ast.AlterDatabaseStmt:
		name := s.Name.O
		if name == "" {
			name = db
		}
		for _, o := range s.Options {
			h.DBs[name] = CharsetOfOption(o.Tp == ast.DatabaseOptionCharset, o.Tp == ast.DatabaseOptionCollate, o.Value, h.DBs[name])
		}
		ch.DBs = append(ch.DBs, name)
	case *ast.DropDatabaseStmt:
		h.DropDatabase(s.Name.O)
		ch.DBs = append(ch.DBs, s.Name.O)
	case *ast.CreateTableStmt:
		if s.TemporaryKeyword != ast.TemporaryNone {
			return nil // not in a row-format binlog's rows
		}
		k := tableKeyOf(db, s.Table)
		if s.IfNotExists && (h.Tables[k] != nil || h.Unknown[k] != "") {
			return nil
		}
		ch.Touched = append(ch.Touched, k)
		delete(h.Unknown, k)
		if s.ReferTable != nil {
			src := tableKeyOf(db, s.ReferTable)
			if t := h.Tables[src]; t != nil {
				// the copy's keys are decided anew: a USING HASH the key
				// did not need is not copied (MariaDB 10.11)
				c := t.clone()
				for i := range c.uniques {
					c.uniques[i].using = ""
				}
				if !c.keepsHashKeys() || !c.classifyAll(nil) {
					delete(h.Tables, k)
					h.Unknown[k] = notSureOfKeys
					return nil
				}
				h.Tables[k] = c
			} else {
				delete(h.Tables, k)
				h.Unknown[k] = "created LIKE " + src.String() + ", whose schema is unknown"
			}
			return nil
		}
		if s.Select != nil {
			delete(h.Tables, k)
			h.Unknown[k] = "CREATE TABLE ... SELECT logged as a statement: its columns are not in the binlog"
			return nil
		}
		t, err := h.createTable(k, s)
		if why, ok := err.(notModelled); ok {
			delete(h.Tables, k)
			h.Unknown[k] = string(why)
			return nil
		}
		if err != nil {
			return err
		}
		h.Tables[k] = t
	case *ast.CreateIndexStmt:
		// the server runs it as ALTER TABLE ... ADD [UNIQUE] INDEX
		if t := h.Tables[tableKeyOf(db, s.Table)]; s.IfNotExists && t != nil && t.uniqueIndex(s.IndexName) >= 0 {
			return nil
		}
		tp := ast.ConstraintIndex
		if s.KeyType == ast.IndexKeyTypeUnique {
			tp = ast.ConstraintUniqIndex
		}
		return h.alterTable(db, &ast.AlterTableStmt{Table: s.Table, Specs: []*ast.AlterTableSpec{{Tp: ast.AlterTableAddConstraint,
			Constraint: &ast.Constraint{Tp: tp, Name: s.IndexName, Keys: s.IndexPartSpecifications, Option: s.IndexOption}}}}, ch)
	case *ast.DropIndexStmt:
		return h.alterTable(db, &ast.AlterTableStmt{Table: s.Table, Specs: []*ast.AlterTableSpec{{Tp: ast.AlterTableDropIndex,
			Name: s.IndexName, IfExists: s.IfExists}}}, ch)
	case *ast.DropTableStmt:
		if s.IsView || s.TemporaryKeyword != ast.TemporaryNone {
			return nil // a temporary table's rows are not in a row-format binlog
		}
		for _, tn := range s.Tables {
			k := tableKeyOf(db, tn)
			ch.Touched = append(ch.Touched, k)
			delete(h.Tables, k)
			delete(h.Unknown, k)
		}
	case *ast.CreateSequenceStmt:
		// MariaDB logs a sequence's new state as a row of its table
		k := tableKeyOf(db, s.Name)
		if s.IfNotExists && (h.Tables[k] != nil || h.Unknown[k] != "") {
			return nil
		}
		ch.Touched = append(ch.Touched, k)
		delete(h.Unknown, k)
		h.Tables[k] = sequenceTable()
	case *ast.DropSequenceStmt:
		for _, tn := range s.Sequences {
			k := tableKeyOf(db, tn)
			ch.Touched = append(ch.Touched, k)
			delete(h.Tables, k)
			delete(h.Unknown, k)
		}
	case *ast.TruncateTableStmt:
		ch.Touched = append(ch.Touched, tableKeyOf(db, s.Table)) // same layout, new table id
	case *ast.RenameTableStmt:
		// RENAME TABLE a TO b, c TO d runs left to right, so a swap through
		// a temporary name works as written.
		for _, tt := range s.TableToTables {
			from, to := tableKeyOf(db, tt.OldTable), tableKeyOf(db, tt.NewTable)
			h.move(from, to)
			ch.Touched = append(ch.Touched, from, to)
		}
	case *ast.AlterTableStmt:
		return h.alterTable(db, s, ch)
	}
	return nil
}

// sequenceTable is the table of a MariaDB sequence (CREATE SEQUENCE, 10.3
// to 11.4; 11.5's CREATE SEQUENCE ... AS type, which changes the first
// four types, is not read): one row, rewritten as the sequence moves.
var sequenceTable = sync.OnceValue(func() *Table {
	stmts, _, err := ddl.Parse("CREATE TABLE s (next_not_cached_value BIGINT NOT NULL, minimum_value BIGINT NOT NULL, "+
		"maximum_value BIGINT NOT NULL, start_value BIGINT NOT NULL, increment BIGINT NOT NULL, "+
		"cache_size BIGINT UNSIGNED NOT NULL, cycle_option TINYINT UNSIGNED NOT NULL, cycle_count BIGINT NOT NULL)", pmysql.ModeNone)
	if err != nil {
		panic(err)
	}
	t, err := NewHistory().createTable(ddl.Key{Name: "s"}, stmts[0].(*ast.CreateTableStmt))
	if err != nil {
		panic(err)
	}
	return t
})

// DropDatabase forgets database name and every table the history knows,
// or holds as unknown, in it.
func (h *History) DropDatabase(name string) {
	delete(h.DBs, name)
	for k := range h.Tables {
		if k.Schema == name {
			delete(h.Tables, k)
		}
	}
	for k := range h.Unknown {
		if k.Schema == name {
			delete(h.Unknown, k)
		}
	}
}

// move renames a table (its definition or its unknown state).
func (h *History) move(from, to ddl.Key) {
	t, why := h.Tables[from], h.Unknown[from]
	delete(h.Tables, from)
	delete(h.Unknown, from)
	delete(h.Tables, to)
	delete(h.Unknown, to)
	switch {
	case t != nil:
		h.Tables[to] = t
	case why != "":
		h.Unknown[to] = why
	default:
		h.Unknown[to] = "renamed from " + from.String() + ", whose schema is unknown"
	}
}

// CharsetOfOption is the charset a CHARACTER SET value (isCharset) or a
// COLLATE value (isCollate: its collation's charset, else the name's
// first part) names, utf8 named utf8mb3; cur when it is neither.
func CharsetOfOption(isCharset, isCollate bool, value, cur string) string {
	switch {
	case isCharset:
		return charset.Normalize(strings.ToLower(value))
	case isCollate:
		if c, err := tidbcharset.GetCollationByName(strings.ToLower(value)); err == nil {
			return charset.Normalize(c.CharsetName)
		}
		if i := strings.IndexByte(value, '_'); i > 0 {
			return charset.Normalize(strings.ToLower(value[:i]))
		}
	}
	return cur
}

func (h *History) defaultCharset(k ddl.Key, opts []*ast.TableOption) string {
	cs := ""
	for _, o := range opts {
		cs = CharsetOfOption(o.Tp == ast.TableOptionCharset, o.Tp == ast.TableOptionCollate, o.StrValue, cs)
	}
	if cs == "" {
		cs = h.DBs[k.Schema]
	}
	if cs == "" {
		cs = h.ServerCharset
	}
	return cs
}
