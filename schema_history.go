package binlogstream

import (
	"encoding/binary"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/charset"
	pmysql "github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // the parser panics without a value driver
	"github.com/pingcap/tidb/pkg/parser/types"
)

// The schema history is a value advanced by the binlog's DDL statements,
// in binlog order, the way the trackers advance positions: no I/O, so a
// test can replay a binlog into it and compare. Its tables are immutable
// and replaced on change, so a copy of the maps is a copy of the history.

type tableKey struct{ schema, name string }

func (k tableKey) String() string { return quoteName(k.schema, k.name) }

// histTable is one table version the history knows: its columns (names,
// declared types, charsets; not the Table_map's codes) and primary key.
type histTable struct {
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
	// column ends every row image (see schema_keys.go). engine is the
	// ENGINE the DDL named ("" for the server's default).
	uniques []uniqueKey
	engine  string
	// partitioned: PARTITION BY. A hash key a B-tree could not replace
	// (a B-tree UNIQUE key must hold the partitioning columns) stays one
	// through ALTER TABLE; the history does not model that rule.
	partitioned bool
}

// rowCols are the columns of the table's row images: cols, then the
// implicit row_start and row_end of a system-versioned table, then the
// hidden hash columns of its long unique keys.
func (t *histTable) rowCols() []Column {
	n := t.hashKeys()
	if !t.versioned && n == 0 {
		return t.cols
	}
	cols := slices.Clone(t.cols)
	if t.versioned {
		cols = append(cols, implicitRowStart, implicitRowEnd)
	}
	for i := range n {
		cols = append(cols, hashColumn(i+1))
	}
	return cols
}

// clone is a copy of t that changes leave t as it is.
func (t *histTable) clone() *histTable {
	c := *t
	c.cols = slices.Clone(t.cols)
	c.uniques = slices.Clone(t.uniques)
	for i := range c.uniques {
		c.uniques[i].parts = slices.Clone(c.uniques[i].parts)
	}
	return &c
}

