package binlogstream

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	"github.com/binlogstream/binlogstream/internal/charset"
	"github.com/binlogstream/binlogstream/internal/schema"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Absent stands for a column a row image left out (binlog_row_image
// MINIMAL or NOBLOB), which is not the same as SQL NULL (nil).
var Absent = absent{}

type absent struct{}

func (absent) String() string { return "<absent>" }

// RawText is a text value in a charset this package does not decode: its
// bytes as stored, and the charset's name.
type RawText struct {
	Charset string
	Bytes   []byte
}

// Geometry is a spatial value: its SRID and its geometry as OGC
// well-known binary (WKB), as the server stores them.
type Geometry struct {
	SRID uint32
	WKB  []byte
}

// RowValues returns row image i of a rows event (an update's images
// alternate before, after), or of a SnapshotRead (i 0), with each value as the server means it
// (Table.Value), and Absent for the columns the image left out. Without a
// Table (not a rows event) it returns nil. The raw go-mysql values stay in
// the RowsEvent's Rows.
//
// In the after image of a MySQL partial JSON update (PARTIAL_UPDATE_ROWS_EVENT,
// binlog_row_value_options=PARTIAL_JSON) a JSON column the server logged as
// a diff is the full after document (PartialJSON.After: the diff applied to
// the before image's document), or, when that cannot be built, the
// *PartialJSONError saying why (the before image lacks the column, a diff
// does not apply). Event.PartialJSON gives the diffs themselves.
func (e *Event) RowValues(i int) []any {
	if sr, ok := e.Event.(*SnapshotRead); ok {
		if e.Table == nil || i != 0 {
			return nil
		}
		out := make([]any, len(sr.Row))
		for c, v := range sr.Row {
			out[c] = e.Table.Value(c, v)
		}
		return out
	}
	re, ok := e.Event.(*replication.RowsEvent)
	if !ok || e.Table == nil || i < 0 || i >= len(re.Rows) {
		return nil
	}
	raw := re.Rows[i]
	out := make([]any, len(raw))
	for c, v := range raw {
		out[c] = e.Table.Value(c, v)
	}
	if len(re.SkippedColumns) == len(re.Rows) {
		for _, c := range re.SkippedColumns[i] {
			if c >= 0 && c < len(out) {
				out[c] = Absent
			}
		}
	}
	e.setPartialJSON(i, out)
	return out
}

// Value converts go-mysql's value for column i into what the server
// means, using what the table says of the column (see "Values" in
// doc.go):
//
//   - integers: int64, or uint64 for UNSIGNED columns (whatever go-mysql
//     made of them without signedness metadata); BIT as uint64; YEAR as
//     int64 (0 for 0000);
//   - FLOAT float32, DOUBLE float64, DECIMAL its exact text (string);
//   - text: a UTF-8 string decoded from the column's charset (utf8mb3/4,
//     ascii, latin1 as the server's cp1252, the other single-byte sets,
//     ucs2, utf16, utf16le, utf32, sjis, cp932, ujis, eucjpms, euckr,
//     gbk, gb2312, gb18030, big5); a charset it cannot decode gives a
//     RawText; an unknown charset leaves go-mysql's string as it is;
//   - binary strings and BLOB: []byte, BINARY(n) padded to its n bytes
//     with the 0x00 bytes the binlog leaves out;
//   - ENUM: the member's name ("" for the invalid value 0), SET: the
//     members' names joined by "," (as SELECT shows them), when the
//     members are known; else go-mysql's index or bitmask as uint64;
//   - DATE "YYYY-MM-DD", TIME "[-]HH:MM:SS[.f]" (hours up to 838),
//     DATETIME and TIMESTAMP "YYYY-MM-DD HH:MM:SS[.f]", with exactly the
//     column's fractional digits; zero dates stay "0000-00-00..."; a
//     TIMESTAMP is in the source's TimestampStringLocation (UTC for a
//     SyncerSource unless Tune says otherwise);
//   - JSON: its text as go-mysql renders it (see PartialJSON for the
//     after image of a MySQL partial update); MariaDB UUID, INET6 and
//     INET4: their text forms;
//     GEOMETRY: Geometry;
//   - NULL: nil.
//
// A value of an unknown column type is returned as go-mysql decoded it.
func (t *Table) Value(i int, raw any) any {
	if raw == nil || raw == Absent || t == nil || i < 0 || i >= len(t.Columns) {
		return raw
	}
	// A value that needs no change is returned as raw, the same interface:
	// boxing it again would allocate.
	c := &t.Columns[i]
	switch c.DataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint":
		switch raw.(type) {
		case int64:
			if !c.Unsigned {
				return raw
			}
		case uint64:
			if c.Unsigned {
				return raw
			}
		}
		return integer(raw, c.Unsigned, c.DataType)
	case "bit":
		if n, ok := asInt64(raw); ok {
			return uint64(n)
		}
	case "year":
		if n, ok := asInt64(raw); ok {
			return n
		}
	case "binary":
		b := asBytes(raw)
		if c.Length > len(b) {
			b = append(append(make([]byte, 0, c.Length), b...), make([]byte, c.Length-len(b))...)
		} else if _, ok := raw.([]byte); ok {
			return raw
		}
		return b
	case "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		if _, ok := raw.([]byte); ok {
			return raw
		}
		return asBytes(raw)
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		if s, ok := raw.(string); ok && (charset.IsUTF8(c.Charset) || charset.ASCIICompatible(c.Charset) && charset.IsASCII(s)) {
			return raw
		}
		return decodeText(raw, c.Charset)
	case "enum":
		if c.Elems == nil {
			return members(raw)
		}
		if n, ok := asInt64(raw); ok {
			if n <= 0 || n > int64(len(c.Elems)) {
				return ""
			}
			return c.Elems[n-1]
		}
	case "set":
		if c.Elems == nil {
			return members(raw)
		}
		if n, ok := asInt64(raw); ok {
			var b strings.Builder
			for k, m := range c.Elems {
				if uint64(n)&(1<<uint(k)) != 0 {
					if b.Len() > 0 {
						b.WriteByte(',')
					}
					b.WriteString(m)
				}
			}
			return b.String()
		}
	case "time", "datetime", "timestamp":
		if s, ok := raw.(string); ok {
			if f := withFraction(s, c.FSP); len(f) != len(s) {
				return f
			}
			return raw
		}
	case "uuid":
		if b := asBytes(raw); len(b) <= 16 {
			return formatUUID(padTo(b, 16))
		}
	case "inet6":
		if b := asBytes(raw); len(b) <= 16 {
			return netip.AddrFrom16([16]byte(padTo(b, 16))).String()
		}
	case "inet4":
		if b := asBytes(raw); len(b) <= 4 {
			return netip.AddrFrom4([4]byte(padTo(b, 4))).String()
		}
	case "json":
		if !charset.IsUTF8(c.Charset) { // MariaDB's JSON (a LONGTEXT) converted to another charset
			return decodeText(raw, c.Charset)
		}
		switch v := raw.(type) {
		case []byte:
			return string(v)
		case string:
			return raw
		}
	default:
		if schema.IsGeometryType(c.DataType) {
			if b := asBytes(raw); len(b) >= 4 {
				return Geometry{SRID: binary.LittleEndian.Uint32(b), WKB: b[4:]}
			}
		}
	}
	switch v := raw.(type) { // other types, and values go-mysql typed otherwise
	case int8, int16, int32, int:
		n, _ := asInt64(v)
		return n
	case uint8, uint16, uint32, uint:
		n, _ := asInt64(v)
		return uint64(n)
	}
	return raw
}

