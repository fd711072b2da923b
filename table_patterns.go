package binlogstream

import (
	"fmt"
	"path"
	"strings"
)

// TablePatterns selects tables by "schema.table" patterns, each part in
// path.Match syntax ("app.orders", "app.order_*", "*.audit"). Its Match
// method is a SyncerConfig.DecodeTable filter.
type TablePatterns []tablePattern

type tablePattern struct{ schema, table string }

// ParseTablePatterns reads a comma-separated list of "schema.table"
// patterns. A name with a dot in it cannot be matched; an empty list, an
// entry without exactly one dot or with a malformed pattern is refused
// with an error naming it.
func ParseTablePatterns(list string) (TablePatterns, error) {
	var out TablePatterns
	for _, raw := range strings.Split(list, ",") {
		p := strings.TrimSpace(raw)
		if p == "" {
			continue
		}
		schema, table, ok := strings.Cut(p, ".")
		if !ok || schema == "" || table == "" || strings.Contains(table, ".") {
			return nil, fmt.Errorf("binlogstream: table pattern %q: want schema.table, e.g. app.orders or app.*", p)
		}
		for _, part := range []string{schema, table} {
			if _, err := path.Match(part, ""); err != nil {
				return nil, fmt.Errorf("binlogstream: table pattern %q: %v", p, err)
			}
		}
		out = append(out, tablePattern{schema, table})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("binlogstream: no table pattern in %q", list)
	}
	return out, nil
}

// Match reports whether schema.table matches one of the patterns.
func (p TablePatterns) Match(schema, table string) bool {
	for _, tp := range p {
		if ok, _ := path.Match(tp.schema, schema); !ok {
			continue
		}
		if ok, _ := path.Match(tp.table, table); ok {
			return true
		}
	}
	return false
}

// Schemas returns the schema parts of the patterns that name one schema
// (no wildcard), in order, each once: the databases to snapshot for a
// schema history (SchemaConfig.Databases). ok is false when a pattern's
// schema has a wildcard, so no fixed list covers them.
func (p TablePatterns) Schemas() (schemas []string, ok bool) {
	seen := map[string]bool{}
	for _, tp := range p {
		if strings.ContainsAny(tp.schema, `*?[\`) {
			return nil, false
		}
		if !seen[tp.schema] {
			seen[tp.schema] = true
			schemas = append(schemas, tp.schema)
		}
	}
	return schemas, true
}
