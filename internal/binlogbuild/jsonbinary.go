package binlogbuild

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// JSON is MySQL's JSON column (MYSQL_TYPE_JSON, 4-byte length). Row values
// are JSON text (string), written as MySQL's binary JSON (JSONBinary),
// JSONRaw, or, in the after image of a PartialUpdate, JSONDiffs.
var JSON = ColumnType{code: mysql.MYSQL_TYPE_JSON, meta: 4}

// Absent in a row image leaves the column out of the image (its bit clear
// in the event's column bitmap), as binlog_row_image=MINIMAL does. Every
// image of the same side (before or after) in one event must leave out
// the same columns.
var Absent = absentValue{}

type absentValue struct{}

// JSONRaw is a JSON column value given as MySQL binary JSON, written as
// is (for values JSON text cannot ask for: DECIMAL, DATETIME, opaque).
type JSONRaw []byte

// JSONDiff is one diff of a partial JSON update: Value is JSON text
// (ignored for Remove).
type JSONDiff struct {
	Op    replication.JsonDiffOperation
	Path  string
	Value string
}

// JSONDiffs is the after-image value of a JSON column that a PartialUpdate
// logs as a diff vector (binlog_row_value_options=PARTIAL_JSON).
type JSONDiffs []JSONDiff

// JSONReplace, JSONInsert and JSONRemove build JSONDiffs entries.
func JSONReplace(path, value string) JSONDiff {
	return JSONDiff{replication.JsonDiffOperationReplace, path, value}
}

// JSONInsert adds a member or array cell.
func JSONInsert(path, value string) JSONDiff {
	return JSONDiff{replication.JsonDiffOperationInsert, path, value}
}

// JSONRemove removes a member or array cell.
func JSONRemove(path string) JSONDiff {
	return JSONDiff{Op: replication.JsonDiffOperationRemove, Path: path}
}

// Binary is the diff vector as an after image holds it (see binary).
// It panics on invalid JSON.
func (ds JSONDiffs) Binary() []byte {
	b, err := ds.binary()
	if err != nil {
		panic(err)
	}
	return b
}

// binary is the diff vector as MySQL's Json_diff_vector::write_binary
// writes it: a 4-byte length, then per diff the operation, the
// length-encoded path and, unless Remove, the length-encoded binary value.
func (ds JSONDiffs) binary() ([]byte, error) {
	var b []byte
	for _, d := range ds {
		b = append(b, byte(d.Op))
		b = mysql.AppendLengthEncodedInteger(b, uint64(len(d.Path)))
		b = append(b, d.Path...)
		if d.Op == replication.JsonDiffOperationRemove {
			continue
		}
		v, err := jsonBinary(d.Value)
		if err != nil {
			return nil, err
		}
		b = mysql.AppendLengthEncodedInteger(b, uint64(len(v)))
		b = append(b, v...)
	}
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(b))), b...), nil
}

// JSONBinary encodes JSON text as MySQL's binary JSON, as the server
// stores a document: object keys sorted shorter first, then bytewise;
// numbers without a fraction or exponent as the smallest of int16, int32,
// int64 (uint64 above int64), others as DOUBLE. It panics on invalid JSON.
func JSONBinary(text string) []byte {
	b, err := jsonBinary(text)
	if err != nil {
		panic(err)
	}
	return b
}

func jsonBinary(text string) ([]byte, error) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	v, err := readJSON(d)
	if err != nil {
		return nil, fmt.Errorf("binlogbuild: JSON %q: %w", text, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("binlogbuild: JSON %q: trailing data", text)
	}
	tp, body := v.encode()
	return append([]byte{tp}, body...), nil
}

type jvalue struct {
	obj, arr bool
	keys     []string
	elems    []jvalue
	scalar   any // nil (null), bool, string, json.Number
}

