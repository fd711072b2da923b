package ddl

import (
	"regexp"
	"strconv"
	"strings"

	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // the parser panics without a value driver
)

// ColumnTypeMark begins the only member of the ENUM that stands for a
// column type the TiDB parser does not know (MariaDB's UUID, INET6 and
// INET4; the spatial types); the schema history reads the type back from it.
const ColumnTypeMark = "\x1fbinlogstream-type:"

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
//     only member carries its name (ColumnTypeMark);
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
//   - MariaDB's system versioning goes, noted in notes (see Notes and
//     the schema history's versioned tables): [WITH|WITHOUT|ADD|DROP] SYSTEM VERSIONING,
//     [GENERATED ALWAYS] AS ROW START|END, PERIOD FOR name (start, end);
//   - COMPRESSED[=zlib] goes (the column keeps its type; the binlog gives
//     it a type code of its own, which the Table_map check takes);
//   - BYTE, ASCII and UNICODE (MariaDB) become CHARACTER SET binary,
//     latin1 and ucs2; MySQL 8's column [SECONDARY_]ENGINE_ATTRIBUTE and
//     ALTER [COLUMN] c SET [IN]VISIBLE go;
//   - an application-time period's DROP PERIOD FOR name goes, and a key's
//     "period WITHOUT OVERLAPS" becomes the period's end and start columns;
//   - MariaDB's CONVERT PARTITION p TO TABLE t and CONVERT TABLE t TO
//     PARTITION ... go, noted (Notes.ConvertTo, Notes.ConvertFrom).
//
// Anything else is left to fail. A syntax error gives where the parser
// stopped: its "near" text is the statement from there on (its length,
// when cut).
func rewriteAtError(text string, err error, notes *Notes) (string, bool) {
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
		return text[:off] + "ENUM('" + ColumnTypeMark + w + "')" + rest, true
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
		notes.Period = true
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
func rewriteVersioning(text string, off int, rest string, notes *Notes) (string, bool) {
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
		notes.Versioning = 1
		return text[:verb] + rest, true
	case "without":
		return text[:verb] + rest, true
	case "add":
		notes.Versioning = 1
		return text[:verb] + "FORCE" + rest, true
	case "drop":
		notes.Versioning = -1
		return text[:verb] + "FORCE" + rest, true
	}
	return "", false
}

// dropPeriod takes out the PERIOD FOR name (start, end) at text[at:]
// (its columns stay): from a CREATE's list with its comma, an ALTER's
// ADD PERIOD as FORCE.
func dropPeriod(text string, at int, notes *Notes) (string, bool) {
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
		notes.Period = true
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
func withoutOverlaps(text string, off int, rest string, notes *Notes) (string, bool) {
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
// the schema history's convertPartition).
func convertPartition(text string, c int, w, after string, notes *Notes) (string, bool) {
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
		notes.ConvertTo = name
		return text[:c] + "FORCE" + s[len(name):], true
	}
	name := leadingName(after)
	if _, ok := words(skipSpaces(after[len(name):]), "to", "partition"); !ok || name == "" {
		return "", false
	}
	// the partition's definition runs to the end of the statement
	notes.ConvertFrom = name
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

// KeyOfName is the table a leadingName names, in db when it is not
// qualified.
func KeyOfName(db, name string) Key {
	if n := namePart(name); n < len(name) && name[n] == '.' {
		return Key{unquoteName(name[:n]), unquoteName(name[n+1:])}
	}
	return Key{db, unquoteName(name)}
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
