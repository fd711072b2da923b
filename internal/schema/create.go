package schema

import (
	"fmt"
	"strings"

	"github.com/binlogstream/binlogstream/internal/charset"
	"github.com/binlogstream/binlogstream/internal/ddl"
	"github.com/pingcap/tidb/pkg/parser/ast"
	pmysql "github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/types"
)

func (h *History) createTable(k ddl.Key, s *ast.CreateTableStmt) (*Table, error) {
	t := &Table{charset: h.defaultCharset(k, s.Options), versioned: h.notes.Versioning > 0 && !h.notes.Period}
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
func (h *History) column(cd *ast.ColumnDef, t *Table) (Column, bool) {
	c, pk := columnFromDef(cd, t.charset)
	if c.DataType != "json" && namesCollation(cd) {
		// only a collation the text names may be a stand-in's: not
		// JSON's utf8mb4_bin, nor the BINARY attribute's
		c.Collation = h.realCollation(c.Collation)
	}
	if IsTextType(c.DataType) && c.Collation == "" && c.Charset == charset.Normalize(t.charset) && !namesCharset(cd) {
		c.Collation = t.collation
	}
	return c, pk
}

// realCollation is a collation's name as the history keeps it, the real
// one of a stand-in's (renameCollation).
func (h *History) realCollation(name string) string {
	name = charset.NormalizeCollation(strings.ToLower(name))
	if real, ok := h.notes.Collations[name]; ok {
		return real
	}
	return name
}

// collationOfOption is the table default collation after table option o,
// cur before it: a CHARACTER SET without COLLATE is its charset's default
// (not known here, ""), a COLLATE names it.
func (h *History) collationOfOption(o *ast.TableOption, cur string) string {
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
	c := Column{Name: cd.Name.Name.O, Unsigned: pmysql.HasUnsignedFlag(ft.GetFlag()), Nullable: true}
	cs, coll := ft.GetCharset(), ft.GetCollate()
	pk := false
	for _, o := range cd.Options {
		switch o.Tp {
		case ast.ColumnOptionCollate:
			coll = o.StrValue
		case ast.ColumnOptionPrimaryKey:
			pk, c.Nullable = true, false
		case ast.ColumnOptionNotNull:
			c.Nullable = false
		case ast.ColumnOptionNull:
			c.Nullable = true
		case ast.ColumnOptionGenerated:
			c.Generated = true
		}
	}
	if coll != "" && cs == "" {
		cs = CharsetOfOption(false, true, coll, "")
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
		if len(c.Elems) == 1 && strings.HasPrefix(c.Elems[0], ddl.ColumnTypeMark) { // see ddl.Parse
			c.DataType, c.Elems = strings.TrimPrefix(c.Elems[0], ddl.ColumnTypeMark), nil
			c.Type = FormatType(&c)
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
	if IsTextType(c.DataType) {
		switch {
		case binary:
			cs, coll = "binary", "binary"
		case cs == "":
			cs = tableCharset
		}
		if pmysql.HasBinaryFlag(ft.GetFlag()) && !binary && coll == "" && cs != "" {
			coll = charset.Normalize(cs) + "_bin" // the BINARY attribute: the charset's binary collation
		}
		c.Charset = charset.Normalize(cs)
		// Without a COLLATE the collation is the charset's default on the
		// server (or the table's, see History.column): not known here.
		c.Collation = charset.NormalizeCollation(strings.ToLower(coll))
	}
	if c.DataType == "json" {
		c.Charset, c.Collation = "utf8mb4", "utf8mb4_bin"
	}
	widenVarchar(&c)
	c.Type = FormatType(&c)
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
	w := charset.Width(c.Charset)
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

// IsTextType reports whether dt is a type that carries a charset (binary
// strings included).
func IsTextType(dt string) bool {
	switch dt {
	case "char", "varchar", "binary", "varbinary", "enum", "set",
		"tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob":
		return true
	}
	return false
}
