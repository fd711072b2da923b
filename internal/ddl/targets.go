package ddl

import (
	"github.com/binlogstream/binlogstream/internal/redact"

	"regexp"
	"strings"

	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // the parser panics without a value driver
)

// Key names a table: its database and its name, unquoted.
type Key struct{ Schema, Name string }

// String is the key as `schema`.`name`, for messages.
func (k Key) String() string { return "`" + k.Schema + "`.`" + k.Name + "`" }

// IsDDL reports cheaply whether a Query event's text may change a
// table's layout; only those are parsed.
func IsDDL(q []byte) bool {
	q = skipSQLSpaceAndComments(q)
	for _, kw := range [...]string{"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE"} {
		if len(q) > len(kw) && strings.EqualFold(string(q[:len(kw)]), kw) && !isIdentByte(q[len(kw)]) {
			return true
		}
	}
	return false
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// skipSQLSpaceAndComments drops leading blanks and comments, but not
// executable comments (/*! or /*M!), which the server runs.
func skipSQLSpaceAndComments(q []byte) []byte {
	for {
		for len(q) > 0 && (q[0] == ' ' || q[0] == '\t' || q[0] == '\n' || q[0] == '\r') {
			q = q[1:]
		}
		switch {
		case len(q) >= 2 && q[0] == '/' && q[1] == '*' && !(len(q) > 2 && (q[2] == '!' || q[2] == 'M')):
			end := strings.Index(string(q[2:]), "*/")
			if end < 0 {
				return nil
			}
			q = q[end+4:]
		case len(q) >= 1 && q[0] == '#', len(q) >= 3 && q[0] == '-' && q[1] == '-' && (q[2] == ' ' || q[2] == '\t'):
			nl := strings.IndexByte(string(q), '\n')
			if nl < 0 {
				return nil
			}
			q = q[nl+1:]
		default:
			return q
		}
	}
}

// Truncate is a statement for a message (errors, Table.Unknown): its
// secrets masked (redact.Unsure), its runs of white space made one space,
// cut to 200 bytes and "..." when longer.
func Truncate(s string) string {
	s = strings.Join(strings.Fields(redact.String(s, redact.Unsure)), " ")
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// Targets finds the tables a DDL statement names when the parser
// cannot read it, so that they become unknown rather than stale.
func Targets(db, sql string) []Key {
	var keys []Key
	q := string(skipSQLSpaceAndComments([]byte(sql)))
	if m := ddlTargetRE.FindStringSubmatch(q); m != nil {
		rest := m[2]
		if strings.EqualFold(m[1], "RENAME") || strings.EqualFold(m[1], "DROP") {
			for _, part := range strings.Split(rest, ",") {
				for _, name := range strings.Fields(strings.ReplaceAll(part, " TO ", " to ")) {
					if strings.EqualFold(name, "to") {
						continue
					}
					keys = append(keys, parseTableName(db, name))
				}
			}
		} else if f := strings.Fields(rest); len(f) > 0 {
			keys = append(keys, parseTableName(db, strings.TrimRight(f[0], "(")))
			// The first RENAME [TO|AS] name that renames the table, not
			// a column, an index or a key.
			for _, m := range renameRE.FindAllStringIndex(rest, -1) {
				to := strings.Fields(rest[m[1]:])
				if len(to) > 0 && (strings.EqualFold(to[0], "COLUMN") || strings.EqualFold(to[0], "INDEX") || strings.EqualFold(to[0], "KEY")) {
					continue
				}
				if len(to) > 0 && (strings.EqualFold(to[0], "TO") || strings.EqualFold(to[0], "AS")) {
					to = to[1:]
				}
				if len(to) > 0 {
					keys = append(keys, parseTableName(db, strings.TrimRight(to[0], ",;")))
				}
				break
			}
		}
	}
	return keys
}

var renameRE = regexp.MustCompile(`(?i)\sRENAME\s`)

var ddlTargetRE = regexp.MustCompile(`(?is)^(CREATE|ALTER|DROP|RENAME|TRUNCATE)\s+(?:OR\s+REPLACE\s+)?(?:ONLINE\s+)?(?:IGNORE\s+)?(?:TEMPORARY\s+)?(?:TABLES?|SEQUENCE)\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?(.*)$`)

var dropDatabaseRE = regexp.MustCompile("(?is)^DROP\\s+(?:DATABASE|SCHEMA)\\s+(?:IF\\s+EXISTS\\s+)?`?([^`\\s;]+)`?")

// DroppedDatabase is the database a DROP DATABASE (or SCHEMA) statement
// drops, read without the parser; "" for any other statement.
func DroppedDatabase(sql string) string {
	if m := dropDatabaseRE.FindStringSubmatch(string(skipSQLSpaceAndComments([]byte(sql)))); m != nil {
		return m[1]
	}
	return ""
}

// parseTableName reads a table name as written (`d`.`t`, d.t, t) in a
// statement, the default database db where it names none.
func parseTableName(db, s string) Key {
	if i := strings.Index(s, "/*"); i > 0 { // `d`.`t`/* a comment */
		s = s[:i]
	}
	s = strings.TrimRight(strings.TrimSpace(s), ";")
	parts := strings.SplitN(s, ".", 2)
	unq := func(x string) string { return strings.Trim(x, "`\"") }
	if len(parts) == 2 {
		return Key{unq(parts[0]), unq(parts[1])}
	}
	return Key{db, unq(s)}
}

var alterRenameTableRE = regexp.MustCompile(`(?is)^ALTER\s+(?:ONLINE\s+)?(?:IGNORE\s+)?TABLE\s.*\sRENAME\s+(?:(?:TO|AS)\s+)?(\S+)`)

// DropsOrRenames reports whether a DDL statement takes its tables away
// under their names: DROP TABLE, RENAME TABLE, ALTER TABLE ... RENAME
// [TO|AS] name (not RENAME COLUMN, INDEX or KEY), and CREATE OR REPLACE
// TABLE, which drops the table it replaces.
func DropsOrRenames(sql string) bool {
	q := string(skipSQLSpaceAndComments([]byte(sql)))
	m := ddlTargetRE.FindStringSubmatch(q)
	if m == nil {
		return false
	}
	switch strings.ToUpper(m[1]) {
	case "DROP", "RENAME":
		return true
	case "CREATE":
		return IsCreateOrReplace(q)
	case "ALTER":
		if r := alterRenameTableRE.FindStringSubmatch(q); r != nil {
			switch strings.ToUpper(r[1]) {
			case "COLUMN", "INDEX", "KEY":
				return false
			}
			return true
		}
	}
	return false
}