func readJSON(d *json.Decoder) (jvalue, error) {
	t, err := d.Token()
	if err != nil {
		return jvalue{}, err
	}
	switch t := t.(type) {
	case json.Delim:
		v := jvalue{obj: t == '{', arr: t == '['}
		for d.More() {
			if v.obj {
				k, err := d.Token()
				if err != nil {
					return v, err
				}
				v.keys = append(v.keys, k.(string))
			}
			e, err := readJSON(d)
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
		if _, err := d.Token(); err != nil {
			return v, err
		}
		if v.obj {
			idx := make([]int, len(v.keys))
			for i := range idx {
				idx[i] = i
			}
			sort.SliceStable(idx, func(a, b int) bool {
				ka, kb := v.keys[idx[a]], v.keys[idx[b]]
				if len(ka) != len(kb) {
					return len(ka) < len(kb)
				}
				return ka < kb
			})
			keys, elems := make([]string, len(idx)), make([]jvalue, len(idx))
			for i, j := range idx {
				keys[i], elems[i] = v.keys[j], v.elems[j]
			}
			v.keys, v.elems = keys, elems
		}
		return v, nil
	default:
		return jvalue{scalar: t}, nil
	}
}

const (
	jbSmallObject = 0x00
	jbLargeObject = 0x01
	jbSmallArray  = 0x02
	jbLargeArray  = 0x03
	jbLiteral     = 0x04
	jbInt16       = 0x05
	jbUint16      = 0x06
	jbInt32       = 0x07
	jbUint32      = 0x08
	jbInt64       = 0x09
	jbUint64      = 0x0a
	jbDouble      = 0x0b
	jbString      = 0x0c
)

// encode returns the value's type and bytes; literals, int16 and uint16
// come back as their inline bytes (1, 2 bytes).
func (v jvalue) encode() (byte, []byte) {
	if v.obj || v.arr {
		if b, ok := v.container(false); ok {
			if v.obj {
				return jbSmallObject, b
			}
			return jbSmallArray, b
		}
		b, _ := v.container(true)
		if v.obj {
			return jbLargeObject, b
		}
		return jbLargeArray, b
	}
	return v.encodeScalar()
}

func (v jvalue) encodeScalar() (byte, []byte) {
	switch s := v.scalar.(type) {
	case nil:
		return jbLiteral, []byte{0}
	case bool:
		if s {
			return jbLiteral, []byte{1}
		}
		return jbLiteral, []byte{2}
	case string:
		return jbString, append(varLen(len(s)), s...)
	case json.Number:
		if !strings.ContainsAny(string(s), ".eE") {
			if n, err := strconv.ParseInt(string(s), 10, 64); err == nil {
				switch {
				case n >= math.MinInt16 && n <= math.MaxInt16:
					return jbInt16, binary.LittleEndian.AppendUint16(nil, uint16(n))
				case n >= math.MinInt32 && n <= math.MaxInt32:
					return jbInt32, binary.LittleEndian.AppendUint32(nil, uint32(n))
				}
				return jbInt64, binary.LittleEndian.AppendUint64(nil, uint64(n))
			}
			if u, err := strconv.ParseUint(string(s), 10, 64); err == nil {
				return jbUint64, binary.LittleEndian.AppendUint64(nil, u)
			}
		}
		f, err := s.Float64()
		if err != nil {
			panic(fmt.Sprintf("binlogbuild: JSON number %s: %v", s, err))
		}
		return jbDouble, binary.LittleEndian.AppendUint64(nil, math.Float64bits(f))
	}
	panic(fmt.Sprintf("binlogbuild: JSON value %#v", v.scalar))
}

func varLen(n int) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// container encodes an object or array (without its type byte) in the
// small (2-byte offsets) or large (4-byte) layout; ok is false when the
// small layout cannot hold it.
func (v jvalue) container(large bool) ([]byte, bool) {
	off := 2
	if large {
		off = 4
	}
	n := len(v.elems)
	header := 2*off + n*(1+off)
	if v.obj {
		header += n * (2 + off)
	}
	var keys, vals bytes.Buffer
	keyEntries := make([]byte, 0, n*(2+off))
	valEntries := make([]byte, 0, n*(1+off))
	put := func(b []byte, x int) []byte {
		if large {
			return binary.LittleEndian.AppendUint32(b, uint32(x))
		}
		return binary.LittleEndian.AppendUint16(b, uint16(x))
	}
	if v.obj {
		for _, k := range v.keys {
			keyEntries = put(keyEntries, header+keys.Len())
			keyEntries = binary.LittleEndian.AppendUint16(keyEntries, uint16(len(k)))
			keys.WriteString(k)
		}
	}
	for _, e := range v.elems {
		tp, b := e.encode()
		inline := tp == jbLiteral || tp == jbInt16 || tp == jbUint16 || (large && (tp == jbInt32 || tp == jbUint32))
		valEntries = append(valEntries, tp)
		if inline {
			cell := make([]byte, off)
			copy(cell, b)
			valEntries = append(valEntries, cell...)
			continue
		}
		valEntries = put(valEntries, header+keys.Len()+vals.Len())
		vals.Write(b)
	}
	size := header + keys.Len() + vals.Len()
	if !large && size > math.MaxUint16 {
		return nil, false
	}
	out := put(put(nil, n), size)
	out = append(append(out, keyEntries...), valEntries...)
	out = append(append(out, keys.Bytes()...), vals.Bytes()...)
	return out, true
}
