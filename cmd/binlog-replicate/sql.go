package main

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/binlogstream/binlogstream"
)

// table is one replicated table: its columns as written (generated columns
// left out) and its primary key, as indexes into the binlog row image.
type table struct {
	schema, name string
	cols         []string // every column, in row-image order
	write        []int    // the columns written (not generated)
	key          []int    // the primary key's columns
}

func (t *table) String() string { return t.schema + "." + t.name }

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func (t *table) quoted() string { return quoteIdent(t.schema) + "." + quoteIdent(t.name) }

func (t *table) names(idx []int) []string {
	out := make([]string, len(idx))
	for i, c := range idx {
		out[i] = quoteIdent(t.cols[c])
	}
	return out
}

// insertSQL inserts rows rows of the written columns.
func (t *table) insertSQL(rows int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", len(t.write)), ",") + ")"
	return "INSERT INTO " + t.quoted() + " (" + strings.Join(t.names(t.write), ",") + ") VALUES " +
		strings.TrimSuffix(strings.Repeat(one+",", rows), ",")
}

// replaceSQL writes one row of the written columns over the row any of
// its unique keys finds (a verification's repair).
func (t *table) replaceSQL() string {
	return "REPLACE" + strings.TrimPrefix(t.insertSQL(1), "INSERT")
}

func (t *table) whereKey() string {
	return " WHERE " + strings.Join(t.names(t.key), "=? AND ") + "=?"
}

// updateSQL sets every written column of the row found by its old key.
func (t *table) updateSQL() string {
	return "UPDATE " + t.quoted() + " SET " + strings.Join(t.names(t.write), "=?,") + "=?" + t.whereKey()
}

func (t *table) deleteSQL() string { return "DELETE FROM " + t.quoted() + t.whereKey() }

// pick returns the values of row at the given column indexes, as
// arguments for a prepared statement.
func (t *table) pick(row []any, idx []int, args []any) ([]any, error) {
	for _, c := range idx {
		v, err := sqlArg(row[c])
		if err != nil {
			return nil, fmt.Errorf("%s column %s: %w", t, t.cols[c], err)
		}
		args = append(args, v)
	}
	return args, nil
}

// sqlArg turns a value of Event.RowValues into a statement argument.
func sqlArg(v any) (any, error) {
	switch x := v.(type) {
	case nil, int64, uint64, float32, float64, string, []byte:
		return x, nil
	case binlogstream.RawText:
		return nil, fmt.Errorf("text in charset %s that cannot be converted", x.Charset)
	}
	if v == binlogstream.Absent {
		return nil, fmt.Errorf("not in the row image: binlog-replicate needs binlog_row_image=FULL on the source")
	}
	return nil, fmt.Errorf("values of type %T are not supported", v)
}

// ddlTable reports whether a DDL statement (CREATE, ALTER, DROP, RENAME,
// TRUNCATE of anything) names a table that replicated says is one of
// those replicated (or would be: a new table matching --tables),
// qualified or, with db as the statement's default database, unqualified,
// and returns its schema.table. It errs on the side of stopping: a column
// or a name in a comment that looks like such a table counts too.
func ddlTable(db, query string, replicated func(schema, table string) bool) (string, bool) {
	q := strings.TrimLeft(query, " \t\r\n(")
	verb, _, _ := strings.Cut(q, " ")
	switch strings.ToUpper(verb) {
	case "CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE":
	default:
		return "", false
	}
	ids := identifiers(q)
	for i, id := range ids {
		if id.dotted {
			continue // the table part of schema.table is matched with its schema
		}
		name, schema := id.name, db
		if i+1 < len(ids) && ids[i+1].dotted {
			schema, name = id.name, ids[i+1].name
		}
		if replicated(schema, name) {
			return schema + "." + name, true
		}
	}
	return "", false
}

type ident struct {
	name   string
	dotted bool // follows a '.': the second part of a qualified name
}

// identifiers splits SQL text into its identifiers, backquoted or bare,
// with whether each follows a dot.
func identifiers(q string) []ident {
	var out []ident
	rs := []rune(q)
	dot := false
	for i := 0; i < len(rs); {
		switch r := rs[i]; {
		case r == '`':
			var b strings.Builder
			i++
			for i < len(rs) {
				if rs[i] == '`' {
					if i+1 < len(rs) && rs[i+1] == '`' {
						b.WriteRune('`')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteRune(rs[i])
				i++
			}
			out = append(out, ident{b.String(), dot})
			dot = false
		case r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r):
			j := i
			for j < len(rs) && (rs[j] == '_' || rs[j] == '$' || unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j])) {
				j++
			}
			out = append(out, ident{string(rs[i:j]), dot})
			dot = false
			i = j
		case r == '.':
			dot = true
			i++
		default:
			if !unicode.IsSpace(r) {
				dot = false
			}
			i++
		}
	}
	return out
}
