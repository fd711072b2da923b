package binlogstream

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// This file is the pure core of MySQL partial JSON updates: MySQL's binary
// JSON decoded into a small document tree, the binary diff vector a
// PARTIAL_UPDATE_ROWS_EVENT carries, MySQL's JSON path syntax, and the
// diffs applied with the semantics of apply_json_diffs in MySQL's
// sql/json_diff.cc. No I/O.

// jsonNode is a JSON value. Objects keep their members in MySQL's order
// (shorter keys first, then bytewise), as the binary format stores them
// and as the server prints them.
type jsonNode struct {
	kind  byte // jsonObj, jsonArr, jsonScalar
	keys  []string
	elems []*jsonNode
	text  string // a scalar's JSON text
}

const (
	jsonScalar byte = iota
	jsonObj
	jsonArr
)

// Binary JSON type tags (MySQL sql-common/json_binary.h).
const (
	jsonbSmallObject = 0x00
	jsonbLargeObject = 0x01
	jsonbSmallArray  = 0x02
	jsonbLargeArray  = 0x03
	jsonbLiteral     = 0x04
	jsonbInt16       = 0x05
	jsonbUint16      = 0x06
	jsonbInt32       = 0x07
	jsonbUint32      = 0x08
	jsonbInt64       = 0x09
	jsonbUint64      = 0x0a
	jsonbDouble      = 0x0b
	jsonbString      = 0x0c
	jsonbOpaque      = 0x0f
)

var errJSONCorrupt = errors.New("corrupt binary JSON")

// decodeJSONBinary decodes a MySQL binary JSON document (type tag first).
// An empty document is JSON null, as go-mysql and the server read it.
func decodeJSONBinary(b []byte) (*jsonNode, error) {
	if len(b) == 0 {
		return &jsonNode{text: "null"}, nil
	}
	return decodeJSONValue(b[0], b[1:], 0)
}

func decodeJSONValue(tp byte, b []byte, depth int) (*jsonNode, error) {
	if depth > 1000 {
		return nil, fmt.Errorf("%w: nested too deep", errJSONCorrupt)
	}
	need := func(n int) error {
		if len(b) < n {
			return fmt.Errorf("%w: value of type %#x needs %d bytes, has %d", errJSONCorrupt, tp, n, len(b))
		}
		return nil
	}
	switch tp {
	case jsonbSmallObject, jsonbLargeObject, jsonbSmallArray, jsonbLargeArray:
		return decodeJSONContainer(tp, b, depth)
	case jsonbLiteral:
		if err := need(1); err != nil {
			return nil, err
		}
		switch b[0] {
		case 0:
			return &jsonNode{text: "null"}, nil
		case 1:
			return &jsonNode{text: "true"}, nil
		case 2:
			return &jsonNode{text: "false"}, nil
		}
		return nil, fmt.Errorf("%w: literal %#x", errJSONCorrupt, b[0])
	case jsonbInt16, jsonbUint16:
		if err := need(2); err != nil {
			return nil, err
		}
		v := binary.LittleEndian.Uint16(b)
		if tp == jsonbInt16 {
			return &jsonNode{text: strconv.FormatInt(int64(int16(v)), 10)}, nil
		}
		return &jsonNode{text: strconv.FormatUint(uint64(v), 10)}, nil
	case jsonbInt32, jsonbUint32:
		if err := need(4); err != nil {
			return nil, err
		}
		v := binary.LittleEndian.Uint32(b)
		if tp == jsonbInt32 {
			return &jsonNode{text: strconv.FormatInt(int64(int32(v)), 10)}, nil
		}
		return &jsonNode{text: strconv.FormatUint(uint64(v), 10)}, nil
	case jsonbInt64, jsonbUint64:
		if err := need(8); err != nil {
			return nil, err
		}
		v := binary.LittleEndian.Uint64(b)
		if tp == jsonbInt64 {
			return &jsonNode{text: strconv.FormatInt(int64(v), 10)}, nil
		}
		return &jsonNode{text: strconv.FormatUint(v, 10)}, nil
	case jsonbDouble:
		if err := need(8); err != nil {
			return nil, err
		}
		return &jsonNode{text: formatJSONDouble(math.Float64frombits(binary.LittleEndian.Uint64(b)))}, nil
	case jsonbString:
		s, err := jsonVarString(b)
		if err != nil {
			return nil, err
		}
		return &jsonNode{text: quoteJSON(s)}, nil
	case jsonbOpaque:
		if err := need(1); err != nil {
			return nil, err
		}
		s, err := jsonVarString(b[1:])
		if err != nil {
			return nil, err
		}
		return &jsonNode{text: opaqueText(b[0], []byte(s))}, nil
	}
	return nil, fmt.Errorf("%w: type %#x", errJSONCorrupt, tp)
}