// rowPK is the table's primary key as the server has it: a
// system-versioned table's ends with its implicit row_end (each version
// of a row is one row).
func (t *histTable) rowPK() []string {
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

// schemaHistory is the schema as of one binlog position.
type schemaHistory struct {
	tables map[tableKey]*histTable
	// unknown holds tables whose layout the history cannot prove, with
	// the reason (an unparsable DDL, a CREATE ... SELECT, a LIKE of an
	// unknown table).
	unknown map[tableKey]string
	// dbs holds the databases known to exist, with their default charset
	// ("" when unknown).
	dbs           map[string]string
	serverCharset string
	// sqlMode is what the statement apply applies ran under, the flags of
	// it that change how it reads (parserModes); errorCode the error the
	// server logged it with (0: it succeeded).
	sqlMode   pmysql.SQLMode
	errorCode uint16
	version   uint64 // bumped by the tracker on every change
	// notes, while apply applies a statement, are what its parse
	// rewrote (parseRewriting).
	notes ddlNotes
}

func newSchemaHistory() *schemaHistory {
	return &schemaHistory{tables: map[tableKey]*histTable{}, unknown: map[tableKey]string{}, dbs: map[string]string{}}
}

func (h *schemaHistory) clone() *schemaHistory {
	return &schemaHistory{tables: maps.Clone(h.tables), unknown: maps.Clone(h.unknown), dbs: maps.Clone(h.dbs), serverCharset: h.serverCharset}
}

// isDDLText reports cheaply whether a Query event's text may change a
// table's layout; only those are parsed.
func isDDLText(q []byte) bool {
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

// ddlChange says what one DDL statement did to the history, for the
// record and for the tests.
type ddlChange struct {
	touched []tableKey // tables whose definition changed (renames: both names)
	dbs     []string   // databases created, altered or dropped
}

// apply advances the history by one DDL statement run with default
// database db. A statement the parser cannot read marks the tables it
// names as unknown (never guessed); a statement that contradicts the
// history (ALTER of a column that is not there) is an error, since the
// history is then not the server's.
func (h *schemaHistory) apply(db, sql string) (ddlChange, error) {
	if h.errorCode != 0 {
		return h.applyFailed(db, sql), nil
	}
	stmts, notes, err := parseDDL(sql, h.sqlMode)
	h.notes = notes
	defer func() { h.notes = ddlNotes{} }()
	if err != nil {
		keys := ddlTargets(db, sql)
		for _, k := range keys {
			delete(h.tables, k)
			h.unknown[k] = "a DDL statement the schema parser cannot read: " + truncateSQL(sql) + " (" + err.Error() + ")"
		}
		ch := ddlChange{touched: keys}
		if dropDB := dropDatabaseTarget(sql); dropDB != "" {
			h.dropDatabase(dropDB)
			ch.dbs = append(ch.dbs, dropDB)
		}
		return ch, nil
	}
	var ch ddlChange
	for _, st := range stmts {
		if err := h.applyStmt(db, st, sql, &ch); err != nil {
			return ch, fmt.Errorf("%w: %v (statement: %s)", ErrSchemaHistory, err, truncateSQL(sql))
		}
	}
	return ch, nil
}

// applyFailed applies a DDL statement the binlog logs with the error it
// failed with on the server (h.errorCode), which a replica repeats: a
// CREATE OR REPLACE TABLE that failed has dropped the table it replaces;
// what another failed DDL did is not known, so the tables it names become
// unknown.
func (h *schemaHistory) applyFailed(db, sql string) ddlChange {
	keys := ddlTargets(db, sql)
	ch := ddlChange{touched: keys}
	for _, k := range keys {
		delete(h.tables, k)
		delete(h.unknown, k)
		if createOrReplaceRE.MatchString(string(skipSQLSpaceAndComments([]byte(sql)))) {
			continue
		}
		h.unknown[k] = fmt.Sprintf("a DDL statement logged as failed (error %d), whose effect is not known: %s", h.errorCode, truncateSQL(sql))
	}
	return ch
}

// truncateSQL is a statement as errors and Table.Unknown quote it: its
// secrets masked (MaskSecrets), blanks collapsed, cut after 200 bytes.
func truncateSQL(s string) string {
	s = strings.Join(strings.Fields(MaskSecrets(s)), " ")
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// parseDDL parses with the TiDB parser (go-mysql's own dependency),
// turning its panics (on some inputs) into errors. MariaDB's
// CREATE OR REPLACE TABLE is read as DROP + CREATE.
func parseDDL(sql string, mode pmysql.SQLMode) (stmts []ast.StmtNode, notes ddlNotes, err error) {
	defer func() {
		if r := recover(); r != nil {
			stmts, notes, err = nil, ddlNotes{}, fmt.Errorf("parser panic: %v", r)
		}
	}()
	text := sql
	if m := createOrReplaceRE.FindStringSubmatchIndex(text); m != nil {
		text = text[:m[0]] + "CREATE " + text[m[2]:]
		stmts, notes, err = parseRewriting(text, mode)
		if err != nil {
			return nil, notes, err
		}
		for _, st := range stmts {
			var name *ast.TableName
			switch c := st.(type) {
			case *ast.CreateTableStmt:
				c.IfNotExists, name = false, c.Table
			case *ast.CreateSequenceStmt:
				c.IfNotExists, name = false, c.Name
			default:
				continue
			}
			stmts = append([]ast.StmtNode{&ast.DropTableStmt{IfExists: true, Tables: []*ast.TableName{name}}}, stmts...)
			break
		}
		return stmts, notes, nil
	}
	return parseRewriting(text, mode)
}

// parseRewriting parses text with the TiDB parser. Where the parser
// stops at a word of MariaDB's (or MySQL 8's) column syntax it does not
// know, the word is rewritten into what it reads with the same columns,
// and the parse tried again (see rewriteAtError); where it stops at a
// collation it does not know, the collation is renamed (see
// renameCollation), aliases giving the real name of each stand-in. The
// error is the last parse's.
func parseRewriting(text string, mode pmysql.SQLMode) (stmts []ast.StmtNode, notes ddlNotes, err error) {
	if national, ok := rewriteNational(text); ok {
		if stmts, notes, err := parseRewritingWords(national, mode); err == nil {
			return stmts, notes, nil
		}
		// A word taken for a national type was a name (a column called
		// nchar): the text as written, national types read as CHAR.
	}
	return parseRewritingWords(text, mode)
}

func parseRewritingWords(text string, mode pmysql.SQLMode) (stmts []ast.StmtNode, notes ddlNotes, err error) {
	p := parser.New()
	p.SetSQLMode(mode)
	for range maxRewrites {
		stmts, _, err = p.ParseSQL(text)
		if err == nil {
			return stmts, notes, nil
		}
		if next, standIn, real, ok := renameCollation(text, err); ok {
			if notes.collations == nil {
				notes.collations = map[string]string{}
			}
			notes.collations[standIn], text = real, next
			continue
		}
		next, ok := rewriteAtError(text, err, &notes)
		if !ok {
			return nil, ddlNotes{}, err
		}
		text = next
	}
	return nil, ddlNotes{}, fmt.Errorf("more than %d words of column syntax the schema parser does not know", maxRewrites)
}

// ddlNotes are what parseRewriting took out of a statement that matters
// to its columns.
type ddlNotes struct {
	// collations give the real name of each collation the parse read
	// under a stand-in's.
	collations map[string]string
	// versioning is +1 for WITH or ADD SYSTEM VERSIONING (MariaDB), -1 for
	// DROP SYSTEM VERSIONING; period says the statement declares the
	// row start and end columns itself (AS ROW START, AS ROW END, PERIOD
	// FOR SYSTEM_TIME) rather than leaving them implicit.
	versioning int
	period     bool
	// periods are the columns of each application-time period the
	// statement declares (PERIOD FOR name (start, end)), by lower-case
	// name, as "end, start": the columns a key's WITHOUT OVERLAPS adds.
	periods map[string]string
	// convertTo is the table an ALTER TABLE ... CONVERT PARTITION p TO
	// TABLE name creates with the altered table's columns, convertFrom
	// the one CONVERT TABLE name TO PARTITION ... moves into it (as
	// written, maybe qualified and quoted).
	convertTo, convertFrom string
}

// renameCollation renames the collation a TiDB parse error says it does
// not know (MariaDB's utf8mb4_uca1400_ai_ci, latin1_swedish_nopad_ci, ...)
// wherever the text names it after COLLATE, to a stand-in: a collation of
// the same character set that the parser knows and the text does not
// name. The character set is the name's first part, as MariaDB's and
// MySQL's collation names go.
func renameCollation(text string, err error) (next, standIn, real string, ok bool) {
	const unknown = "Unknown collation: '"
	msg := err.Error()
	i := strings.Index(msg, unknown)
	if i < 0 {
		return "", "", "", false
	}
	real, _, _ = strings.Cut(msg[i+len(unknown):], "'")
	real = strings.ToLower(real)
	cs, _, found := strings.Cut(real, "_")
	if !found || real != leadingWord(real) {
		return "", "", "", false
	}
	if cs == "utf8mb3" {
		cs = "utf8" // the TiDB parser's name
	}
	lower := asciiLower(text) // the same byte offsets as text
	for _, c := range []string{"_bin", "_general_ci", "_unicode_ci", "_unicode_520_ci", "_0900_ai_ci", "_0900_bin"} {
		if _, err := charset.GetCollationByName(cs + c); err == nil && !strings.Contains(lower, cs+c) {
			standIn = cs + c
			break
		}
	}
	if standIn == "" {
		return "", "", "", false
	}
	var b strings.Builder
	last := 0
	for at := 0; ; {
		j := strings.Index(lower[at:], real)
		if j < 0 {
			break
		}
		j += at
		at = j + len(real)
		if j > 0 && isIdentByte(lower[j-1]) || at < len(lower) && isIdentByte(lower[at]) || !afterCollate(lower[:j]) {
			continue
		}
		b.WriteString(text[last:j])
		b.WriteString(standIn)
		last = at
	}
	if last == 0 {
		return "", "", "", false
	}
	b.WriteString(text[last:])
	return b.String(), normCollation(standIn), normCollation(real), true
}

// asciiLower lower-cases the ASCII letters of s only, so that offsets
// in it are offsets in s (strings.ToLower can change a UTF-8 string's
// length).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// afterCollate reports whether s (lower case) ends with COLLATE, an
// optional "=" and an optional opening quote.
func afterCollate(s string) bool {
	s = strings.TrimRight(s, " \t\r\n")
	s = strings.TrimRight(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(s, "'"), `"`), "`"), " \t\r\n")
	s = strings.TrimRight(strings.TrimSuffix(s, "="), " \t\r\n")
	return strings.HasSuffix(s, "collate") && (len(s) == len("collate") || !isIdentByte(s[len(s)-len("collate")-1]))
}

const maxRewrites = 256

// columnTypeMark begins the only member of the ENUM that stands for a
// column type the TiDB parser does not know (MariaDB's UUID, INET6 and
// INET4; the spatial types); columnFromDef reads the type back from it.
const columnTypeMark = "\x1fbinlogstream-type:"

// unknownColumnTypes are the column types the TiDB parser does not know,
// as information_schema names them.
var unknownColumnTypes = map[string]bool{
	"uuid": true, "inet6": true, "inet4": true,
	"geometry": true, "point": true, "linestring": true, "polygon": true,
	"multipoint": true, "multilinestring": true, "multipolygon": true, "geometrycollection": true,
}

// rewriteAtError rewrites what a TiDB parse error stopped at, when it is
// MariaDB (or MySQL 8) syntax that leaves the columns as written:
//   - a type in unknownColumnTypes (GEOMCOLLECTION is GEOMETRYCOLLECTION),
//     not followed by "(" (UUID() is a function), becomes an ENUM whose
//     only member carries its name (columnTypeMark);
//   - PERSISTENT (a stored generated column) becomes STORED; IGNORED and
//     NOT IGNORED (an index the optimizer skips) INVISIBLE and VISIBLE,
//     and ALTER KEY ALTER INDEX;
//   - words that change no column go: INVISIBLE (a column hidden from
//     SELECT *, still in every row image), the SPATIAL of SPATIAL INDEX
//     or KEY, a spatial column's SRID n (MySQL) or REF_SYSTEM_ID[=]n
//     (MariaDB),
//     ALTER ONLINE's ONLINE, WAIT n and NOWAIT, IF EXISTS and IF NOT
//     EXISTS where the parser does not take them (ALTER TABLE IF EXISTS:
//     an ALTER of a table the history does not hold leaves it unknown
//     either way), ENCRYPTED=YES|NO and ENCRYPTION_KEY_ID=n;
//   - a DEFAULT (expression) the parser cannot read goes whole, and
//     ALGORITHM=NOCOPY becomes ALGORITHM=INPLACE;
//   - MariaDB's system versioning goes, noted in notes (see ddlNotes and
//     histTable.versioned): [WITH|WITHOUT|ADD|DROP] SYSTEM VERSIONING,
//     [GENERATED ALWAYS] AS ROW START|END, PERIOD FOR name (start, end);
//   - COMPRESSED[=zlib] goes (the column keeps its type; the binlog gives
//     it a type code of its own, which checkColumn takes);
//   - BYTE, ASCII and UNICODE (MariaDB) become CHARACTER SET binary,
//     latin1 and ucs2; MySQL 8's column [SECONDARY_]ENGINE_ATTRIBUTE and
//     ALTER [COLUMN] c SET [IN]VISIBLE go;
//   - an application-time period's DROP PERIOD FOR name goes, and a key's
//     "period WITHOUT OVERLAPS" becomes the period's end and start columns;
//   - MariaDB's CONVERT PARTITION p TO TABLE t and CONVERT TABLE t TO
//     PARTITION ... go, noted (see schemaHistory.convertPartition).
//
// Anything else is left to fail. A syntax error gives where the parser
// stopped: its "near" text is the statement from there on (its length,
// when cut).
func rewriteAtError(text string, err error, notes *ddlNotes) (string, bool) {
	msg := err.Error()
	if strings.Contains(msg, "Unknown ALGORITHM") {
		if m := nocopyRE.FindStringIndex(text); m != nil {
			return text[:m[0]] + "ALGORITHM=INPLACE" + text[m[1]:], true
		}
		return "", false
	}
	off, ok := parseErrorOffset(text, msg)
	if !ok {
		return "", false
	}
	if next, ok := dropDefaultExpr(text, off); ok {
		return next, true
	}
	if next, ok := alterColumnVisibility(text, off); ok {
		return next, true
	}
	word := leadingWord(text[off:])
	rest := text[off+len(word):]
	after := skipSpaces(rest)
	next := strings.ToLower(leadingWord(after))
	switch w := strings.ToLower(word); {
	case w == "byte": // MariaDB: CHAR(n) BYTE is BINARY(n), TEXT BYTE a BLOB
		return text[:off] + "CHARACTER SET binary" + rest, true
	case w == "ascii": // where the parser takes no BINARY beside it
		return text[:off] + "CHARACTER SET latin1" + rest, true
	case w == "unicode":
		return text[:off] + "CHARACTER SET ucs2" + rest, true
	case w == "engine_attribute" || w == "secondary_engine_attribute":
		// MySQL 8's column attributes for the storage engine
		value := skipSpaces(strings.TrimPrefix(after, "="))
		if n := quotedLen(value); n > 0 {
			return text[:off] + value[n:], true
		}
	case w == "without" && next == "overlaps":
		return withoutOverlaps(text, off, after[len(next):], notes)
	case w == "partition" || w == "table":
		if c := wordBefore(text, off, "convert"); c >= 0 {
			return convertPartition(text, c, w, after, notes)
		}
	case w == "geomcollection" || unknownColumnTypes[w]:
		if strings.HasPrefix(after, "(") {
			return "", false
		}
		if w == "geomcollection" {
			w = "geometrycollection"
		}
		return text[:off] + "ENUM('" + columnTypeMark + w + "')" + rest, true
	case w == "persistent":
		return text[:off] + "STORED" + rest, true
	case w == "compressed":
		// a COMPRESSED column (the binlog has types of its own for it:
		// typeBlobCompressed, typeVarcharCompressed), =zlib optional
		if v := skipSpaces(strings.TrimPrefix(after, "=")); v != after && strings.EqualFold(leadingWord(v), "zlib") {
			return text[:off] + v[len("zlib"):], true
		}
		return text[:off] + rest, true
	case w == "versioning":
		return rewriteVersioning(text, off, rest, notes)
	case (w == "with" || w == "without") && next == "system":
		// a column's WITH or WITHOUT SYSTEM VERSIONING
		if v := skipSpaces(after[len(next):]); strings.EqualFold(leadingWord(v), "versioning") {
			return rewriteVersioning(text, len(text)-len(v), v[len("versioning"):], notes)
		}
	case w == "row" && (next == "start" || next == "end"):
		// [GENERATED ALWAYS] AS ROW START|END: the column stays, typed
		from := wordBefore(text, off, "as")
		if from < 0 {
			return "", false
		}
		if g := wordBefore(text, from, "always"); g >= 0 {
			if g2 := wordBefore(text, g, "generated"); g2 >= 0 {
				from = g2
			}
		}
		notes.period = true
		return text[:from] + after[len(next):], true
	case w == "period" && next == "for":
		return dropPeriod(text, off, notes)
	case w == "for":
		if p := wordBefore(text, off, "period"); p >= 0 {
			return dropPeriod(text, p, notes)
		}
	case w == "invisible" || w == "online" || w == "nowait":
		return text[:off] + rest, true
	case w == "ignored": // an index option, as INVISIBLE is MySQL's (ALTER INDEX i IGNORED takes one)
		return text[:off] + "INVISIBLE" + rest, true
	case w == "key":
		if wordBefore(text, off, "alter") >= 0 {
			return text[:off] + "INDEX" + rest, true // ALTER KEY i [NOT] IGNORED
		}
	case w == "spatial" && (next == "index" || next == "key"):
		return text[:off] + rest, true
	case w == "not" && next == "ignored":
		return text[:off] + "VISIBLE" + after[len(next):], true
	case w == "if" && next == "exists":
		return text[:off] + after[len(next):], true
	case w == "if" && next == "not":
		if after = skipSpaces(after[len(next):]); strings.EqualFold(leadingWord(after), "exists") {
			return text[:off] + after[len("exists"):], true
		}
	case w == "wait" || w == "srid":
		if v := leadingDigits(after); v != "" {
			return text[:off] + after[len(v):], true
		}
	case w == "ref_system_id" || w == "encryption_key_id":
		value := skipSpaces(strings.TrimPrefix(after, "="))
		if v := leadingDigits(value); v != "" {
			return text[:off] + value[len(v):], true
		}
	case w == "encrypted":
		value := skipSpaces(strings.TrimPrefix(after, "="))
		if v := strings.ToLower(leadingWord(value)); v == "yes" || v == "no" {
			return text[:off] + value[len(v):], true
		}
	}
	return "", false
}

var nocopyRE = regexp.MustCompile(`(?i)\bALGORITHM\s*=?\s*NOCOPY\b`)

// dropDefaultExpr removes the DEFAULT (expression) that off lies in: the
// last DEFAULT followed by "(" before off, outside quotes and comments,
// whose parenthesis closes after off.
func dropDefaultExpr(text string, off int) (string, bool) {
	start, open := -1, -1
	sqlScan(text[:off], func(i int) {
		if i > 0 && isIdentByte(text[i-1]) || !strings.EqualFold(leadingWord(text[i:]), "default") {
			return
		}
		if p := len(text) - len(skipSpaces(text[i+len("default"):])); p < off && text[p] == '(' {
			start, open = i, p
		}
	})
	if start < 0 {
		return "", false
	}
	depth := 0
	end := -1
	sqlScan(text[open:], func(i int) {
		if end >= 0 {
			return
		}
		switch text[open+i] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				end = open + i
			}
		}
	})
	if end < off {
		return "", false
	}
	return text[:start] + " " + text[end+1:], true
}

