package chunkread

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unsafe"

	"github.com/binlogstream/binlogstream/internal/charset"
	"github.com/binlogstream/binlogstream/internal/schema"
)

// Table is what a read needs of a table: its name, the columns it
// selects and the key it reads them in the order of.
type Table struct {
	Schema, Name string
	// Columns are the columns read, in the SELECT's order.
	Columns []schema.Column
	// Key are the indexes in Columns of the key's columns, in the
	// index's order; Kinds says how each compares.
	Key   []int
	Kinds []KeyKind
	// Index is the key's index name ("PRIMARY" for the primary key).
	Index string
	// Extra values, each Fill, end every row read: columns of the row
	// image that cannot be selected (MariaDB's long unique key hashes).
	Extra int
	Fill  any

	selectList, orderBy string
	// floats are the FLOAT columns: selected as DOUBLE, whose text
	// is exact where a FLOAT's is cut to 6 digits, and read back as
	// float32 (the binlog's form).
	floats []int
	// named are the columns read as text that the binlog holds in
	// another form (binlogRow): ENUM, SET, UUID, INET6 and INET4.
	named []int
}

// NewTable is the table schema.name of cols read by the key of the
// named columns, whose index is named index.
func NewTable(schemaName, name string, cols []schema.Column, key []string, index string) (*Table, error) {
	t := &Table{Schema: schemaName, Name: name, Columns: cols, Index: index}
	var sel, order []string
	for j, c := range cols {
		switch c.DataType {
		case "enum", "set", "uuid", "inet6", "inet4":
			t.named = append(t.named, j)
		}
		if c.DataType == "float" {
			sel = append(sel, "CAST("+QuoteIdent(c.Name)+" AS DOUBLE)")
			t.floats = append(t.floats, j)
			continue
		}
		sel = append(sel, QuoteIdent(c.Name))
	}
	for _, c := range key {
		i := schema.ColumnIndex(cols, c)
		if i < 0 {
			return nil, fmt.Errorf("key column %s not found", c)
		}
		k, err := KindOf(&cols[i])
		if err != nil {
			return nil, fmt.Errorf("key column %s: %w", c, err)
		}
		t.Key, t.Kinds = append(t.Key, i), append(t.Kinds, k)
		order = append(order, QuoteIdent(c))
	}
	if len(t.Key) == 0 {
		return nil, errors.New("no key columns")
	}
	t.selectList, t.orderBy = strings.Join(sel, ", "), strings.Join(order, ", ")
	return t, nil
}

// ID is "schema.table".
func (t *Table) ID() string { return t.Schema + "." + t.Name }

// KeyKind says how a key column's values compare.
type KeyKind uint8

const (
	Int     KeyKind = iota // int64/uint64
	Decimal                // decimal text
	Bytes                  // byte order: binary strings, fixed-format temporal text
	Time                   // TIME: microseconds
	BinText                // a UTF-8 _bin collation: byte order after trailing spaces go
	Weight                 // the server's WEIGHT_STRING
)

// KindOf is how a key column of c's type compares.
func KindOf(c *schema.Column) (KeyKind, error) {
	switch c.DataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year":
		return Int, nil
	case "decimal":
		return Decimal, nil
	case "date", "datetime", "timestamp":
		return Bytes, nil
	case "time":
		return Time, nil
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return Bytes, nil
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		if c.Charset == "binary" {
			return Bytes, nil
		}
		if charset.IsUTF8(c.Charset) || c.Charset == "ascii" {
			if strings.HasSuffix(c.Collation, "_bin") {
				return BinText, nil
			}
		}
		if c.Collation == "" {
			return 0, errors.New("its collation is unknown")
		}
		return Weight, nil
	}
	return 0, fmt.Errorf("type %s has no key order this package reproduces", c.DataType)
}

// QuoteIdent quotes an identifier with backquotes.
func QuoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// QuoteName is `schema`.`table`.
func QuoteName(schemaName, table string) string {
	return QuoteIdent(schemaName) + "." + QuoteIdent(table)
}

// Literal is key column j's value raw (int64, uint64, or the value's
// bytes) as SQL, in the column's type and collation.
func (t *Table) Literal(j int, raw any) (string, error) {
	c := &t.Columns[t.Key[j]]
	switch x := raw.(type) {
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case []byte:
		lit := "X'" + hex.EncodeToString(x) + "'"
		switch t.Kinds[j] {
		case BinText, Weight:
			return "CONVERT(_utf8mb4 " + lit + " USING " + c.Charset + ") COLLATE " + c.Collation, nil
		case Bytes:
			if c.Charset == "binary" {
				return lit, nil
			}
			return "CAST(" + lit + " AS CHAR CHARACTER SET ascii)", nil
		case Decimal:
			// A numeric literal with a point is an exact DECIMAL; a
			// string would compare as a double.
			if len(x) == 0 || strings.Trim(string(x), "-+0123456789.") != "" {
				return "", fmt.Errorf("DECIMAL key value %q of %s", x, t.ID())
			}
			return string(x), nil
		case Time:
			return "CAST(" + lit + " AS TIME(6))", nil
		}
	}
	return "", fmt.Errorf("key value %T of %s does not fit its column", raw, t.ID())
}

