// Package verify is the pure core of a copy's verification: given the
// rows of one key range as read from a source and from a target, both in
// the key's order, it computes a checksum per side and, when they differ,
// the differences row by row. Values compare as stored, byte for byte:
// no collation, no rounding, so a letter's case, a trailing space, a
// DOUBLE's last bit and a microsecond are all differences. It does no I/O.
package verify

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Kind is what a difference is.
type Kind uint8

const (
	// Missing: the source has the key, the target does not.
	Missing Kind = iota + 1
	// Extra: the target has the key, the source does not.
	Extra
	// Changed: both have the key, some column's value differs.
	Changed
)

func (k Kind) String() string {
	switch k {
	case Missing:
		return "missing"
	case Extra:
		return "extra"
	case Changed:
		return "changed"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Table is what a comparison needs of a table.
type Table struct {
	// Name is reported with each difference ("schema.table").
	Name string
	// Columns are the rows' column names, in the rows' order.
	Columns []string
	// Key are the indexes in Columns of the key's columns.
	Key []int
	// Compare orders two keys (Side.Keys values) as the index does:
	// negative, 0, positive. Equal keys are the same row, even where
	// their bytes differ (a case-insensitive key's 'a' and 'A').
	Compare func(a, b []any) int
}

// Side is one side's rows of a key range, in the key's order.
type Side struct {
	Rows [][]any
	// Keys[i] is the comparable form of Rows[i]'s key (what
	// Table.Compare takes).
	Keys [][]any
}

// Diff is one difference.
type Diff struct {
	Table string
	// Key is the row's key values as read: the source row's for Missing
	// and Changed, the target row's for Extra.
	Key  []any
	Kind Kind
	// Columns, for Changed, are exactly the columns whose values differ,
	// in the table's order.
	Columns []string
	// Src is the index of the source's row in its Side (-1 for Extra).
	Src int
}

// Sum is a chunk's checksum.
type Sum [sha256.Size]byte

// Checksum is the checksum of rows: equal for two row sets exactly when
// they hold the same rows in the same order with the same values, as
// Equal compares them (but for a hash collision).
func Checksum(rows [][]any) Sum {
	h := sha256.New()
	var buf []byte
	for _, row := range rows {
		buf = binary.AppendUvarint(buf[:0], uint64(len(row)))
		for _, v := range row {
			buf = appendValue(buf, v)
		}
		h.Write(buf)
	}
	var s Sum
	h.Sum(s[:0])
	return s
}

// Equal reports whether two values are the same as stored: the same
// bytes for text and binary strings (string and []byte alike), the same
// integer, the same bits of a float of the same width, both NULL.
func Equal(a, b any) bool {
	return string(appendValue(nil, a)) == string(appendValue(nil, b))
}

// Value tags of the canonical encoding.
const (
	tagNull byte = iota
	tagInt       // int64 and uint64 of the same value encode alike
	tagNegInt
	tagFloat32
	tagFloat64
	tagBytes
	tagBool
	tagTime
	tagOther
)

// appendValue appends v's canonical encoding: a tag, then a length or a
// fixed width, so that no two different values encode alike.
func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, tagNull)
	case int64:
		return appendInt(b, x)
	case int:
		return appendInt(b, int64(x))
	case int32:
		return appendInt(b, int64(x))
	case int16:
		return appendInt(b, int64(x))
	case int8:
		return appendInt(b, int64(x))
	case uint64:
		return binary.BigEndian.AppendUint64(append(b, tagInt), x)
	case uint:
		return binary.BigEndian.AppendUint64(append(b, tagInt), uint64(x))
	case uint32:
		return binary.BigEndian.AppendUint64(append(b, tagInt), uint64(x))
	case uint16:
		return binary.BigEndian.AppendUint64(append(b, tagInt), uint64(x))
	case uint8:
		return binary.BigEndian.AppendUint64(append(b, tagInt), uint64(x))
	case float32:
		return binary.BigEndian.AppendUint32(append(b, tagFloat32), math.Float32bits(x))
	case float64:
		return binary.BigEndian.AppendUint64(append(b, tagFloat64), math.Float64bits(x))
	case string:
		b = binary.AppendUvarint(append(b, tagBytes), uint64(len(x)))
		return append(b, x...)
	case []byte:
		b = binary.AppendUvarint(append(b, tagBytes), uint64(len(x)))
		return append(b, x...)
	case bool:
		if x {
			return append(b, tagBool, 1)
		}
		return append(b, tagBool, 0)
	case time.Time:
		s := x.Format(time.RFC3339Nano)
		b = binary.AppendUvarint(append(b, tagTime), uint64(len(s)))
		return append(b, s...)
	}
	s := fmt.Sprintf("%T:%v", v, v)
	b = binary.AppendUvarint(append(b, tagOther), uint64(len(s)))
	return append(b, s...)
}

