package ddl

import (
	"fmt"
	"regexp"
	"strings"

	lcharset "github.com/binlogstream/binlogstream/internal/charset"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/charset"
	pmysql "github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // the parser panics without a value driver
)

// Parse parses with the TiDB parser (go-mysql's own dependency),
// turning its panics (on some inputs) into errors. MariaDB's
// CREATE OR REPLACE TABLE is read as DROP + CREATE. Syntax the parser
// does not know is rewritten first (see Notes for what that takes out);
// mode holds the sql_mode flags the statement ran under (ParserModes).
func Parse(sql string, mode pmysql.SQLMode) (stmts []ast.StmtNode, notes Notes, err error) {
	defer func() {
		if r := recover(); r != nil {
			stmts, notes, err = nil, Notes{}, fmt.Errorf("parser panic: %v", r)
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
func parseRewriting(text string, mode pmysql.SQLMode) (stmts []ast.StmtNode, notes Notes, err error) {
	if national, ok := rewriteNational(text); ok {
		if stmts, notes, err := parseRewritingWords(national, mode); err == nil {
			return stmts, notes, nil
		}
		// A word taken for a national type was a name (a column called
		// nchar): the text as written, national types read as CHAR.
	}
	return parseRewritingWords(text, mode)
}

func parseRewritingWords(text string, mode pmysql.SQLMode) (stmts []ast.StmtNode, notes Notes, err error) {
	p := parser.New()
	p.SetSQLMode(mode)
	for range maxRewrites {
		stmts, _, err = p.ParseSQL(text)
		if err == nil {
			return stmts, notes, nil
		}
		if next, standIn, real, ok := renameCollation(text, err); ok {
			if notes.Collations == nil {
				notes.Collations = map[string]string{}
			}
			notes.Collations[standIn], text = real, next
			continue
		}
		next, ok := rewriteAtError(text, err, &notes)
		if !ok {
			return nil, Notes{}, err
		}
		text = next
	}
	return nil, Notes{}, fmt.Errorf("more than %d words of column syntax the schema parser does not know", maxRewrites)
}

// Notes are what parseRewriting took out of a statement that matters
// to its columns.
type Notes struct {
	// Collations give the real name of each collation the parse read
	// under a stand-in's.
	Collations map[string]string
	// Versioning is +1 for WITH or ADD SYSTEM VERSIONING (MariaDB), -1 for
	// DROP SYSTEM VERSIONING; Period says the statement declares the
	// row start and end columns itself (AS ROW START, AS ROW END, PERIOD
	// FOR SYSTEM_TIME) rather than leaving them implicit.
	Versioning int
	Period     bool
	// periods are the columns of each application-time period the
	// statement declares (PERIOD FOR name (start, end)), by lower-case
	// name, as "end, start": the columns a key's WITHOUT OVERLAPS adds.
	periods map[string]string
	// ConvertTo is the table an ALTER TABLE ... CONVERT PARTITION p TO
	// TABLE name creates with the altered table's columns, ConvertFrom
	// the one CONVERT TABLE name TO PARTITION ... moves into it (as
	// written, maybe qualified and quoted).
	ConvertTo, ConvertFrom string
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
	return b.String(), lcharset.NormalizeCollation(standIn), lcharset.NormalizeCollation(real), true
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

// createOrReplaceRE matches MariaDB's CREATE OR REPLACE TABLE and
// CREATE OR REPLACE SEQUENCE.
var createOrReplaceRE = regexp.MustCompile(`(?i)^\s*CREATE\s+OR\s+REPLACE\s+(TABLE|SEQUENCE)`)

// ParserModes are the sql_mode flags that change how a DDL statement
// reads ("quoted" names, backslashes in strings, REAL); MariaDB's and
// MySQL's bits are the TiDB parser's.
const ParserModes = pmysql.ModeRealAsFloat | pmysql.ModePipesAsConcat | pmysql.ModeANSIQuotes |
	pmysql.ModeIgnoreSpace | pmysql.ModeNoBackslashEscapes | pmysql.ModeHighNotPrecedence

// IsCreateOrReplace reports whether sql is MariaDB's CREATE OR REPLACE
// TABLE or SEQUENCE, which drops the table it replaces even when it fails.
func IsCreateOrReplace(sql string) bool {
	return createOrReplaceRE.MatchString(string(skipSQLSpaceAndComments([]byte(sql))))
}
