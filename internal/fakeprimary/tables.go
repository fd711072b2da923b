package fakeprimary

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// A minimal table store, so that a chunked snapshot can run against the
// fake primary: the information_schema rows of the tables SetTable
// declared, and the keyset SELECTs of their rows a snapshot sends
// (SELECT cols FROM `s`.`t` FORCE INDEX (`PRIMARY`) [WHERE `k` > N]
// ORDER BY `k` LIMIT n [LOCK IN SHARE MODE]). A table's primary key is
// its first column, an integer. Without SetTable the fake answers
// information_schema with no rows, as before.

// TableColumn is a column of a table SetTable declares.
type TableColumn struct {
	Name string
	// Type is the column type as information_schema.COLUMNS.COLUMN_TYPE
	// shows it: "bigint", "int", "varchar(64)" (utf8mb4, utf8mb4_bin).
	Type string
}

type fakeTable struct {
	schema, name string
	cols         []TableColumn
	rows         map[int64][]any
}

type tableStore struct {
	mu       sync.Mutex
	tables   []*fakeTable
	onSelect func(q string) error
}

// SetTable declares (or replaces) table schema.name with its rows: each
// row holds one value per column, int64 or string (nil: NULL), the first
// the key. The binlog is the caller's: SetTable changes only what the
// SELECTs read.
func (p *Primary) SetTable(schema, name string, cols []TableColumn, rows [][]any) {
	st := &p.tables
	t := &fakeTable{schema: schema, name: name, cols: cols, rows: map[int64][]any{}}
	for _, r := range rows {
		t.rows[r[0].(int64)] = slices.Clone(r)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.tables = slices.DeleteFunc(st.tables, func(x *fakeTable) bool { return x.schema == schema && x.name == name })
	st.tables = append(st.tables, t)
}

// PutRow sets (or, with row nil, deletes) the row with key k of a table
// SetTable declared.
func (p *Primary) PutRow(schema, name string, k int64, row []any) {
	st := &p.tables
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, t := range st.tables {
		if t.schema == schema && t.name == name {
			if row == nil {
				delete(t.rows, k)
			} else {
				t.rows[k] = slices.Clone(row)
			}
		}
	}
}

// OnSelect makes fn run before each keyset SELECT is answered, with the
// query: a test can write to the binlog and the rows while a chunk is
// being read. An error fn returns is the SELECT's answer (a
// *mysql.MyError keeps its code, e.g. 1213 for a deadlock victim).
func (p *Primary) OnSelect(fn func(q string) error) {
	p.tables.mu.Lock()
	p.tables.onSelect = fn
	p.tables.mu.Unlock()
}

// mysql84 reports whether the served version has no SHOW MASTER STATUS
// (MySQL 8.4 and later: SHOW BINARY LOG STATUS only).
func (p *Primary) mysql84() bool {
	v := p.variables()["version"]
	if strings.Contains(strings.ToLower(v), "mariadb") {
		return false
	}
	major, rest, _ := strings.Cut(v, ".")
	minor, _, _ := strings.Cut(rest, ".")
	ma, _ := strconv.Atoi(major)
	mi, _ := strconv.Atoi(minor)
	return ma > 8 || ma == 8 && mi >= 4
}

func isTxnStatement(up string) bool {
	switch up {
	case "BEGIN", "COMMIT", "ROLLBACK", "START TRANSACTION", "START TRANSACTION WITH CONSISTENT SNAPSHOT":
		return true
	}
	return false
}

func (st *tableStore) has() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.tables) > 0
}

var (
	reKeyset = regexp.MustCompile("(?is)^SELECT (.+?) FROM `([^`]+)`\\.`([^`]+)` FORCE INDEX \\(`PRIMARY`\\)" +
		"(?: WHERE `[^`]+` > (-?\\d+))? ORDER BY `[^`]+` LIMIT (\\d+)( LOCK IN SHARE MODE)?$")
	reInfoTable = regexp.MustCompile(`(?i) FROM information_schema\.([A-Z_]+)`)
	reSchemaIn  = regexp.MustCompile(`(?i)(NOT\s+)?(?:SCHEMA_NAME|TABLE_SCHEMA)\s+IN\s*\(([^)]*)\)`)
	reWrapped   = regexp.MustCompile(`(?i)^(?:IFNULL|LOWER|UPPER)\((.*)\)$`)
)

// query answers a keyset SELECT or an information_schema query over the
// declared tables; ok false: not one of those.
func (st *tableStore) query(q string) (*mysql.Result, bool, error) {
	if m := reKeyset.FindStringSubmatch(q); m != nil {
		st.mu.Lock()
		fn := st.onSelect
		st.mu.Unlock()
		if fn != nil {
			if err := fn(q); err != nil {
				return nil, true, err
			}
		}
		r, err := st.keyset(m)
		return r, true, err
	}
	if m := reInfoTable.FindStringSubmatch(q); m != nil {
		r, err := st.infoSchema(strings.ToUpper(m[1]), q)
		return r, true, err
	}
	return nil, false, nil
}