// compare is the WHERE condition "key op b" (op ">" or "<") as the
// index orders it, with equality allowed when orEqual.
func (t *Table) compare(b []any, op string, orEqual bool) (string, error) {
	if len(b) != len(t.Key) {
		return "", fmt.Errorf("boundary of %s has %d values for a key of %d columns", t.ID(), len(b), len(t.Key))
	}
	lits := make([]string, len(b))
	for j := range b {
		var err error
		if lits[j], err = t.Literal(j, b[j]); err != nil {
			return "", err
		}
	}
	return t.compareTo(lits, op, orEqual), nil
}

// compareTo is compare with the boundary's values as SQL expressions.
func (t *Table) compareTo(lits []string, op string, orEqual bool) string {
	cond := ""
	for j := len(t.Key) - 1; j >= 0; j-- {
		lit := lits[j]
		col := QuoteIdent(t.Columns[t.Key[j]].Name)
		switch {
		case cond == "" && orEqual:
			cond = col + " " + op + "= " + lit
		case cond == "":
			cond = col + " " + op + " " + lit
		default:
			cond = col + " " + op + " " + lit + " OR (" + col + " = " + lit + " AND (" + cond + "))"
		}
	}
	return cond
}

// Range is a key range: the rows whose key is after After (nil: from
// the first) and at most Through (nil: to the last), the first Limit of
// them (0: all). Keys are given as Literal takes them.
type Range struct {
	After, Through []any
	Limit          int
}

// Query is the SELECT of rg's rows of t, in key order.
func (t *Table) Query(rg Range) (string, error) {
	return t.query(t.selectList, rg, 0)
}

// KeyQuery is the SELECT of the key columns of the row offset places
// after rg.After (0: the first after it), read from the key's index
// alone.
func (t *Table) KeyQuery(after []any, offset int) (string, error) {
	return t.query(t.orderBy, Range{After: after, Limit: 1}, offset)
}

func (t *Table) query(list string, rg Range, offset int) (string, error) {
	var conds []string
	if rg.After != nil {
		cond, err := t.compare(rg.After, ">", false)
		if err != nil {
			return "", err
		}
		conds = append(conds, cond)
	}
	if rg.Through != nil {
		cond, err := t.compare(rg.Through, "<", true)
		if err != nil {
			return "", err
		}
		conds = append(conds, cond)
	}
	return t.selectWhere(list, conds, rg.Limit, offset), nil
}

// selectWhere is the SELECT of list from t by its key's index, where
// every condition of conds holds, in key order, limit rows (0: all)
// after offset.
func (t *Table) selectWhere(list string, conds []string, limit, offset int) string {
	q := "SELECT " + list + " FROM " + QuoteName(t.Schema, t.Name) + " FORCE INDEX (" + QuoteIdent(t.Index) + ")"
	switch len(conds) {
	case 1:
		q += " WHERE " + conds[0]
	case 2:
		q += " WHERE (" + conds[0] + ") AND (" + conds[1] + ")"
	}
	q += " ORDER BY " + t.orderBy
	if limit > 0 {
		q += " LIMIT " + strconv.Itoa(limit)
	}
	if offset > 0 {
		q += " OFFSET " + strconv.Itoa(offset)
	}
	return q
}

// member is the index of the member of elems spelled b, or -1.
func member(elems []string, b []byte) int {
	for j, e := range elems {
		if e == string(b) { // compared in place
			return j
		}
	}
	return -1
}

// binlogRow turns, in place, the values a SELECT gives in other forms
// than the binlog's row image: ENUM and SET members (read as their names)
// to the index and bitmask, MariaDB's UUID, INET6 and INET4 (read as
// their text) to their bytes. Table.Value turns them back for a reader.
func (t *Table) binlogRow(row []any) {
	for _, i := range t.named {
		c := &t.Columns[i]
		var b []byte
		switch v := row[i].(type) {
		case string:
			b = unsafe.Slice(unsafe.StringData(v), len(v)) // only read
		case []byte:
			b = v
		default:
			continue
		}
		switch c.DataType {
		case "enum":
			if len(c.Elems) > 0 {
				row[i] = int64(member(c.Elems, b) + 1)
			}
		case "set":
			if len(c.Elems) > 0 {
				var m int64
				for len(b) > 0 {
					e, rest, _ := bytes.Cut(b, []byte{','})
					if j := member(c.Elems, e); j >= 0 {
						m |= 1 << j
					}
					b = rest
				}
				row[i] = m
			}
		case "uuid":
			if b, err := hex.DecodeString(strings.ReplaceAll(string(b), "-", "")); err == nil && len(b) == 16 {
				row[i] = b
			}
		case "inet6", "inet4":
			if a, err := netip.ParseAddr(string(b)); err == nil {
				if c.DataType == "inet4" && a.Is4() {
					b := a.As4()
					row[i] = b[:]
				} else if c.DataType == "inet6" {
					b := a.As16()
					row[i] = b[:]
				}
			}
		}
	}
}