// sqlScan calls at with the index of every byte of text outside quoted
// strings and names and outside comments.
func sqlScan(text string, at func(i int)) {
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\'' || c == '"' || c == '`':
			for i++; i < len(text) && text[i] != c; i++ {
				if text[i] == '\\' && c != '`' {
					i++
				}
			}
		case c == '#' || c == '-' && strings.HasPrefix(text[i:], "-- "):
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(text[i:], "/*") && !strings.HasPrefix(text[i:], "/*!") && !strings.HasPrefix(text[i:], "/*M!"):
			if j := strings.Index(text[i+2:], "*/"); j >= 0 {
				i += j + 3
			} else {
				i = len(text)
			}
		default:
			at(i)
		}
	}
}

func skipSpaces(s string) string { return strings.TrimLeft(s, " \t\r\n") }

// rewriteVersioning takes out [WITH|WITHOUT|ADD|DROP] SYSTEM VERSIONING,
// the parser stopped at VERSIONING (at off), noting what it does to the
// table: WITH (of the table or of a column) and ADD make it versioned,
// DROP no longer; WITHOUT (a column left out of the versioning) changes
// no column. An ALTER's ADD or DROP becomes FORCE, so that the list of
// changes stays well formed.
func rewriteVersioning(text string, off int, rest string, notes *ddlNotes) (string, bool) {
	sys := wordBefore(text, off, "system")
	if sys < 0 {
		return "", false
	}
	verb := lastWordBefore(text, sys)
	if verb < 0 {
		return "", false
	}
	switch strings.ToLower(leadingWord(text[verb:])) {
	case "with":
		notes.versioning = 1
		return text[:verb] + rest, true
	case "without":
		return text[:verb] + rest, true
	case "add":
		notes.versioning = 1
		return text[:verb] + "FORCE" + rest, true
	case "drop":
		notes.versioning = -1
		return text[:verb] + "FORCE" + rest, true
	}
	return "", false
}