func decodeJSONContainer(tp byte, b []byte, depth int) (*jsonNode, error) {
	large := tp == jsonbLargeObject || tp == jsonbLargeArray
	isObj := tp == jsonbSmallObject || tp == jsonbLargeObject
	off := 2
	if large {
		off = 4
	}
	word := func(p int) int {
		if large {
			return int(binary.LittleEndian.Uint32(b[p:]))
		}
		return int(binary.LittleEndian.Uint16(b[p:]))
	}
	if len(b) < 2*off {
		return nil, fmt.Errorf("%w: container header", errJSONCorrupt)
	}
	count, size := word(0), word(off)
	if size > len(b) {
		return nil, fmt.Errorf("%w: container of %d bytes in %d", errJSONCorrupt, size, len(b))
	}
	b = b[:size]
	keyEntry, valEntry := 2+off, 1+off
	header := 2*off + count*valEntry
	if isObj {
		header += count * keyEntry
	}
	if count < 0 || header > size {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", errJSONCorrupt, count, size)
	}
	n := &jsonNode{kind: jsonArr, elems: make([]*jsonNode, count)}
	if isObj {
		n.kind, n.keys = jsonObj, make([]string, count)
		for i := range count {
			e := 2*off + i*keyEntry
			ko, kl := word(e), int(binary.LittleEndian.Uint16(b[e+off:]))
			if ko < header || ko+kl > size {
				return nil, fmt.Errorf("%w: key %d out of bounds", errJSONCorrupt, i)
			}
			n.keys[i] = string(b[ko : ko+kl])
		}
	}
	for i := range count {
		e := 2*off + i*valEntry
		if isObj {
			e += count * keyEntry
		}
		vt := b[e]
		var err error
		switch {
		case vt == jsonbLiteral || vt == jsonbInt16 || vt == jsonbUint16 || (large && (vt == jsonbInt32 || vt == jsonbUint32)):
			n.elems[i], err = decodeJSONValue(vt, b[e+1:e+valEntry], depth+1)
		default:
			vo := word(e + 1)
			if vo < header || vo >= size {
				return nil, fmt.Errorf("%w: value %d out of bounds", errJSONCorrupt, i)
			}
			n.elems[i], err = decodeJSONValue(vt, b[vo:], depth+1)
		}
		if err != nil {
			return nil, err
		}
	}
	return n, nil
}

// jsonVarString reads a binary JSON string: a variable-length length (7
// bits a byte, at most 5 bytes), then the bytes.
func jsonVarString(b []byte) (string, error) {
	var l uint64
	for i := 0; i < 5 && i < len(b); i++ {
		l |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if l > uint64(len(b)-i-1) {
				return "", fmt.Errorf("%w: string of %d bytes in %d", errJSONCorrupt, l, len(b)-i-1)
			}
			return string(b[i+1 : i+1+int(l)]), nil
		}
	}
	return "", fmt.Errorf("%w: string length", errJSONCorrupt)
}