func (st *tableStore) keyset(m []string) (*mysql.Result, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	var t *fakeTable
	for _, x := range st.tables {
		if x.schema == m[2] && x.name == m[3] {
			t = x
		}
	}
	if t == nil {
		return nil, mysql.NewError(mysql.ER_NO_SUCH_TABLE, fmt.Sprintf("Table '%s.%s' doesn't exist", m[2], m[3]))
	}
	after := int64(-1 << 63)
	from := m[4] != ""
	if from {
		after, _ = strconv.ParseInt(m[4], 10, 64)
	}
	limit, _ := strconv.Atoi(m[5])
	var keys []int64
	for k := range t.rows {
		if !from || k > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	keys = keys[:min(limit, len(keys))]
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		names[i] = c.Name
	}
	rows := make([][]any, len(keys))
	for i, k := range keys {
		rows[i] = t.rows[k]
	}
	return resultset(names, rows)
}

// infoSchema answers SELECT exprs FROM information_schema.<table>: each
// expression a column name, or one inside IFNULL(), LOWER() or UPPER();
// the only condition honoured is SCHEMA_NAME / TABLE_SCHEMA [NOT] IN.
func (st *tableStore) infoSchema(table, q string) (*mysql.Result, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	list := strings.TrimSpace(q[len("SELECT "):reInfoTable.FindStringIndex(q)[0]])
	keep := func(schema string) bool { return true }
	if m := reSchemaIn.FindStringSubmatch(q); m != nil {
		var names []string
		for _, n := range reQuoted.FindAllString(m[2], -1) {
			names = append(names, unquote(n))
		}
		not := m[1] != ""
		keep = func(schema string) bool { return slices.Contains(names, schema) != not }
	}
	var records []map[string]any
	seen := map[string]bool{}
	for _, t := range st.tables {
		if !keep(t.schema) {
			continue
		}
		switch table {
		case "SCHEMATA":
			if !seen[t.schema] {
				seen[t.schema] = true
				records = append(records, map[string]any{"SCHEMA_NAME": t.schema, "DEFAULT_CHARACTER_SET_NAME": "utf8mb4"})
			}
		case "TABLES":
			records = append(records, map[string]any{"TABLE_SCHEMA": t.schema, "TABLE_NAME": t.name,
				"TABLE_COLLATION": "utf8mb4_bin", "TABLE_TYPE": "BASE TABLE", "ENGINE": "InnoDB", "CREATE_OPTIONS": ""})
		case "COLUMNS":
			for _, c := range t.cols {
				records = append(records, columnRecord(t, c))
			}
		case "STATISTICS":
			records = append(records, map[string]any{"TABLE_SCHEMA": t.schema, "TABLE_NAME": t.name,
				"INDEX_NAME": "PRIMARY", "COLUMN_NAME": t.cols[0].Name, "SUB_PART": nil, "INDEX_TYPE": "BTREE"})
		}
	}
	var names []string
	var cols []string
	var dflt []any
	for _, expr := range splitTop(list) {
		expr = strings.TrimSpace(expr)
		names = append(names, expr)
		col, d := expr, any(nil)
		for {
			m := reWrapped.FindStringSubmatch(col)
			if m == nil {
				break
			}
			parts := splitTop(m[1])
			col = strings.TrimSpace(parts[0])
			if len(parts) > 1 {
				d = unquote(strings.TrimSpace(parts[1]))
			}
		}
		cols, dflt = append(cols, strings.ToUpper(col)), append(dflt, d)
	}
	rows := make([][]any, len(records))
	for i, rec := range records {
		row := make([]any, len(cols))
		for j, c := range cols {
			v, ok := rec[c]
			if !ok || v == nil {
				v = dflt[j]
			}
			row[j] = v
		}
		rows[i] = row
	}
	return resultset(names, rows)
}

func columnRecord(t *fakeTable, c TableColumn) map[string]any {
	typ := strings.ToLower(c.Type)
	dataType, size, _ := strings.Cut(typ, "(")
	r := map[string]any{"TABLE_SCHEMA": t.schema, "TABLE_NAME": t.name, "COLUMN_NAME": c.Name,
		"DATA_TYPE": dataType, "COLUMN_TYPE": typ, "IS_NULLABLE": "NO", "EXTRA": ""}
	if strings.Contains(dataType, "char") || strings.Contains(dataType, "text") {
		r["CHARACTER_MAXIMUM_LENGTH"] = strings.TrimSuffix(size, ")")
		r["CHARACTER_SET_NAME"], r["COLLATION_NAME"] = "utf8mb4", "utf8mb4_bin"
	} else {
		r["NUMERIC_PRECISION"] = "19"
		r["NUMERIC_SCALE"] = "0"
	}
	return r
}
