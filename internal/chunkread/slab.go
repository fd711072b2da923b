package chunkread

import (
	"bytes"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlogstream/binlogstream/internal/ifacebox"
)

// slab holds the values of a chunk's rows in a few large allocations
// rather than several per row: the rows' value slices, the bytes of
// their strings (go-mysql reuses a streamed row's memory), and the
// values their interfaces point to. Nothing in it is written after its
// row is made.
type slab struct {
	vals []any
	text []byte
	strs box[string]
	bs   box[[]byte]
	u64  box[uint64] // int64 and uint64: the same bits
	f64  box[float64]
	f32  box[float32]
}

// box is a slab of values of one type that interfaces point into.
type box[T any] struct{ cur []T }

// boxValues is the size of a new box slab.
const boxValues = 1024

// slot appends v to the slab and returns its address.
func (b *box[T]) slot(v T) *T {
	if len(b.cur) == cap(b.cur) {
		b.cur = make([]T, 0, boxValues)
	}
	b.cur = append(b.cur, v)
	return &b.cur[len(b.cur)-1]
}

// The interfaces whose type words boxAt takes.
var (
	typeString  any = ""
	typeBytes   any = []byte(nil)
	typeInt64   any = int64(0)
	typeUint64  any = uint64(0)
	typeFloat64 any = float64(0)
	typeFloat32 any = float32(0)
)

func (s *slab) int64(v int64) any     { return ifacebox.At(typeInt64, s.u64.slot(uint64(v))) }
func (s *slab) uint64(v uint64) any   { return ifacebox.At(typeUint64, s.u64.slot(v)) }
func (s *slab) float64(v float64) any { return ifacebox.At(typeFloat64, s.f64.slot(v)) }
func (s *slab) float32(v float32) any { return ifacebox.At(typeFloat32, s.f32.slot(v)) }
func (s *slab) byteSlice(v []byte) any {
	return ifacebox.At(typeBytes, s.bs.slot(v))
}
func (s *slab) string(v string) any {
	if v == "" {
		return typeString
	}
	return ifacebox.At(typeString, s.strs.slot(v))
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
		return s.int64(v.AsInt64())
	case mysql.FieldValueTypeUnsigned:
		return s.uint64(v.AsUint64())
	case mysql.FieldValueTypeFloat:
		if f.Type == mysql.MYSQL_TYPE_FLOAT {
			return s.float32(float32(v.AsFloat64()))
		}
		return s.float64(v.AsFloat64())
	}
	return s.bytesValue(v.AsString(), f)
}

// bytesValue is the value of a column that both protocols send as its
// bytes (strings, DECIMAL, BIT, ENUM, SET, JSON, and temporal text).
func (s *slab) bytesValue(raw []byte, f *mysql.Field) any {
	switch f.Type {
	case mysql.MYSQL_TYPE_BIT:
		var n int64
		for _, c := range raw {
			n = n<<8 | int64(c)
		}
		return s.int64(n)
	case mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB, mysql.MYSQL_TYPE_BLOB,
		mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_JSON:
		return s.byteSlice(s.bytes(raw))
	}
	if f.Charset == 63 && f.Type != mysql.MYSQL_TYPE_NEWDECIMAL && f.Type != mysql.MYSQL_TYPE_DECIMAL && !isTemporalField(f.Type) {
		return s.byteSlice(s.bytes(raw)) // BINARY, VARBINARY
	}
	if len(raw) == 0 {
		return s.string("")
	}
	b := s.bytes(raw)
	return s.string(unsafe.String(&b[0], len(b))) // the slab's bytes are never written again
}

func isTemporalField(t byte) bool {
	switch t {
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE, mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2,
		mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2, mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2, mysql.MYSQL_TYPE_YEAR:
		return true
	}
	return false
}
