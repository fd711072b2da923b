package ddl

import (
	"bytes"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	pmysql "github.com/pingcap/tidb/pkg/parser/mysql"
)

// A row change logged as a statement (binlog_format STATEMENT, or MIXED
// where the server judged the statement safe) reaches the binlog as a
// Query event with the statement's text and no rows events: a reader of
// rows never sees its rows. IsDML finds such statements and DMLTargets
// the tables whose rows they change.

// IsDML reports cheaply whether a Query event's text changes rows:
// INSERT, REPLACE, UPDATE, DELETE, LOAD DATA or XML, a WITH clause
// before one of them (no SELECT is ever logged), and CREATE TABLE ...
// SELECT, whose rows a statement-logged CREATE carries. An executable
// comment (/*! or /*M!) around the statement is looked into.
func IsDML(q []byte) bool {
	q = skipSQLSpaceAndComments(q)
	q = skipExecutableCommentStart(q)
	for _, kw := range [...]string{"INSERT", "REPLACE", "UPDATE", "DELETE", "LOAD", "WITH"} {
		if hasKeyword(q, kw) {
			return true
		}
	}
	return hasKeyword(q, "CREATE") && createsWithSelect(q)
}

// createsWithSelect reports whether a CREATE statement may be CREATE
// TABLE ... SELECT: it names SELECT outside a quoted string or a
// quoted name. A CREATE of a view, trigger, procedure or event stores
// its SELECT without running it: those are not row changes.
func createsWithSelect(q []byte) bool {
	s := string(q)
	head := strings.ToUpper(s[:min(len(s), 200)])
	for _, kw := range []string{" VIEW ", " TRIGGER ", " PROCEDURE ", " FUNCTION ", " EVENT ", " SQL SECURITY ", " DEFINER"} {
		if i := strings.Index(head, kw); i >= 0 && i < strings.Index(head+" TABLE ", " TABLE ") {
			return false
		}
	}
	if !strings.Contains(head, " TABLE ") {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"':
			n := quotedLen(s[i:])
			if n == 0 {
				return false
			}
			i += n - 1
		case '`':
			end := strings.IndexByte(s[i+1:], '`')
			if end < 0 {
				return false
			}
			i += end + 1
		case 's', 'S':
			if (i == 0 || !isIdentByte(s[i-1])) && hasKeyword([]byte(s[i:]), "SELECT") {
				return true
			}
		}
	}
	return false
}

func hasKeyword(q []byte, kw string) bool {
	return len(q) > len(kw) && strings.EqualFold(string(q[:len(kw)]), kw) && !isIdentByte(q[len(kw)])
}

// skipExecutableCommentStart drops the opening of an executable comment
// (/*!, /*!40101, /*M!100100) so that the statement inside is read.
func skipExecutableCommentStart(q []byte) []byte {
	switch {
	case bytes.HasPrefix(q, []byte("/*!")):
		q = q[3:]
	case bytes.HasPrefix(q, []byte("/*M!")):
		q = q[4:]
	default:
		return q
	}
	for len(q) > 0 && q[0] >= '0' && q[0] <= '9' {
		q = q[1:]
	}
	return skipSQLSpaceAndComments(q)
}

// DMLTargets is the tables whose rows a statement IsDML accepts changes,
// in db where the statement names no database. ok is false when the
// statement cannot be read (the parser refuses it): then any table may be
// changed. A multi-table UPDATE or DELETE whose targets are not plain
// (an unqualified column) gives every table it joins. A name is taken
// as a table's: a view's base tables are not looked up.
func DMLTargets(db, sql string, mode pmysql.SQLMode) (keys []Key, ok bool) {
	stmts, _, err := Parse(sql, mode)
	if err != nil || len(stmts) == 0 {
		return nil, false
	}
	for _, st := range stmts {
		k, ok := dmlTargets(db, st)
		if !ok {
			return nil, false
		}
		keys = append(keys, k...)
	}
	return keys, true
}

