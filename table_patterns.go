package binlogstream

import (
	"fmt"
	"path"
	"strings"
)

// TablePatterns selects tables by "schema.table" patterns, each part in
// path.Match syntax ("app.orders", "app.order_*", "*.audit") or a
// backquoted name matched as it is ("`app`.`my.table`"). Its Match method
// is a SyncerConfig.DecodeTable filter.
type TablePatterns []tablePattern

type tablePattern struct {
	raw           string // as written
	schema, table string // path.Match patterns
	// schemaName and tableName are the names a part without wildcards
	// stands for; literal reports which parts are such names.
	schemaName, tableName string
	literal               [2]bool
	fold                  bool // compare lowercased names (FoldCase)
}

// ParseTablePatterns reads a comma-separated list of "schema.table"
// patterns. A part is either a path.Match pattern without "." or "`", or
// a name in backquotes, matched as it is: "." "," "*" and the like are
// plain characters there, and a doubled backquote is one backquote. An empty list, an
// entry that is not two parts joined by ".", a backquote left open and a
// malformed pattern are refused with an error naming the entry.
func ParseTablePatterns(list string) (TablePatterns, error) {
	var out TablePatterns
	for _, raw := range splitOutsideQuotes(list) {
		p := strings.TrimSpace(raw)
		if p == "" {
			continue
		}
		tp, err := parseTablePattern(p)
		if err != nil {
			return nil, fmt.Errorf("binlogstream: table pattern %q: %v", p, err)
		}
		out = append(out, tp)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("binlogstream: no table pattern in %q", list)
	}
	return out, nil
}

// splitOutsideQuotes cuts list at the commas that are not in backquotes.
func splitOutsideQuotes(list string) []string {
	var out []string
	quoted, from := false, 0
	for i := 0; i < len(list); i++ {
		switch list[i] {
		case '`':
			quoted = !quoted // a doubled backquote toggles twice
		case ',':
			if !quoted {
				out = append(out, list[from:i])
				from = i + 1
			}
		}
	}
	return append(out, list[from:])
}

const wantSchemaTable = "want schema.table, e.g. app.orders, app.* or `app`.`orders`"

// parseTablePattern reads one trimmed "schema.table" entry.
func parseTablePattern(p string) (tablePattern, error) {
	tp := tablePattern{raw: p}
	var parts, names []string
	for i := 0; ; {
		if len(parts) == 2 {
			return tp, fmt.Errorf("%s (backquote a name that holds a dot)", wantSchemaTable)
		}
		var name string
		if i < len(p) && p[i] == '`' {
			var b strings.Builder
			j := i + 1
			for ; ; j++ {
				if j >= len(p) {
					return tp, fmt.Errorf("backquote at %d is not closed", i)
				}
				if p[j] == '`' {
					if j+1 < len(p) && p[j+1] == '`' {
						b.WriteByte('`')
						j++
						continue
					}
					break
				}
				b.WriteByte(p[j])
			}
			if name = b.String(); name == "" {
				return tp, fmt.Errorf("empty name in backquotes: %s", wantSchemaTable)
			}
			tp.literal[len(parts)] = true
			parts, names = append(parts, escapeMatch(name)), append(names, name)
			i = j + 1
		} else {
			j := strings.IndexAny(p[i:], ".`")
			if j < 0 {
				j = len(p) - i
			}
			name = p[i : i+j]
			if i+j < len(p) && p[i+j] == '`' {
				return tp, fmt.Errorf("a backquote inside a name: backquote the whole name (`app`.`orders`)")
			}
			if name == "" {
				return tp, fmt.Errorf("%s", wantSchemaTable)
			}
			if _, err := path.Match(name, ""); err != nil {
				return tp, err
			}
			tp.literal[len(parts)] = !strings.ContainsAny(name, `*?[\`)
			parts, names = append(parts, name), append(names, name)
			i += j
		}
		if i == len(p) {
			break
		}
		if p[i] != '.' {
			return tp, fmt.Errorf("%q after a backquoted name: %s", p[i:], wantSchemaTable)
		}
		i++
	}
	if len(parts) != 2 {
		return tp, fmt.Errorf("%s", wantSchemaTable)
	}
	tp.schema, tp.table = parts[0], parts[1]
	tp.schemaName, tp.tableName = names[0], names[1]
	return tp, nil
}

// escapeMatch is name as a path.Match pattern that matches only name.
func escapeMatch(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if strings.IndexByte(`*?[\`, name[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(name[i])
	}
	return b.String()
}

// FoldCase is p comparing names case-insensitively (lowercased), as a
// server with lower_case_table_names 1 or 2 compares table names; with
// 0 (the default on Linux) the server tells "App" from "app", and so
// does p.
func (p TablePatterns) FoldCase() TablePatterns {
	out := make(TablePatterns, len(p))
	for i, tp := range p {
		tp.schema, tp.table = strings.ToLower(tp.schema), strings.ToLower(tp.table)
		tp.schemaName, tp.tableName = strings.ToLower(tp.schemaName), strings.ToLower(tp.tableName)
		tp.fold = true
		out[i] = tp
	}
	return out
}

// Match reports whether schema.table matches one of the patterns.
func (p TablePatterns) Match(schema, table string) bool {
	for _, tp := range p {
		if tp.matchSchema(schema) && tp.matchTable(table) {
			return true
		}
	}
	return false
}

// MatchSchema reports whether a pattern's schema part matches schema:
// whether a table of that database may match.
func (p TablePatterns) MatchSchema(schema string) bool {
	for _, tp := range p {
		if tp.matchSchema(schema) {
			return true
		}
	}
	return false
}

func (tp *tablePattern) matchSchema(schema string) bool {
	if tp.fold {
		schema = strings.ToLower(schema)
	}
	ok, _ := path.Match(tp.schema, schema)
	return ok
}

func (tp *tablePattern) matchTable(table string) bool {
	if tp.fold {
		table = strings.ToLower(table)
	}
	ok, _ := path.Match(tp.table, table)
	return ok
}

// Split is p's patterns one by one, each a TablePatterns of its own.
func (p TablePatterns) Split() []TablePatterns {
	out := make([]TablePatterns, len(p))
	for i := range p {
		out[i] = p[i : i+1 : i+1]
	}
	return out
}

// Literal reports whether every pattern names one table: no wildcard in
// either part.
func (p TablePatterns) Literal() bool {
	for _, tp := range p {
		if !tp.literal[0] || !tp.literal[1] {
			return false
		}
	}
	return true
}

// String is the patterns as written, comma-separated.
func (p TablePatterns) String() string {
	raw := make([]string, len(p))
	for i, tp := range p {
		raw[i] = tp.raw
	}
	return strings.Join(raw, ",")
}

// Schemas returns the schema parts of the patterns that name one schema
// (no wildcard), in order, each once: the databases to snapshot for a
// schema history (SchemaConfig.Databases). ok is false when a pattern's
// schema has a wildcard, so no fixed list covers them.
func (p TablePatterns) Schemas() (schemas []string, ok bool) {
	seen := map[string]bool{}
	for _, tp := range p {
		if !tp.literal[0] {
			return nil, false
		}
		if !seen[tp.schemaName] {
			seen[tp.schemaName] = true
			schemas = append(schemas, tp.schemaName)
		}
	}
	return schemas, true
}