// dropPeriod takes out the PERIOD FOR name (start, end) at text[at:]
// (its columns stay): from a CREATE's list with its comma, an ALTER's
// ADD PERIOD as FORCE.
func dropPeriod(text string, at int, notes *ddlNotes) (string, bool) {
	after := skipSpaces(text[at+len("period"):])
	if !strings.EqualFold(leadingWord(after), "for") {
		return "", false
	}
	after = after[len("for"):]
	open := strings.IndexByte(after, '(')
	name := leadingName(skipSpaces(after))
	period := strings.ToLower(unquoteName(name))
	if a := wordBefore(text, at, "drop"); a >= 0 && period != "" && period != "system_time" {
		// DROP PERIOD FOR name: an application-time period's columns stay
		end := len(text) - len(skipSpaces(after)) + len(name)
		return text[:a] + "FORCE" + text[end:], true
	}
	if open < 0 {
		return "", false
	}
	closing := strings.IndexByte(after[open:], ')')
	if closing < 0 {
		return "", false
	}
	if period == "system_time" {
		notes.period = true
	} else if cols := strings.Split(after[open+1:open+closing], ","); len(cols) == 2 && period != "" {
		if notes.periods == nil {
			notes.periods = map[string]string{}
		}
		notes.periods[period] = strings.TrimSpace(cols[1]) + ", " + strings.TrimSpace(cols[0])
	}
	end := len(text) - len(after) + open + closing + 1
	if a := wordBefore(text, at, "add"); a >= 0 {
		return text[:a] + "FORCE" + text[end:], true
	}
	return dropListItem(text, at, end)
}

// withoutOverlaps rewrites a key part "period WITHOUT OVERLAPS" (at off:
// WITHOUT; MariaDB's application-time keys) into the period's end and
// start columns, which the server adds to the key in that order. The
// period must be declared in the same statement (notes.periods).
func withoutOverlaps(text string, off int, rest string, notes *ddlNotes) (string, bool) {
	p := nameBefore(text, off)
	if p < 0 {
		return "", false
	}
	cols, ok := notes.periods[strings.ToLower(unquoteName(strings.TrimSpace(text[p:off])))]
	if !ok {
		return "", false
	}
	return text[:p] + cols + rest, true
}

// convertPartition takes out MariaDB's CONVERT PARTITION p TO TABLE name
// or CONVERT TABLE name TO PARTITION ... (at c: CONVERT; w is the word
// after it, after the text after w) as FORCE, noting name: the altered
// table's columns stay, name is created or goes (see
// schemaHistory.convertPartition).
func convertPartition(text string, c int, w, after string, notes *ddlNotes) (string, bool) {
	words := func(s string, want ...string) (string, bool) {
		for _, x := range want {
			if !strings.EqualFold(leadingWord(s), x) {
				return "", false
			}
			s = skipSpaces(s[len(x):])
		}
		return s, true
	}
	if w == "partition" {
		part := leadingName(after)
		s, ok := words(skipSpaces(after[len(part):]), "to", "table")
		name := leadingName(s)
		if part == "" || !ok || name == "" {
			return "", false
		}
		notes.convertTo = name
		return text[:c] + "FORCE" + s[len(name):], true
	}
	name := leadingName(after)
	if _, ok := words(skipSpaces(after[len(name):]), "to", "partition"); !ok || name == "" {
		return "", false
	}
	// the partition's definition runs to the end of the statement
	notes.convertFrom = name
	return text[:c] + "FORCE", true
}

// alterColumnVisibility takes out MySQL 8's ALTER [COLUMN] c SET
// VISIBLE|INVISIBLE (the column is hidden from SELECT * or shown again;
// it is in every row image either way) as FORCE. The parser stops at
// VISIBLE, or after INVISIBLE (off).
func alterColumnVisibility(text string, off int) (string, bool) {
	isVis := func(at int) bool {
		w := strings.ToLower(leadingWord(text[at:]))
		return w == "visible" || w == "invisible"
	}
	vis := off
	if !isVis(vis) {
		if vis = lastWordBefore(text, off); vis < 0 || !isVis(vis) {
			return "", false
		}
	}
	set := wordBefore(text, vis, "set")
	name := -1
	if set >= 0 {
		name = nameBefore(text, set)
	}
	if c := wordBefore(text, name, "column"); c >= 0 {
		name = c
	}
	alter := wordBefore(text, name, "alter")
	if alter < 0 {
		return "", false
	}
	return text[:alter] + "FORCE" + text[vis+len(leadingWord(text[vis:])):], true
}

// leadingName is the name s begins with, as written: a word or a
// backquoted name (a backquote in it doubled), qualified or not (db.t).
func leadingName(s string) string {
	n := namePart(s)
	if n > 0 && strings.HasPrefix(s[n:], ".") {
		if m := namePart(s[n+1:]); m > 0 {
			n += 1 + m
		}
	}
	return s[:n]
}

// namePart is the length of the word or backquoted name s begins with.
func namePart(s string) int {
	if !strings.HasPrefix(s, "`") {
		return len(leadingWord(s))
	}
	for i := 1; i < len(s); i++ {
		if s[i] == '`' {
			if i+1 < len(s) && s[i+1] == '`' {
				i++
				continue
			}
			return i + 1
		}
	}
	return 0
}

// tableKeyOfName is the table a leadingName names, in db when it is not
// qualified.
func tableKeyOfName(db, name string) tableKey {
	if n := namePart(name); n < len(name) && name[n] == '.' {
		return tableKey{unquoteName(name[:n]), unquoteName(name[n+1:])}
	}
	return tableKey{db, unquoteName(name)}
}

// unquoteName is a name without its backquotes.
func unquoteName(s string) string {
	if len(s) >= 2 && s[0] == '`' && s[len(s)-1] == '`' {
		return strings.ReplaceAll(s[1:len(s)-1], "``", "`")
	}
	return s
}

// nameBefore is where the name (a word or a quoted name) before
// text[at:] begins, -1 when none is there.
func nameBefore(text string, at int) int {
	i := len(strings.TrimRight(text[:at], " \t\r\n"))
	if i > 0 && text[i-1] == '`' {
		return strings.LastIndexByte(text[:i-1], '`')
	}
	return lastWordBefore(text, at)
}

// quotedLen is the length of the quoted string s begins with ('...' or
// "..."), 0 when it begins with none.
func quotedLen(s string) int {
	if s == "" || s[0] != '\'' && s[0] != '"' {
		return 0
	}
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return 0
}

// rewriteNational spells the national character types (NCHAR, NATIONAL
// CHAR, NVARCHAR, NATIONAL VARCHAR, NCHAR VARYING, ...) as CHAR or
// VARCHAR CHARACTER SET utf8, which they are on MariaDB and MySQL; the
// TiDB parser reads them as CHAR or VARCHAR of the table's charset. False
// when the text has none.
func rewriteNational(text string) (string, bool) {
	lower := asciiLower(text)
	if !strings.Contains(lower, "nchar") && !strings.Contains(lower, "national") && !strings.Contains(lower, "nvarchar") {
		return text, false
	}
	var b strings.Builder
	last := 0
	sqlScan(text, func(i int) {
		if i < last || !isIdentByte(text[i]) || i > 0 && isIdentByte(text[i-1]) {
			return
		}
		kind, end := nationalType(lower, i)
		if kind == "" || nameAt(lower, i) {
			return
		}
		b.WriteString(text[last:i])
		b.WriteString(kind)
		from := end
		if rest := skipSpaces(text[end:]); strings.HasPrefix(rest, "(") {
			if j := strings.IndexByte(rest, ')'); j >= 0 {
				end = len(text) - len(rest) + j + 1 // the length stays before the charset
			}
		}
		b.WriteString(text[from:end])
		b.WriteString(" CHARACTER SET utf8")
		last = end
	})
	if last == 0 {
		return text, false
	}
	b.WriteString(text[last:])
	return b.String(), true
}