func dmlTargets(db string, st ast.StmtNode) ([]Key, bool) {
	switch s := st.(type) {
	case *ast.InsertStmt:
		if s.Table == nil {
			return nil, false
		}
		srcs := tableSources(s.Table.TableRefs)
		if len(srcs) != 1 {
			return nil, false
		}
		return []Key{srcs[0].key(db)}, true
	case *ast.LoadDataStmt:
		if s.Table == nil {
			return nil, false
		}
		return []Key{keyOf(db, s.Table)}, true
	case *ast.CreateTableStmt:
		if s.Select == nil {
			return nil, true // not a row change after all
		}
		return []Key{keyOf(db, s.Table)}, true
	case *ast.UpdateStmt:
		if s.TableRefs == nil {
			return nil, false
		}
		srcs := tableSources(s.TableRefs.TableRefs)
		if !s.MultipleTable && len(srcs) == 1 {
			return []Key{srcs[0].key(db)}, true
		}
		var keys []Key
		for _, a := range s.List {
			if a.Column == nil || a.Column.Table.O == "" {
				return allKeys(db, srcs) // an unqualified column of a join: any of its tables
			}
			src, ok := resolve(srcs, a.Column.Schema.O, a.Column.Table.O)
			if !ok {
				return allKeys(db, srcs)
			}
			keys = append(keys, src.key(db))
		}
		return keys, true
	case *ast.DeleteStmt:
		if s.TableRefs == nil {
			return nil, false
		}
		srcs := tableSources(s.TableRefs.TableRefs)
		if !s.IsMultiTable {
			if len(srcs) != 1 {
				return nil, false
			}
			return []Key{srcs[0].key(db)}, true
		}
		if s.Tables == nil {
			return allKeys(db, srcs)
		}
		var keys []Key
		for _, t := range s.Tables.Tables {
			src, ok := resolve(srcs, t.Schema.O, t.Name.O)
			if !ok {
				return allKeys(db, srcs)
			}
			keys = append(keys, src.key(db))
		}
		return keys, true
	}
	return nil, false
}

// allKeys is every table of a multi-table statement, when which of them
// it changes is not plain: it can change no other.
func allKeys(db string, srcs []tableSource) ([]Key, bool) {
	if len(srcs) == 0 {
		return nil, false
	}
	keys := make([]Key, len(srcs))
	for i, s := range srcs {
		keys[i] = s.key(db)
	}
	return keys, true
}

// tableSource is a table a statement's FROM or JOIN names, with its alias.
type tableSource struct {
	name  *ast.TableName
	alias string
}

func (t tableSource) key(db string) Key { return keyOf(db, t.name) }

func keyOf(db string, n *ast.TableName) Key {
	if n.Schema.O != "" {
		return Key{n.Schema.O, n.Name.O}
	}
	return Key{db, n.Name.O}
}

// resolve finds the table a qualifier (schema.name, an alias or a table
// name) stands for among srcs.
func resolve(srcs []tableSource, schema, name string) (tableSource, bool) {
	for _, s := range srcs {
		if schema == "" && s.alias != "" && strings.EqualFold(s.alias, name) {
			return s, true
		}
	}
	for _, s := range srcs {
		if s.alias == "" && s.name.Name.O == name && (schema == "" || s.name.Schema.O == schema) {
			return s, true
		}
	}
	return tableSource{}, false
}

// tableSources lists the tables a FROM or JOIN clause names, in order.
func tableSources(n ast.ResultSetNode) []tableSource {
	var out []tableSource
	var walk func(ast.ResultSetNode)
	walk = func(n ast.ResultSetNode) {
		switch x := n.(type) {
		case *ast.Join:
			if x.Left != nil {
				walk(x.Left)
			}
			if x.Right != nil {
				walk(x.Right)
			}
		case *ast.TableSource:
			if tn, ok := x.Source.(*ast.TableName); ok {
				out = append(out, tableSource{name: tn, alias: x.AsName.O})
			}
		}
	}
	if n != nil {
		walk(n)
	}
	return out
}