// members is an ENUM's index or a SET's bitmask when the members are not
// known: uint64, as a bitmask of 64 members does not fit an int64.
func members(raw any) any {
	if n, ok := asInt64(raw); ok {
		return uint64(n)
	}
	return raw
}

func padTo(b []byte, n int) []byte {
	if len(b) >= n {
		return b
	}
	return append(append(make([]byte, 0, n), b...), make([]byte, n-len(b))...)
}

// integer reinterprets go-mysql's integer at the column's width: without
// signedness metadata it decoded an UNSIGNED column as signed.
func integer(raw any, unsigned bool, dt string) any {
	n, ok := asInt64(raw)
	if !ok {
		if u, isU := raw.(uint64); isU {
			return u
		}
		return raw
	}
	if !unsigned {
		if u, isU := raw.(uint64); isU { // signed column, unsigned decode: never from the server
			return int64(u)
		}
		return n
	}
	switch dt {
	case "tinyint":
		return uint64(uint8(n))
	case "smallint":
		return uint64(uint16(n))
	case "mediumint":
		return uint64(uint32(n) & 0xFFFFFF)
	case "int":
		return uint64(uint32(n))
	}
	return uint64(n)
}

func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		return int64(n), true
	case uint:
		return int64(n), true
	}
	return 0, false
}

func asBytes(v any) []byte {
	switch b := v.(type) {
	case []byte:
		return b
	case string:
		return []byte(b)
	}
	return []byte(fmt.Sprint(v))
}

// withFraction gives a temporal text exactly fsp fractional digits
// (go-mysql drops a zero fraction of TIME).
func withFraction(s string, fsp int) string {
	dot := strings.LastIndexByte(s, '.')
	if fsp == 0 {
		if dot >= 0 && strings.IndexByte(s[dot:], ':') < 0 {
			return s[:dot]
		}
		return s
	}
	if dot < 0 || strings.IndexByte(s[dot:], ':') >= 0 || strings.IndexByte(s[dot:], '-') >= 0 {
		return s + "." + strings.Repeat("0", fsp)
	}
	have := len(s) - dot - 1
	switch {
	case have < fsp:
		return s + strings.Repeat("0", fsp-have)
	case have > fsp:
		return s[:dot+1+fsp]
	}
	return s
}

func formatUUID(b []byte) string {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, x := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[x>>4], hex[x&0xf])
	}
	return string(out)
}

// decodeText turns a text value's bytes into UTF-8 from its charset: a
// []byte for binary, a RawText when the charset is not known here or the
// bytes do not decode.
func decodeText(raw any, cs string) any {
	var b []byte
	switch v := raw.(type) {
	case string:
		if charset.IsUTF8(cs) {
			return v
		}
		b = []byte(v)
	case []byte:
		b = v
	default:
		return raw
	}
	if cs == "binary" {
		return b
	}
	if s, ok := charset.Decode(b, cs); ok {
		return s
	}
	return RawText{Charset: cs, Bytes: b}
}