// nameAt reports whether the word at lower[i:] is where a column's name
// goes: first in a list, after ADD, COLUMN, MODIFY, CHANGE or AFTER, or
// the new name of CHANGE [COLUMN] old new.
func nameAt(lower string, i int) bool {
	before := strings.TrimRight(lower[:i], " \t\r\n")
	if strings.HasSuffix(before, "(") || strings.HasSuffix(before, ",") {
		return true
	}
	word := func(at int) string {
		if at < 0 {
			return ""
		}
		return leadingWord(lower[at:])
	}
	switch word(lastWordBefore(lower, i)) {
	case "add", "column", "modify", "change", "after":
		return true
	}
	old := nameBefore(lower, i)
	if c := wordBefore(lower, old, "column"); c >= 0 {
		old = c
	}
	return wordBefore(lower, old, "change") >= 0
}

// nationalType is the type ("CHAR" or "VARCHAR") of a national character
// type whose words begin at lower[i:], and where they end; "" when none
// begins there.
func nationalType(lower string, i int) (kind string, end int) {
	w := leadingWord(lower[i:])
	end = i + len(w)
	nextWord := func(at int) (string, int) {
		r := skipSpaces(lower[at:])
		nw := leadingWord(r)
		return nw, len(lower) - len(r) + len(nw)
	}
	switch w {
	case "nvarchar":
		return "VARCHAR", end
	case "nchar":
		if nw, e := nextWord(end); nw == "varchar" || nw == "varcharacter" || nw == "varying" {
			return "VARCHAR", e
		}
		return "CHAR", end
	case "national":
		switch nw, e := nextWord(end); nw {
		case "varchar", "varcharacter":
			return "VARCHAR", e
		case "char", "character":
			if nw2, e2 := nextWord(e); nw2 == "varying" {
				return "VARCHAR", e2
			}
			return "CHAR", e
		}
	}
	return "", 0
}

// wordBefore is where the word before text[at:] begins when it is word
// (in any case), -1 otherwise or when at is -1.
func wordBefore(text string, at int, word string) int {
	if at < 0 {
		return -1
	}
	if i := lastWordBefore(text, at); i >= 0 && strings.EqualFold(leadingWord(text[i:]), word) {
		return i
	}
	return -1
}

// lastWordBefore is where the word before text[at:] begins (blanks
// between), -1 when no word is there.
func lastWordBefore(text string, at int) int {
	i := len(strings.TrimRight(text[:at], " \t\r\n"))
	j := i
	for j > 0 && isIdentByte(text[j-1]) {
		j--
	}
	if j == i {
		return -1
	}
	return j
}

// dropListItem takes text[from:to] out of a parenthesized list, with the
// comma before it (or after it, when it is first).
func dropListItem(text string, from, to int) (string, bool) {
	if before := strings.TrimRight(text[:from], " \t\r\n"); strings.HasSuffix(before, ",") {
		return before[:len(before)-1] + text[to:], true
	}
	if after := skipSpaces(text[to:]); strings.HasPrefix(after, ",") {
		return text[:from] + after[1:], true
	}
	return "", false
}

func leadingDigits(s string) string { return s[:len(s)-len(strings.TrimLeft(s, "0123456789"))] }

// parseErrorOffset is where in text the TiDB parser stopped, from its
// error: `line L column C near "REST" ` with REST the text from there on,
// or its first 2048 bytes followed by "(total length N)".
func parseErrorOffset(text, msg string) (int, bool) {
	const near = ` near "`
	i := strings.Index(msg, near)
	if i < 0 {
		return 0, false
	}
	tail := msg[i+len(near):]
	if j := strings.LastIndex(tail, "(total length "); j >= 0 {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(tail[j+len("(total length "):]), ")"))
		if err != nil || n > len(text) || n < 2048 || !strings.HasPrefix(tail, text[len(text)-n:][:2048]) {
			return 0, false
		}
		return len(text) - n, true
	}
	rest, ok := strings.CutSuffix(tail, `" `)
	if !ok || !strings.HasSuffix(text, rest) {
		return 0, false
	}
	return len(text) - len(rest), true
}

// leadingWord is the unquoted identifier or keyword s begins with.
func leadingWord(s string) string {
	n := 0
	for n < len(s) && isIdentByte(s[n]) {
		n++
	}
	return s[:n]
}

var createOrReplaceRE = regexp.MustCompile(`(?i)^\s*CREATE\s+OR\s+REPLACE\s+(TABLE|SEQUENCE)`)

func tableKeyOf(db string, tn *ast.TableName) tableKey {
	schema := tn.Schema.O
	if schema == "" {
		schema = db
	}
	return tableKey{schema, tn.Name.O}
}

func (h *schemaHistory) applyStmt(db string, st ast.StmtNode, sql string, ch *ddlChange) error {
	switch s := st.(type) {
	case *ast.CreateDatabaseStmt:
		cs := ""
		for _, o := range s.Options {
			cs = charsetOfOption(o.Tp == ast.DatabaseOptionCharset, o.Tp == ast.DatabaseOptionCollate, o.Value, cs)
		}
		if _, ok := h.dbs[s.Name.O]; !ok || !s.IfNotExists {
			h.dbs[s.Name.O] = cs
		}
		ch.dbs = append(ch.dbs, s.Name.O)
	case *ast.AlterDatabaseStmt:
		name := s.Name.O
		if name == "" {
			name = db
		}
		for _, o := range s.Options {
			h.dbs[name] = charsetOfOption(o.Tp == ast.DatabaseOptionCharset, o.Tp == ast.DatabaseOptionCollate, o.Value, h.dbs[name])
		}
		ch.dbs = append(ch.dbs, name)
	case *ast.DropDatabaseStmt:
		h.dropDatabase(s.Name.O)
		ch.dbs = append(ch.dbs, s.Name.O)
	case *ast.CreateTableStmt:
		if s.TemporaryKeyword != ast.TemporaryNone {
			return nil // not in a row-format binlog's rows
		}
		k := tableKeyOf(db, s.Table)
		if s.IfNotExists && (h.tables[k] != nil || h.unknown[k] != "") {
			return nil
		}
		ch.touched = append(ch.touched, k)
		delete(h.unknown, k)
		if s.ReferTable != nil {
			src := tableKeyOf(db, s.ReferTable)
			if t := h.tables[src]; t != nil {
				// the copy's keys are decided anew: a USING HASH the key
				// did not need is not copied (MariaDB 10.11)
				c := t.clone()
				for i := range c.uniques {
					c.uniques[i].using = ""
				}
				if !c.keepsHashKeys() || !c.classifyAll(nil) {
					delete(h.tables, k)
					h.unknown[k] = notSureOfKeys
					return nil
				}
				h.tables[k] = c
			} else {
				delete(h.tables, k)
				h.unknown[k] = "created LIKE " + src.String() + ", whose schema is unknown"
			}
			return nil
		}
		if s.Select != nil {
			delete(h.tables, k)
			h.unknown[k] = "CREATE TABLE ... SELECT logged as a statement: its columns are not in the binlog"
			return nil
		}
		t, err := h.createTable(k, s)
		if why, ok := err.(notModelled); ok {
			delete(h.tables, k)
			h.unknown[k] = string(why)
			return nil
		}
		if err != nil {
			return err
		}
		h.tables[k] = t
	case *ast.CreateIndexStmt:
		// the server runs it as ALTER TABLE ... ADD [UNIQUE] INDEX
		if t := h.tables[tableKeyOf(db, s.Table)]; s.IfNotExists && t != nil && t.uniqueIndex(s.IndexName) >= 0 {
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
			ch.touched = append(ch.touched, k)
			delete(h.tables, k)
			delete(h.unknown, k)
		}
	case *ast.CreateSequenceStmt:
		// MariaDB logs a sequence's new state as a row of its table
		k := tableKeyOf(db, s.Name)
		if s.IfNotExists && (h.tables[k] != nil || h.unknown[k] != "") {
			return nil
		}
		ch.touched = append(ch.touched, k)
		delete(h.unknown, k)
		h.tables[k] = sequenceTable()
	case *ast.DropSequenceStmt:
		for _, tn := range s.Sequences {
			k := tableKeyOf(db, tn)
			ch.touched = append(ch.touched, k)
			delete(h.tables, k)
			delete(h.unknown, k)
		}
	case *ast.TruncateTableStmt:
		ch.touched = append(ch.touched, tableKeyOf(db, s.Table)) // same layout, new table id
	case *ast.RenameTableStmt:
		// RENAME TABLE a TO b, c TO d runs left to right, so a swap through
		// a temporary name works as written.
		for _, tt := range s.TableToTables {
			from, to := tableKeyOf(db, tt.OldTable), tableKeyOf(db, tt.NewTable)
			h.move(from, to)
			ch.touched = append(ch.touched, from, to)
		}
	case *ast.AlterTableStmt:
		return h.alterTable(db, s, ch)
	}
	return nil
}