func appendInt(b []byte, x int64) []byte {
	if x < 0 {
		return binary.BigEndian.AppendUint64(append(b, tagNegInt), uint64(x))
	}
	return binary.BigEndian.AppendUint64(append(b, tagInt), uint64(x))
}

// Compare compares src and dst of one key range of t: equal when their
// checksums agree, otherwise every difference, in key order.
func Compare(t *Table, src, dst Side) (equal bool, diffs []Diff, err error) {
	if Checksum(src.Rows) == Checksum(dst.Rows) {
		return true, nil, nil
	}
	diffs, err = RowDiffs(t, src, dst)
	return len(diffs) == 0, diffs, err
}

// RowDiffs compares src and dst row by row, merging them in key order.
// It fails when a side is not in key order, holds a key twice, or a row
// has not every column.
func RowDiffs(t *Table, src, dst Side) ([]Diff, error) {
	for _, s := range []struct {
		name string
		side Side
	}{{"source", src}, {"target", dst}} {
		if len(s.side.Keys) != len(s.side.Rows) {
			return nil, fmt.Errorf("verify %s: %s has %d rows and %d keys", t.Name, s.name, len(s.side.Rows), len(s.side.Keys))
		}
		for i, row := range s.side.Rows {
			if len(row) < len(t.Columns) {
				return nil, fmt.Errorf("verify %s: a %s row has %d values for %d columns", t.Name, s.name, len(row), len(t.Columns))
			}
			if i > 0 && t.Compare(s.side.Keys[i-1], s.side.Keys[i]) >= 0 {
				return nil, fmt.Errorf("verify %s: the %s rows are not in key order at row %d", t.Name, s.name, i)
			}
		}
	}
	var diffs []Diff
	i, j := 0, 0
	for i < len(src.Rows) || j < len(dst.Rows) {
		c := 0
		switch {
		case i == len(src.Rows):
			c = 1
		case j == len(dst.Rows):
			c = -1
		default:
			c = t.Compare(src.Keys[i], dst.Keys[j])
		}
		switch {
		case c < 0:
			diffs = append(diffs, Diff{Table: t.Name, Key: t.key(src.Rows[i]), Kind: Missing, Src: i})
			i++
		case c > 0:
			diffs = append(diffs, Diff{Table: t.Name, Key: t.key(dst.Rows[j]), Kind: Extra, Src: -1})
			j++
		default:
			var cols []string
			for k, name := range t.Columns {
				if !Equal(src.Rows[i][k], dst.Rows[j][k]) {
					cols = append(cols, name)
				}
			}
			if cols != nil {
				diffs = append(diffs, Diff{Table: t.Name, Key: t.key(src.Rows[i]), Kind: Changed, Columns: cols, Src: i})
			}
			i, j = i+1, j+1
		}
	}
	return diffs, nil
}

func (t *Table) key(row []any) []any {
	k := make([]any, len(t.Key))
	for j, i := range t.Key {
		k[j] = row[i]
	}
	return k
}
