package chunkread

import (
	"bytes"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// slab holds the values of a chunk's rows in a few large allocations
// rather than several per row: the rows' value slices, and the bytes of
// their strings (go-mysql reuses a streamed row's memory). Nothing in it
// is written after its row is made.
type slab struct {
	vals []any
	text []byte
}

// slabValues and slabText are the sizes of new slabs.
const (
	slabValues = 4096
	slabText   = 64 << 10
)

// row converts one streamed row (see FieldRaw), followed by extra fill
// values.
func (s *slab) row(vals []mysql.FieldValue, fields []*mysql.Field, extra int, fill any) []any {
	n := len(vals) + extra
	if cap(s.vals)-len(s.vals) < n {
		s.vals = make([]any, 0, max(slabValues, n))
	}
	row := s.vals[len(s.vals) : len(s.vals)+n : len(s.vals)+n]
	s.vals = s.vals[:len(s.vals)+n]
	for j := range vals {
		row[j] = s.value(&vals[j], fields[j])
	}
	for j := len(vals); j < n; j++ {
		row[j] = fill
	}
	return row
}

// bytes copies b into the slab.
func (s *slab) bytes(b []byte) []byte {
	if len(b) > slabText/4 {
		return bytes.Clone(b)
	}
	if cap(s.text)-len(s.text) < len(b) {
		s.text = make([]byte, 0, slabText)
	}
	i := len(s.text)
	s.text = append(s.text, b...)
	return s.text[i:len(s.text):len(s.text)]
}

// FieldRaw is a text-protocol value in the form go-mysql's binlog
// decoder gives for the column.
func FieldRaw(v *mysql.FieldValue, f *mysql.Field) any {
	var s slab
	return s.value(v, f)
}

// value is FieldRaw with the value's bytes in the slab.
func (s *slab) value(v *mysql.FieldValue, f *mysql.Field) any {
	switch v.Type {
	case mysql.FieldValueTypeNull:
		return nil
	case mysql.FieldValueTypeSigned:
		return v.AsInt64()
	case mysql.FieldValueTypeUnsigned:
		return v.AsUint64()
	case mysql.FieldValueTypeFloat:
		if f.Type == mysql.MYSQL_TYPE_FLOAT {
			return float32(v.AsFloat64())
		}
		return v.AsFloat64()
	}
	raw := v.AsString()
	switch f.Type {
	case mysql.MYSQL_TYPE_BIT:
		var n int64
		for _, c := range raw {
			n = n<<8 | int64(c)
		}
		return n
	case mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB, mysql.MYSQL_TYPE_BLOB,
		mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_JSON:
		return s.bytes(raw)
	}
	if f.Charset == 63 && f.Type != mysql.MYSQL_TYPE_NEWDECIMAL && f.Type != mysql.MYSQL_TYPE_DECIMAL && !isTemporalField(f.Type) {
		return s.bytes(raw) // BINARY, VARBINARY
	}
	if len(raw) == 0 {
		return ""
	}
	b := s.bytes(raw)
	return unsafe.String(&b[0], len(b)) // the slab's bytes are never written again
}

func isTemporalField(t byte) bool {
	switch t {
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE, mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2,
		mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2, mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2, mysql.MYSQL_TYPE_YEAR:
		return true
	}
	return false
}