// sequenceTable is the table of a MariaDB sequence (CREATE SEQUENCE, 10.3
// to 11.4; 11.5's CREATE SEQUENCE ... AS type, which changes the first
// four types, is not read): one row, rewritten as the sequence moves.
var sequenceTable = sync.OnceValue(func() *histTable {
	stmts, _, err := parseDDL("CREATE TABLE s (next_not_cached_value BIGINT NOT NULL, minimum_value BIGINT NOT NULL, "+
		"maximum_value BIGINT NOT NULL, start_value BIGINT NOT NULL, increment BIGINT NOT NULL, "+
		"cache_size BIGINT UNSIGNED NOT NULL, cycle_option TINYINT UNSIGNED NOT NULL, cycle_count BIGINT NOT NULL)", pmysql.ModeNone)
	if err != nil {
		panic(err)
	}
	t, err := newSchemaHistory().createTable(tableKey{"", "s"}, stmts[0].(*ast.CreateTableStmt))
	if err != nil {
		panic(err)
	}
	return t
})

func (h *schemaHistory) dropDatabase(name string) {
	delete(h.dbs, name)
	for k := range h.tables {
		if k.schema == name {
			delete(h.tables, k)
		}
	}
	for k := range h.unknown {
		if k.schema == name {
			delete(h.unknown, k)
		}
	}
}

// move renames a table (its definition or its unknown state).
func (h *schemaHistory) move(from, to tableKey) {
	t, why := h.tables[from], h.unknown[from]
	delete(h.tables, from)
	delete(h.unknown, from)
	delete(h.tables, to)
	delete(h.unknown, to)
	switch {
	case t != nil:
		h.tables[to] = t
	case why != "":
		h.unknown[to] = why
	default:
		h.unknown[to] = "renamed from " + from.String() + ", whose schema is unknown"
	}
}

func charsetOfOption(isCharset, isCollate bool, value, cur string) string {
	switch {
	case isCharset:
		return normCharset(strings.ToLower(value))
	case isCollate:
		if c, err := charset.GetCollationByName(strings.ToLower(value)); err == nil {
			return normCharset(c.CharsetName)
		}
		if i := strings.IndexByte(value, '_'); i > 0 {
			return normCharset(strings.ToLower(value[:i]))
		}
	}
	return cur
}

// normCharset names utf8 as MariaDB 10.6+ and MySQL 8 do.
func normCharset(cs string) string {
	if cs == "utf8" {
		return "utf8mb3"
	}
	return cs
}

func normCollation(c string) string {
	if strings.HasPrefix(c, "utf8_") {
		return "utf8mb3_" + c[5:]
	}
	return c
}

func (h *schemaHistory) defaultCharset(k tableKey, opts []*ast.TableOption) string {
	cs := ""
	for _, o := range opts {
		cs = charsetOfOption(o.Tp == ast.TableOptionCharset, o.Tp == ast.TableOptionCollate, o.StrValue, cs)
	}
	if cs == "" {
		cs = h.dbs[k.schema]
	}
	if cs == "" {
		cs = h.serverCharset
	}
	return cs
}

func (h *schemaHistory) createTable(k tableKey, s *ast.CreateTableStmt) (*histTable, error) {
	t := &histTable{charset: h.defaultCharset(k, s.Options), versioned: h.notes.versioning > 0 && !h.notes.period}
	for _, o := range s.Options {
		t.collation = h.collationOfOption(o, t.collation)
	}
	for _, o := range s.Options {
		if o.Tp == ast.TableOptionEngine {
			t.engine = o.StrValue
		}
	}
	t.partitioned = s.Partition != nil
	for _, cd := range s.Cols {
		c, pk := h.column(cd, t)
		if pk {
			t.pk = []string{c.Name}
		}
		t.cols = append(t.cols, c)
		if u := columnUnique(cd); u != nil {
			t.addUnique(u)
		}
	}
	for _, con := range s.Constraints {
		if con.Tp == ast.ConstraintPrimaryKey {
			t.pk = constraintColumns(con)
		}
		u, ok := uniqueFromConstraint(con)
		if !ok {
			return nil, notModelled("a UNIQUE key on an expression, which may be a long unique key with a hidden column")
		}
		if u != nil {
			t.addUnique(u)
		}
	}
	if len(t.cols) == 0 {
		return nil, fmt.Errorf("CREATE TABLE %s has no columns", k)
	}
	if !t.classifyAll(nil) {
		return nil, notModelled(notSureOfKeys)
	}
	return t, nil
}

// notSureOfKeys is why a table whose UNIQUE keys the history cannot
// classify is unknown.
const notSureOfKeys = "a UNIQUE key the history cannot tell is a long unique key (a hash in a hidden column) or not"

// columnUnique is the UNIQUE key a column definition declares, nil for none.
func columnUnique(cd *ast.ColumnDef) *uniqueKey {
	for _, o := range cd.Options {
		if o.Tp == ast.ColumnOptionUniqKey {
			return &uniqueKey{parts: []keyPart{{col: cd.Name.Name.O}}}
		}
	}
	return nil
}

func constraintColumns(con *ast.Constraint) []string {
	var cols []string
	for _, kp := range con.Keys {
		if kp.Column != nil {
			cols = append(cols, kp.Column.Name.O)
		}
	}
	return cols
}

// columnFromDef turns a parsed column definition into a Column (declared
// type and charset; the Table_map supplies the rest) and says whether it
// is declared PRIMARY KEY.
// column is columnFromDef in table t, with the real name of a collation
// the parse read under a stand-in's (renameCollation), and t's default
// collation for a text column that names neither charset nor collation.
func (h *schemaHistory) column(cd *ast.ColumnDef, t *histTable) (Column, bool) {
	c, pk := columnFromDef(cd, t.charset)
	if c.DataType != "json" && namesCollation(cd) {
		// only a collation the text names may be a stand-in's: not
		// JSON's utf8mb4_bin, nor the BINARY attribute's
		c.Collation = h.realCollation(c.Collation)
	}
	if isTextType(c.DataType) && c.Collation == "" && c.Charset == normCharset(t.charset) && !namesCharset(cd) {
		c.Collation = t.collation
	}
	return c, pk
}

// realCollation is a collation's name as the history keeps it, the real
// one of a stand-in's (renameCollation).
func (h *schemaHistory) realCollation(name string) string {
	name = normCollation(strings.ToLower(name))
	if real, ok := h.notes.collations[name]; ok {
		return real
	}
	return name
}

// collationOfOption is the table default collation after table option o,
// cur before it: a CHARACTER SET without COLLATE is its charset's default
// (not known here, ""), a COLLATE names it.
func (h *schemaHistory) collationOfOption(o *ast.TableOption, cur string) string {
	switch o.Tp {
	case ast.TableOptionCharset:
		return ""
	case ast.TableOptionCollate:
		return h.realCollation(o.StrValue)
	}
	return cur
}

// namesCollation reports whether a column definition names its collation.
func namesCollation(cd *ast.ColumnDef) bool {
	if cd.Tp.GetCollate() != "" {
		return true
	}
	for _, o := range cd.Options {
		if o.Tp == ast.ColumnOptionCollate {
			return true
		}
	}
	return false
}

// namesCharset reports whether a column definition names its charset.
func namesCharset(cd *ast.ColumnDef) bool {
	return cd.Tp.GetCharset() != ""
}