// The text forms below are go-mysql's with RenderJSONAsMySQLText (its
// json_mysql_text.go), so a document built from a diff reads like a whole
// document go-mysql decodes in that mode: compact, keys in MySQL's order,
// a whole DOUBLE keeps ".0", DECIMAL unquoted, temporal values quoted.

func formatJSONDouble(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	if f == math.Trunc(f) {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// quoteJSON quotes s byte-transparently, as MySQL stores JSON strings.
func quoteJSON(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func opaqueText(tp byte, b []byte) string {
	switch tp {
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		if len(b) >= 2 {
			if s, ok := decimalText(b[2:], int(b[0]), int(b[1])); ok {
				return s
			}
		}
	case mysql.MYSQL_TYPE_TIME:
		if len(b) >= 8 {
			return quoteJSON(packedTime(int64(binary.LittleEndian.Uint64(b))))
		}
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_TIMESTAMP:
		if len(b) >= 8 {
			return quoteJSON(packedDatetime(int64(binary.LittleEndian.Uint64(b)), tp == mysql.MYSQL_TYPE_DATE))
		}
	}
	return quoteJSON("base64:type" + strconv.Itoa(int(tp)) + ":" + base64.StdEncoding.EncodeToString(b))
}

func packedTime(v int64) string {
	if v == 0 {
		return "00:00:00"
	}
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	ip, frac := v>>24, v%(1<<24)
	return fmt.Sprintf("%s%02d:%02d:%02d.%06d", sign, (ip>>12)%(1<<10), (ip>>6)%(1<<6), ip%(1<<6), frac)
}

func packedDatetime(v int64, isDate bool) string {
	if v == 0 {
		if isDate {
			return "0000-00-00"
		}
		return "0000-00-00 00:00:00"
	}
	if v < 0 {
		v = -v
	}
	ip, frac := v>>24, v%(1<<24)
	ymd, hms := ip>>17, ip%(1<<17)
	ym := ymd >> 5
	if isDate {
		return fmt.Sprintf("%04d-%02d-%02d", ym/13, ym%13, ymd%(1<<5))
	}
	return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d.%06d", ym/13, ym%13, ymd%(1<<5), hms>>12, (hms>>6)%(1<<6), hms%(1<<6), frac)
}

var decimalBytes = [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}

// decimalSize is the size of a binary DECIMAL(prec, scale).
func decimalSize(prec, scale int) int {
	intg := prec - scale
	return intg/9*4 + decimalBytes[intg%9] + scale/9*4 + decimalBytes[scale%9]
}

// decimalText decodes a binary DECIMAL(prec, scale) as its exact text.
func decimalText(b []byte, prec, scale int) (string, bool) {
	if prec < 1 || scale < 0 || scale > prec || len(b) < decimalSize(prec, scale) || decimalSize(prec, scale) == 0 {
		return "", false
	}
	d := append([]byte(nil), b[:decimalSize(prec, scale)]...)
	var mask byte
	neg := d[0]&0x80 == 0
	if neg {
		mask = 0xff
	}
	d[0] ^= 0x80
	word := func(n int) uint64 {
		var v uint64
		for _, c := range d[:n] {
			v = v<<8 | uint64(c^mask)
		}
		d = d[n:]
		return v
	}
	var ip strings.Builder
	intg := prec - scale
	if k := decimalBytes[intg%9]; k > 0 {
		ip.WriteString(strconv.FormatUint(word(k), 10))
	}
	for range intg / 9 {
		fmt.Fprintf(&ip, "%09d", word(4))
	}
	is := strings.TrimLeft(ip.String(), "0")
	if is == "" {
		is = "0"
	}
	var fp strings.Builder
	for range scale / 9 {
		fmt.Fprintf(&fp, "%09d", word(4))
	}
	if r := scale % 9; r > 0 {
		fmt.Fprintf(&fp, "%0*d", r, word(decimalBytes[r]))
	}
	s := is
	if fp.Len() > 0 {
		s += "." + fp.String()
	}
	if neg {
		s = "-" + s
	}
	return s, true
}

// appendText writes n as compact JSON text.
func (n *jsonNode) appendText(b *strings.Builder) {
	switch n.kind {
	case jsonObj:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(quoteJSON(k))
			b.WriteByte(':')
			n.elems[i].appendText(b)
		}
		b.WriteByte('}')
	case jsonArr:
		b.WriteByte('[')
		for i, e := range n.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			e.appendText(b)
		}
		b.WriteByte(']')
	default:
		b.WriteString(n.text)
	}
}

func (n *jsonNode) String() string {
	var b strings.Builder
	n.appendText(&b)
	return b.String()
}

// jsonKeyLess is MySQL's order of object keys: shorter first, then
// bytewise.
func jsonKeyLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// jsonLeg is one leg of a MySQL JSON path without wildcards: a member
// name, or an array cell counted from the start or (last-N) from the end.
type jsonLeg struct {
	member  string
	isCell  bool
	index   int
	fromEnd bool
}

// parseJSONPath parses the paths a diff carries: $ followed by .name,
// ."quoted name" and [N], [last], [last-N] legs. Wildcards and ranges
// cannot occur in a diff and are refused.
func parseJSONPath(p string) ([]jsonLeg, error) {
	s := strings.TrimSpace(p)
	if !strings.HasPrefix(s, "$") {
		return nil, fmt.Errorf("JSON path %q does not start with $", p)
	}
	s = s[1:]
	var legs []jsonLeg
	for {
		s = strings.TrimLeft(s, " \t\n\r")
		if s == "" {
			return legs, nil
		}
		switch s[0] {
		case '.':
			s = strings.TrimLeft(s[1:], " \t\n\r")
			if s == "" {
				return nil, fmt.Errorf("JSON path %q ends in a dot", p)
			}
			if s[0] == '"' {
				end := 1
				for end < len(s) && s[end] != '"' {
					if s[end] == '\\' {
						end++
					}
					end++
				}
				if end >= len(s) {
					return nil, fmt.Errorf("JSON path %q: unterminated quoted member", p)
				}
				var name string
				if err := json.Unmarshal([]byte(s[:end+1]), &name); err != nil {
					return nil, fmt.Errorf("JSON path %q: member %s: %v", p, s[:end+1], err)
				}
				legs, s = append(legs, jsonLeg{member: name}), s[end+1:]
				continue
			}
			end := strings.IndexAny(s, ".[ \t\n\r")
			if end < 0 {
				end = len(s)
			}
			name := s[:end]
			if name == "" || strings.ContainsAny(name, "*\"") {
				return nil, fmt.Errorf("JSON path %q: member %q is not a plain name", p, name)
			}
			legs, s = append(legs, jsonLeg{member: name}), s[end:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, fmt.Errorf("JSON path %q: unterminated array cell", p)
			}
			cell := strings.TrimSpace(s[1:end])
			s = s[end+1:]
			leg := jsonLeg{isCell: true}
			if rest, ok := strings.CutPrefix(cell, "last"); ok {
				leg.fromEnd = true
				rest = strings.TrimSpace(rest)
				if rest != "" {
					num, ok := strings.CutPrefix(rest, "-")
					if !ok {
						return nil, fmt.Errorf("JSON path %q: array cell [%s]", p, cell)
					}
					cell = strings.TrimSpace(num)
				} else {
					cell = "0"
				}
			}
			n, err := strconv.ParseUint(cell, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("JSON path %q: array cell [%s] is not an index", p, cell)
			}
			leg.index = int(n)
			legs = append(legs, leg)
		default:
			return nil, fmt.Errorf("JSON path %q: unexpected %q", p, s[0])
		}
	}
}

// position resolves an array cell in an array of n elements as MySQL's
// Json_array_index does: from the start it is clamped to n, from the end
// it is 0 when out of range.
func (l jsonLeg) position(n int) (pos int, inBounds bool) {
	if l.fromEnd {
		if l.index < n {
			return n - l.index - 1, true
		}
		return 0, false
	}
	return min(l.index, n), l.index < n
}

// seek follows legs without auto-wrapping (MySQL's seek_exact_path).
func (n *jsonNode) seek(legs []jsonLeg) *jsonNode {
	for _, l := range legs {
		switch {
		case n.kind == jsonArr && l.isCell:
			p, ok := l.position(len(n.elems))
			if !ok {
				return nil
			}
			n = n.elems[p]
		case n.kind == jsonObj && !l.isCell:
			i := n.member(l.member)
			if i < 0 {
				return nil
			}
			n = n.elems[i]
		default:
			return nil
		}
	}
	return n
}

func (n *jsonNode) member(k string) int {
	for i, x := range n.keys {
		if x == k {
			return i
		}
	}
	return -1
}

// applyJSONDiff applies one diff to doc in place, as a MySQL replica
// does: Replace needs the path to exist, Insert needs its parent to exist
// (an object member must be new; an array cell past the end appends),
// Remove needs the path to exist. The root itself cannot be changed.
func applyJSONDiff(doc *jsonNode, op replication.JsonDiffOperation, path string, val *jsonNode) error {
	legs, err := parseJSONPath(path)
	if err != nil {
		return err
	}
	if len(legs) == 0 {
		return fmt.Errorf("%s of the document root", op)
	}
	parent := doc.seek(legs[:len(legs)-1])
	if parent == nil {
		return fmt.Errorf("%s %s: the parent of the path is not in the document", op, path)
	}
	last := legs[len(legs)-1]
	switch {
	case parent.kind == jsonObj && !last.isCell:
		i := parent.member(last.member)
		switch op {
		case replication.JsonDiffOperationReplace:
			if i < 0 {
				return fmt.Errorf("Replace %s: no such member", path)
			}
			parent.elems[i] = val
		case replication.JsonDiffOperationInsert:
			if i >= 0 {
				return fmt.Errorf("Insert %s: the member exists", path)
			}
			at := 0
			for at < len(parent.keys) && jsonKeyLess(parent.keys[at], last.member) {
				at++
			}
			parent.keys = insertAt(parent.keys, at, last.member)
			parent.elems = insertAt(parent.elems, at, val)
		case replication.JsonDiffOperationRemove:
			if i < 0 {
				return fmt.Errorf("Remove %s: no such member", path)
			}
			parent.keys = append(parent.keys[:i], parent.keys[i+1:]...)
			parent.elems = append(parent.elems[:i], parent.elems[i+1:]...)
		default:
			return fmt.Errorf("unknown JSON diff operation %d", op)
		}
	case parent.kind == jsonArr && last.isCell:
		p, ok := last.position(len(parent.elems))
		switch op {
		case replication.JsonDiffOperationReplace:
			if !ok {
				return fmt.Errorf("Replace %s: no such array cell", path)
			}
			parent.elems[p] = val
		case replication.JsonDiffOperationInsert:
			parent.elems = insertAt(parent.elems, p, val)
		case replication.JsonDiffOperationRemove:
			if !ok {
				return fmt.Errorf("Remove %s: no such array cell", path)
			}
			parent.elems = append(parent.elems[:p], parent.elems[p+1:]...)
		default:
			return fmt.Errorf("unknown JSON diff operation %d", op)
		}
	default:
		return fmt.Errorf("%s %s: the path does not match the document", op, path)
	}
	return nil
}

func insertAt[T any](s []T, i int, v T) []T {
	var zero T
	s = append(s, zero)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

// binaryDiff is one diff of a binary diff vector, its value decoded.
type binaryDiff struct {
	op    replication.JsonDiffOperation
	path  string
	value *jsonNode // nil for Remove
}

// readJSONDiffs reads the diffs of a partial JSON value (after its length
// prefix): per diff an operation byte, a length-encoded path and, unless
// the operation is Remove, a length-encoded binary JSON value (MySQL's
// Json_diff_vector::read_binary).
func readJSONDiffs(b []byte) ([]binaryDiff, error) {
	var out []binaryDiff
	for len(b) > 0 {
		op := replication.JsonDiffOperation(b[0])
		if op > replication.JsonDiffOperationRemove {
			return nil, fmt.Errorf("%w: diff %d: operation %d", replication.ErrCorruptedJSONDiff, len(out), b[0])
		}
		b = b[1:]
		path, rest, err := lenencBytes(b)
		if err != nil {
			return nil, fmt.Errorf("%w: diff %d: path: %v", replication.ErrCorruptedJSONDiff, len(out), err)
		}
		d := binaryDiff{op: op, path: string(path)}
		b = rest
		if op != replication.JsonDiffOperationRemove {
			val, rest, err := lenencBytes(b)
			if err != nil {
				return nil, fmt.Errorf("%w: diff %d (%s): value: %v", replication.ErrCorruptedJSONDiff, len(out), d.path, err)
			}
			if d.value, err = decodeJSONBinary(val); err != nil {
				return nil, fmt.Errorf("%w: diff %d (%s): %v", replication.ErrCorruptedJSONDiff, len(out), d.path, err)
			}
			b = rest
		}
		out = append(out, d)
	}
	return out, nil
}

func lenencBytes(b []byte) (v, rest []byte, err error) {
	n, k, ok := lenencInt(b)
	if !ok || n > uint64(len(b)-k) {
		return nil, nil, errors.New("truncated")
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

// lenencInt reads a length-encoded integer (net_field_length); ok is
// false when b is too short or holds the NULL marker.
func lenencInt(b []byte) (n uint64, k int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch b[0] {
	case 0xfb, 0xff:
		return 0, 0, false
	case 0xfc:
		k = 3
	case 0xfd:
		k = 4
	case 0xfe:
		k = 9
	default:
		return uint64(b[0]), 1, true
	}
	if len(b) < k {
		return 0, 0, false
	}
	for i := k - 1; i >= 1; i-- {
		n = n<<8 | uint64(b[i])
	}
	return n, k, true
}

// parseJSONText parses JSON text into a tree: objects take MySQL's key
// order (a later duplicate key wins, as in MySQL), numbers keep their
// text, strings are re-quoted as this package writes them.
func parseJSONText(s string) (*jsonNode, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	n, err := parseJSONToken(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("data after the JSON value")
	}
	return n, nil
}

func parseJSONToken(d *json.Decoder, depth int) (*jsonNode, error) {
	if depth > 1000 {
		return nil, errors.New("JSON nested too deep")
	}
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		n := &jsonNode{kind: jsonArr}
		if t == '{' {
			n.kind = jsonObj
		}
		for d.More() {
			var key string
			if n.kind == jsonObj {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				key = k.(string)
			}
			v, err := parseJSONToken(d, depth+1)
			if err != nil {
				return nil, err
			}
			if n.kind == jsonArr {
				n.elems = append(n.elems, v)
				continue
			}
			if i := n.member(key); i >= 0 {
				n.elems[i] = v
				continue
			}
			at := 0
			for at < len(n.keys) && jsonKeyLess(n.keys[at], key) {
				at++
			}
			n.keys, n.elems = insertAt(n.keys, at, key), insertAt(n.elems, at, v)
		}
		if _, err := d.Token(); err != nil {
			return nil, err
		}
		return n, nil
	case string:
		return &jsonNode{text: quoteJSON(t)}, nil
	case json.Number:
		return &jsonNode{text: string(t)}, nil
	case bool:
		return &jsonNode{text: strconv.FormatBool(t)}, nil
	case nil:
		return &jsonNode{text: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", t)
}