func columnFromDef(cd *ast.ColumnDef, tableCharset string) (Column, bool) {
	ft := cd.Tp
	c := Column{Name: cd.Name.Name.O, Unsigned: pmysql.HasUnsignedFlag(ft.GetFlag())}
	cs, coll := ft.GetCharset(), ft.GetCollate()
	pk := false
	for _, o := range cd.Options {
		switch o.Tp {
		case ast.ColumnOptionCollate:
			coll = o.StrValue
		case ast.ColumnOptionPrimaryKey:
			pk = true
		case ast.ColumnOptionGenerated:
			c.Generated = true
		}
	}
	if coll != "" && cs == "" {
		cs = charsetOfOption(false, true, coll, "")
	}
	binary := cs == "binary" || pmysql.HasBinaryFlag(ft.GetFlag()) && ft.GetCharset() == "binary"
	flen, dec := ft.GetFlen(), ft.GetDecimal()
	switch ft.GetType() {
	case pmysql.TypeTiny, pmysql.TypeShort, pmysql.TypeInt24, pmysql.TypeLong, pmysql.TypeLonglong,
		pmysql.TypeDouble, pmysql.TypeYear, pmysql.TypeDate:
		c.DataType = plainTypeName(ft.GetType())
	case pmysql.TypeFloat:
		c.DataType = "float"
		if flen > 24 { // FLOAT(p) with p > 24 is a DOUBLE
			c.DataType = "double"
		}
	case pmysql.TypeNewDecimal:
		c.DataType, c.Precision, c.Scale = "decimal", flen, dec
		if flen <= 0 {
			c.Precision = 10
		}
		if dec < 0 {
			c.Scale = 0
		}
	case pmysql.TypeDuration:
		c.DataType, c.FSP = "time", max(dec, 0)
	case pmysql.TypeDatetime:
		c.DataType, c.FSP = "datetime", max(dec, 0)
	case pmysql.TypeTimestamp:
		c.DataType, c.FSP = "timestamp", max(dec, 0)
	case pmysql.TypeBit:
		c.DataType, c.Length = "bit", flen
		if flen <= 0 {
			c.Length = 1
		}
	case pmysql.TypeJSON:
		c.DataType = "json"
	case pmysql.TypeGeometry:
		c.DataType = "geometry"
	case pmysql.TypeEnum:
		c.DataType, c.Elems = "enum", ft.GetElems()
		if len(c.Elems) == 1 && strings.HasPrefix(c.Elems[0], columnTypeMark) { // see rewriteAtError
			c.DataType, c.Elems = strings.TrimPrefix(c.Elems[0], columnTypeMark), nil
			c.Type = formatType(&c)
			return c, pk
		}
	case pmysql.TypeSet:
		c.DataType, c.Elems = "set", ft.GetElems()
	case pmysql.TypeString:
		c.DataType, c.Length = "char", flen
		if binary {
			c.DataType = "binary"
		}
		if flen < 0 {
			c.Length = 1
		}
	case pmysql.TypeVarchar, pmysql.TypeVarString:
		c.DataType, c.Length = "varchar", flen
		if binary {
			c.DataType = "varbinary"
		}
	case pmysql.TypeTinyBlob:
		c.DataType = blobName(1, binary)
	case pmysql.TypeBlob:
		c.DataType = blobName(2, binary)
		if flen > 0 { // BLOB(n)/TEXT(n) picks the smallest type that holds n
			c.DataType = blobName(blobPackLen(flen), binary)
		}
	case pmysql.TypeMediumBlob:
		c.DataType = blobName(3, binary)
	case pmysql.TypeLongBlob:
		c.DataType = blobName(4, binary)
	default:
		c.DataType = strings.ToLower(types.TypeToStr(ft.GetType(), cs))
	}
	if isTextType(c.DataType) {
		switch {
		case binary:
			cs, coll = "binary", "binary"
		case cs == "":
			cs = tableCharset
		}
		if pmysql.HasBinaryFlag(ft.GetFlag()) && !binary && coll == "" && cs != "" {
			coll = normCharset(cs) + "_bin" // the BINARY attribute: the charset's binary collation
		}
		c.Charset = normCharset(cs)
		// Without a COLLATE the collation is the charset's default on the
		// server (or the table's, see schemaHistory.column): not known here.
		c.Collation = normCollation(strings.ToLower(coll))
	}
	if c.DataType == "json" {
		c.Charset, c.Collation = "utf8mb4", "utf8mb4_bin"
	}
	widenVarchar(&c)
	c.Type = formatType(&c)
	return c, pk
}

// maxVarcharBytes is the most bytes a VARCHAR or VARBINARY column holds.
const maxVarcharBytes = 65535

// widenVarchar gives a VARCHAR or VARBINARY longer than maxVarcharBytes
// the smallest TEXT or BLOB type that holds it, as the server does
// outside strict mode (in strict mode it refuses the statement, which
// the binlog then never holds).
func widenVarchar(c *Column) {
	if c.DataType != "varchar" && c.DataType != "varbinary" {
		return
	}
	binary := c.DataType == "varbinary" || c.Charset == "binary"
	w := charsetWidth(c.Charset)
	if binary {
		w = 1
	}
	if w == 0 || c.Length*w <= maxVarcharBytes {
		return
	}
	c.DataType = blobName(blobPackLen(c.Length*w), binary)
	c.Length = 0
}

func blobPackLen(n int) int {
	switch {
	case n < 1<<8:
		return 1
	case n < 1<<16:
		return 2
	case n < 1<<24:
		return 3
	}
	return 4
}

// isTextType: the types that carry a charset (binary strings included).
func isTextType(dt string) bool {
	switch dt {
	case "char", "varchar", "binary", "varbinary", "enum", "set",
		"tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob":
		return true
	}
	return false
}

func (h *schemaHistory) alterTable(db string, s *ast.AlterTableStmt, ch *ddlChange) error {
	k := tableKeyOf(db, s.Table)
	ch.touched = append(ch.touched, k)
	old := h.tables[k]
	if old == nil {
		if _, ok := h.unknown[k]; !ok {
			h.unknown[k] = "altered, but the schema before the ALTER is unknown"
		}
		// A rename still moves the (unknown) table.
		for _, sp := range s.Specs {
			if sp.Tp == ast.AlterTableRenameTable {
				to := tableKeyOf(db, sp.NewTable)
				h.move(k, to)
				ch.touched = append(ch.touched, to)
				k = to
			}
		}
		h.convertPartition(db, k, nil, ch)
		return nil
	}
	t := old.clone()
	switch {
	case h.notes.versioning > 0 && !h.notes.period:
		t.versioned = true
	case h.notes.versioning < 0 && !t.versioned:
		// Declared row start and end columns, or none the history
		// knows of: which columns the DROP took is not proven.
		delete(h.tables, k)
		h.unknown[k] = "DROP SYSTEM VERSIONING of a table whose row start and end columns are declared: the columns dropped are not known"
		return nil
	case h.notes.versioning < 0:
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
			t.charset = charsetOfOption(o.Tp == ast.TableOptionCharset, o.Tp == ast.TableOptionCollate, o.StrValue, "")
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
			delete(h.tables, k)
			delete(h.unknown, k)
			ch.touched = append(ch.touched, to)
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
	delete(h.unknown, k)
	h.tables[k] = t
	h.convertPartition(db, k, t, ch)
	return nil
}

// convertPartition applies MariaDB's ALTER TABLE k CONVERT PARTITION p TO
// TABLE name (name is created with k's columns, t; unknown when t is
// nil) and CONVERT TABLE name TO PARTITION p (name is gone), which
// parseRewriting noted.
func (h *schemaHistory) convertPartition(db string, k tableKey, t *histTable, ch *ddlChange) {
	if h.notes.convertTo != "" {
		to := tableKeyOfName(db, h.notes.convertTo)
		ch.touched = append(ch.touched, to)
		delete(h.tables, to)
		delete(h.unknown, to)
		if t != nil {
			h.tables[to] = t
		} else {
			h.unknown[to] = "made from a partition of " + k.String() + ", whose schema is unknown"
		}
	}
	if h.notes.convertFrom != "" {
		from := tableKeyOfName(db, h.notes.convertFrom)
		ch.touched = append(ch.touched, from)
		delete(h.tables, from)
		delete(h.unknown, from)
	}
}

// notModelled is an ALTER TABLE the server runs in a way the history
// does not model: its table becomes unknown.
type notModelled string

func (e notModelled) Error() string { return string(e) }

// alterUnknown makes the table an ALTER TABLE alters (and renames)
// unknown, for why.
func (h *schemaHistory) alterUnknown(db string, k tableKey, s *ast.AlterTableStmt, ch *ddlChange, why string) {
	delete(h.tables, k)
	for _, sp := range s.Specs {
		if sp.Tp == ast.AlterTableRenameTable {
			k = tableKeyOf(db, sp.NewTable)
			ch.touched = append(ch.touched, k)
		}
	}
	delete(h.tables, k)
	h.unknown[k] = why
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
func (h *schemaHistory) alterColumns(t *histTable, specs []*ast.AlterTableSpec, k tableKey) (how []defined, err error) {
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
func (t *histTable) convertTo(cs, coll string, how []defined) {
	for i := range t.cols {
		c := &t.cols[i]
		if i < len(how) && how[i] != notDefined {
			if isTextType(c.DataType) && c.Charset != "binary" || c.DataType == "json" {
				c.Charset, c.Collation = cs, coll
				if how[i] == definedBinary {
					c.Collation = normCharset(cs) + "_bin"
				}
				widenVarchar(c)
				c.Type = formatType(c)
			}
			continue
		}
		if c.DataType == "json" {
			// MariaDB's JSON is a LONGTEXT, which CONVERT TO converts
			// (MySQL's is not text: merge gives it its charset back).
			c.Charset, c.Collation = cs, coll
			continue
		}
		if !isTextType(c.DataType) || c.Charset == "binary" {
			continue
		}
		if oldW, newW := charsetWidth(c.Charset), charsetWidth(cs); oldW > 0 && newW > oldW {
			c.DataType = widerText(c.DataType, oldW, newW)
		}
		c.Charset, c.Collation = cs, coll
		widenVarchar(c)
		c.Type = formatType(c)
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

func (t *histTable) find(name string) int { return columnIndex(t.cols, name) }

// ddlTargets finds the tables a DDL statement names when the parser
// cannot read it, so that they become unknown rather than stale.
func ddlTargets(db, sql string) []tableKey {
	var keys []tableKey
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
			if i := strings.Index(strings.ToUpper(rest), " RENAME "); i >= 0 {
				to := strings.Fields(rest[i+8:])
				if len(to) > 0 && (strings.EqualFold(to[0], "TO") || strings.EqualFold(to[0], "AS")) {
					to = to[1:]
				}
				if len(to) > 0 {
					keys = append(keys, parseTableName(db, strings.TrimRight(to[0], ",;")))
				}
			}
		}
	}
	return keys
}

var ddlTargetRE = regexp.MustCompile(`(?is)^(CREATE|ALTER|DROP|RENAME|TRUNCATE)\s+(?:OR\s+REPLACE\s+)?(?:ONLINE\s+)?(?:IGNORE\s+)?(?:TEMPORARY\s+)?(?:TABLES?|SEQUENCE)\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?(.*)$`)

var dropDatabaseRE = regexp.MustCompile("(?is)^DROP\\s+(?:DATABASE|SCHEMA)\\s+(?:IF\\s+EXISTS\\s+)?`?([^`\\s;]+)`?")

func dropDatabaseTarget(sql string) string {
	if m := dropDatabaseRE.FindStringSubmatch(string(skipSQLSpaceAndComments([]byte(sql)))); m != nil {
		return m[1]
	}
	return ""
}

func parseTableName(db, s string) tableKey {
	if i := strings.Index(s, "/*"); i > 0 { // `d`.`t`/* a comment */
		s = s[:i]
	}
	s = strings.TrimRight(strings.TrimSpace(s), ";")
	parts := strings.SplitN(s, ".", 2)
	unq := func(x string) string { return strings.Trim(x, "`\"") }
	if len(parts) == 2 {
		return tableKey{unq(parts[0]), unq(parts[1])}
	}
	return tableKey{db, unq(s)}
}

// serverCollation reads collation_server from a Query event's status
// variables (Q_CHARSET_CODE: character_set_client, collation_connection,
// collation_server, two bytes each): the default a CREATE DATABASE without
// a charset got. 0 when the event does not say.
func serverCollation(vars []byte) uint64 {
	v := statusVar(vars, 4)
	if len(v) < 6 {
		return 0
	}
	return uint64(v[4]) | uint64(v[5])<<8
}

// clientCollation reads character_set_client from a Query event's status
// variables (Q_CHARSET_CODE): the charset of its text. 0 when the event
// does not say.
func clientCollation(vars []byte) uint64 {
	v := statusVar(vars, 4)
	if len(v) < 6 {
		return 0
	}
	return uint64(v[0]) | uint64(v[1])<<8
}

// statementText is a Query event's text in UTF-8, decoded from the
// client charset it was sent in (cs): the server reads names in it that
// way. Text that does not decode is returned as it is.
func statementText(q []byte, cs string) string {
	if isUTF8Charset(cs) || cs == "binary" || isASCII(string(q)) {
		return string(q)
	}
	if s, ok := decodeText(q, cs).(string); ok && !strings.ContainsRune(s, utf8.RuneError) {
		return s
	}
	return string(q)
}

// sqlModeOf reads the sql_mode a Query event's statement ran under from
// its status variables (Q_SQL_MODE_CODE), 0 when the event does not say.
func sqlModeOf(vars []byte) uint64 {
	v := statusVar(vars, 1)
	if len(v) < 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(v)
}

// parserModes are the sql_mode flags that change how a DDL statement
// reads ("quoted" names, backslashes in strings, REAL); MariaDB's and
// MySQL's bits are the TiDB parser's.
const parserModes = pmysql.ModeRealAsFloat | pmysql.ModePipesAsConcat | pmysql.ModeANSIQuotes |
	pmysql.ModeIgnoreSpace | pmysql.ModeNoBackslashEscapes | pmysql.ModeHighNotPrecedence

// statusVar is the value of status variable want in a Query event's
// status variables, nil when they do not have it or cannot be read that
// far.
func statusVar(vars []byte, want byte) []byte {
	for len(vars) > 0 {
		code := vars[0]
		vars = vars[1:]
		n := 0
		switch code {
		case 0, 3, 10: // Q_FLAGS2_CODE, Q_AUTO_INCREMENT, Q_MASTER_DATA_WRITTEN_CODE
			n = 4
		case 1, 9, 17: // Q_SQL_MODE_CODE, Q_TABLE_MAP_FOR_UPDATE_CODE, Q_DDL_LOGGED_WITH_XID
			n = 8
		case 2: // Q_CATALOG_CODE: length, text, NUL
			if len(vars) < 1 {
				return nil
			}
			n = 1 + int(vars[0]) + 1
		case 4: // Q_CHARSET_CODE: three collation ids
			n = 6
		case 5, 6: // Q_TIME_ZONE_CODE, Q_CATALOG_NZ_CODE: length, text
			if len(vars) < 1 {
				return nil
			}
			n = 1 + int(vars[0])
		case 7, 8, 18: // Q_LC_TIME_NAMES_CODE, Q_CHARSET_DATABASE_CODE, Q_DEFAULT_COLLATION_FOR_UTF8MB4
			n = 2
		case 11: // Q_INVOKER: user and host, each with a length byte
			if len(vars) < 1 || len(vars) < 2+int(vars[0]) {
				return nil
			}
			n = 1 + int(vars[0]) + 1 + int(vars[1+int(vars[0])])
		case 13, 128: // Q_MICROSECONDS, MariaDB's Q_HRNOW
			n = 3
		case 16, 19, 20, 130: // one byte each
			n = 1
		case 129: // MariaDB's Q_XID
			n = 8
		default: // Q_UPDATED_DB_NAMES and unknown codes: their length is not known here
			return nil
		}
		if n > len(vars) {
			return nil
		}
		if code == want {
			return vars[:n]
		}
		vars = vars[n:]
	}
	return nil
}
