package debezium

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/schema"
)

// A column's Kafka Connect schema as Debezium's MySQL connector gives it
// (docs/debezium.md lists them): the literal type, the semantic type's
// name and version, its parameters.
type colSchema struct {
	typ     string // int8 int16 int32 int64 float double boolean string bytes struct
	name    string // the semantic type; "" for none
	version int    // of the semantic type; 0 for none
	doc     string // the semantic type's doc; "" for none
	params  [][2]string
	// struct fields (GEOMETRY, POINT), already rendered as JSON
	fields string
	conv   conv
	// zero: a NOT NULL temporal column's zero date becomes this value's
	// epoch (Debezium writes the epoch where null is not allowed).
	fsp int
	// bits: BIT(n)'s n.
	bits int
	// scale: DECIMAL's scale.
	scale int
}

// conv says how a value of the column is written.
type conv uint8

const (
	convInt conv = iota
	convUint
	convFloat32
	convFloat64
	convString
	convBytes
	convDecimalBytes
	convDecimalString
	convDecimalDouble
	convBool
	convBits
	convYear
	convDate
	convTime
	convTimestamp      // DATETIME(0-3): epoch milliseconds
	convMicroTimestamp // DATETIME(4-6): epoch microseconds
	convZoned          // TIMESTAMP: ISO-8601 in UTC
	convGeometry
	convPoint
	convJSON
)

// columnSchema maps column c as Debezium's defaults (and opts) say.
func columnSchema(c *binlogstream.Column, opts *Options) colSchema {
	switch c.DataType {
	case "tinyint":
		return colSchema{typ: "int16", conv: intConv(c)}
	case "smallint":
		if c.Unsigned {
			return colSchema{typ: "int32", conv: convUint}
		}
		return colSchema{typ: "int16", conv: convInt}
	case "mediumint":
		return colSchema{typ: "int32", conv: intConv(c)}
	case "int":
		if c.Unsigned {
			return colSchema{typ: "int64", conv: convUint}
		}
		return colSchema{typ: "int32", conv: convInt}
	case "bigint":
		// bigint.unsigned.handling.mode=long (the default): the value's
		// 64 bits as a signed long.
		return colSchema{typ: "int64", conv: intConv(c)}
	case "float":
		return colSchema{typ: "float", conv: convFloat32}
	case "double":
		return colSchema{typ: "double", conv: convFloat64}
	case "decimal":
		switch opts.DecimalHandling {
		case DecimalString:
			return colSchema{typ: "string", conv: convDecimalString}
		case DecimalDouble:
			return colSchema{typ: "double", conv: convDecimalDouble}
		}
		return colSchema{typ: "bytes", name: "org.apache.kafka.connect.data.Decimal", version: 1,
			params: [][2]string{{"scale", strconv.Itoa(c.Scale)}, {"connect.decimal.precision", strconv.Itoa(c.Precision)}},
			conv:   convDecimalBytes, scale: c.Scale}
	case "bit":
		if c.Length == 1 {
			return colSchema{typ: "boolean", conv: convBool}
		}
		return colSchema{typ: "bytes", name: "io.debezium.data.Bits", version: 1,
			params: [][2]string{{"length", strconv.Itoa(c.Length)}}, conv: convBits, bits: c.Length}
	case "year":
		return colSchema{typ: "int32", name: "io.debezium.time.Year", version: 1, conv: convYear}
	case "date":
		return colSchema{typ: "int32", name: "io.debezium.time.Date", version: 1, conv: convDate}
	case "time":
		return colSchema{typ: "int64", name: "io.debezium.time.MicroTime", version: 1, conv: convTime, fsp: c.FSP}
	case "datetime":
		if c.FSP <= 3 {
			return colSchema{typ: "int64", name: "io.debezium.time.Timestamp", version: 1, conv: convTimestamp, fsp: c.FSP}
		}
		return colSchema{typ: "int64", name: "io.debezium.time.MicroTimestamp", version: 1, conv: convMicroTimestamp, fsp: c.FSP}
	case "timestamp":
		return colSchema{typ: "string", name: "io.debezium.time.ZonedTimestamp", version: 1, conv: convZoned, fsp: c.FSP}
	case "enum":
		return colSchema{typ: "string", name: "io.debezium.data.Enum", version: 1,
			params: [][2]string{{"allowed", strings.Join(c.Elems, ",")}}, conv: convString}
	case "set":
		return colSchema{typ: "string", name: "io.debezium.data.EnumSet", version: 1,
			params: [][2]string{{"allowed", strings.Join(c.Elems, ",")}}, conv: convString}
	case "json":
		return colSchema{typ: "string", name: "io.debezium.data.Json", version: 1, conv: convJSON}
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		if opts.BinaryHandling == BinaryBytes {
			return colSchema{typ: "bytes", conv: convBytes}
		}
		return colSchema{typ: "string", conv: convBytes}
	case "point":
		return colSchema{typ: "struct", name: "io.debezium.data.geometry.Point", version: 1, doc: "Geometry (POINT)", conv: convPoint,
			fields: `[{"type":"double","optional":false,"field":"x"},{"type":"double","optional":false,"field":"y"},` +
				`{"type":"bytes","optional":true,"field":"wkb"},{"type":"int32","optional":true,"field":"srid"}]`}
	}
	if schema.IsGeometryType(c.DataType) {
		return colSchema{typ: "struct", name: "io.debezium.data.geometry.Geometry", version: 1, doc: "Geometry", conv: convGeometry,
			fields: `[{"type":"bytes","optional":false,"field":"wkb"},{"type":"int32","optional":true,"field":"srid"}]`}
	}
	// CHAR, VARCHAR, the TEXTs, and MariaDB's UUID, INET4 and INET6 (as text).
	return colSchema{typ: "string", conv: convString}
}

func intConv(c *binlogstream.Column) conv {
	if c.Unsigned {
		return convUint
	}
	return convInt
}

// appendSchema writes the column's schema as JsonConverter does, with
// the field's name and whether it is optional.
func (s *colSchema) appendSchema(b []byte, field string, optional bool) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, s.typ...)
	b = append(b, '"')
	if s.fields != "" {
		b = append(b, `,"fields":`...)
		b = append(b, s.fields...)
	}
	b = append(b, `,"optional":`...)
	b = strconv.AppendBool(b, optional)
	if s.name != "" {
		b = append(b, `,"name":`...)
		b = appendString(b, s.name)
		b = append(b, `,"version":`...)
		b = strconv.AppendInt(b, int64(s.version), 10)
	}
	if s.doc != "" {
		b = append(b, `,"doc":`...)
		b = appendString(b, s.doc)
	}
	if len(s.params) > 0 {
		b = append(b, `,"parameters":{`...)
		for i, p := range s.params {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, p[0])
			b = append(b, ':')
			b = appendString(b, p[1])
		}
		b = append(b, '}')
	}
	b = append(b, `,"field":`...)
	b = appendString(b, field)
	return append(b, '}')
}

// appendValue writes v, column c's value as Table.Value gives it, in the
// column's Debezium representation. nullable says whether the column
// takes null (a zero date then is null, else the epoch).
func (s *colSchema) appendValue(b []byte, v any, nullable bool, opts *Options) ([]byte, error) {
	if v == nil || v == binlogstream.Absent {
		return append(b, "null"...), nil
	}
	switch s.conv {
	case convInt:
		if n, ok := v.(int64); ok {
			return strconv.AppendInt(b, n, 10), nil
		}
	case convUint:
		if n, ok := v.(uint64); ok {
			if s.typ == "int64" && n > math.MaxInt64 {
				return strconv.AppendInt(b, int64(n), 10), nil // long mode: the same 64 bits
			}
			return strconv.AppendUint(b, n, 10), nil
		}
	case convFloat32:
		switch f := v.(type) {
		case float32:
			return appendFloat(b, float64(f), 32), nil
		case float64:
			return appendFloat(b, f, 32), nil
		}
	case convFloat64:
		switch f := v.(type) {
		case float64:
			return appendFloat(b, f, 64), nil
		case float32:
			return appendFloat(b, float64(f), 64), nil
		}
	case convDecimalBytes, convDecimalString, convDecimalDouble:
		text := fmt.Sprint(v)
		switch s.conv {
		case convDecimalString:
			return appendString(b, text), nil
		case convDecimalDouble:
			f, err := strconv.ParseFloat(text, 64)
			if err != nil {
				return b, fmt.Errorf("DECIMAL value %q: %w", text, err)
			}
			return appendFloat(b, f, 64), nil
		}
		u, err := unscaled(text, s.scale)
		if err != nil {
			return b, err
		}
		return appendBytesValue(b, twosComplement(u), BinaryBytes), nil
	case convString, convJSON:
		switch x := v.(type) {
		case string:
			return appendString(b, x), nil
		case binlogstream.RawText:
			return appendString(b, string(x.Bytes)), nil
		case []byte:
			return appendString(b, string(x)), nil
		}
		return appendString(b, fmt.Sprint(v)), nil
	case convBytes:
		switch x := v.(type) {
		case []byte:
			return appendBytesValue(b, x, opts.BinaryHandling), nil
		case string:
			return appendBytesValue(b, []byte(x), opts.BinaryHandling), nil
		}
	case convBool:
		if n, ok := v.(uint64); ok {
			return strconv.AppendBool(b, n != 0), nil
		}
	case convBits:
		if n, ok := v.(uint64); ok {
			le := make([]byte, 8)
			binary.LittleEndian.PutUint64(le, n)
			return appendBytesValue(b, le[:(s.bits+7)/8], BinaryBytes), nil
		}
	case convYear:
		if n, ok := v.(int64); ok {
			return strconv.AppendInt(b, n, 10), nil
		}
	case convDate:
		if x, ok := v.(string); ok {
			t, zero, err := parseDateTime(x)
			if err != nil {
				return b, err
			}
			if zero {
				return zeroValue(b, nullable, "0"), nil
			}
			return strconv.AppendInt(b, t.Unix()/86400, 10), nil
		}
	case convTime:
		if x, ok := v.(string); ok {
			us, err := parseTime(x)
			if err != nil {
				return b, err
			}
			return strconv.AppendInt(b, us, 10), nil
		}
	case convTimestamp, convMicroTimestamp, convZoned:
		if x, ok := v.(string); ok {
			t, zero, err := parseDateTime(x)
			if err != nil {
				return b, err
			}
			switch {
			case zero && s.conv == convZoned:
				// The binlog holds a zero TIMESTAMP as second 0, which
				// ZonedTimestamp writes with the column's fractional
				// digits, as every other value.
				return zeroValue(b, nullable, `"`+zonedText(time.Unix(0, 0), s.fsp)+`"`), nil
			case zero:
				return zeroValue(b, nullable, "0"), nil
			case s.conv == convTimestamp:
				return strconv.AppendInt(b, t.UnixMilli(), 10), nil
			case s.conv == convMicroTimestamp:
				return strconv.AppendInt(b, t.UnixMicro(), 10), nil
			}
			return appendString(b, zonedText(t, s.fsp)), nil
		}
	case convGeometry:
		if g, ok := v.(binlogstream.Geometry); ok {
			b = append(b, `{"wkb":`...)
			b = appendBytesValue(b, g.WKB, BinaryBytes)
			b = append(b, `,"srid":`...)
			b = appendSRID(b, g.SRID)
			return append(b, '}'), nil
		}
	case convPoint:
		if g, ok := v.(binlogstream.Geometry); ok {
			x, y, err := pointXY(g.WKB)
			if err != nil {
				return b, err
			}
			b = append(b, `{"x":`...)
			b = appendFloat(b, x, 64)
			b = append(b, `,"y":`...)
			b = appendFloat(b, y, 64)
			b = append(b, `,"wkb":`...)
			b = appendBytesValue(b, g.WKB, BinaryBytes)
			b = append(b, `,"srid":`...)
			b = appendSRID(b, g.SRID)
			return append(b, '}'), nil
		}
	}
	return b, fmt.Errorf("a %s value of Go type %T has no Debezium form here", s.typ, v)
}

// appendSRID writes a geometry's SRID as Debezium does: 0, MySQL's unset
// SRID, is null, and the 32 bits are read as a signed int32 (the
// schema's type).
func appendSRID(b []byte, srid uint32) []byte {
	if srid == 0 {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(int32(srid)), 10)
}

func zeroValue(b []byte, nullable bool, epoch string) []byte {
	if nullable {
		return append(b, "null"...)
	}
	return append(b, epoch...)
}

// appendBytesValue writes binary data as JsonConverter writes BYTES
// (standard base64), or as binary.handling.mode's string says.
func appendBytesValue(b, v []byte, mode BinaryHandling) []byte {
	b = append(b, '"')
	switch mode {
	case BinaryBase64URLSafe:
		b = base64.URLEncoding.AppendEncode(b, v)
	case BinaryHex:
		b = hex.AppendEncode(b, v)
	default: // bytes and base64 read the same in JSON
		b = base64.StdEncoding.AppendEncode(b, v)
	}
	return append(b, '"')
}

// unscaled is the DECIMAL text's unscaled value at scale.
func unscaled(text string, scale int) (*big.Int, error) {
	neg := strings.HasPrefix(text, "-")
	t := strings.TrimLeft(text, "+-")
	intPart, frac, _ := strings.Cut(t, ".")
	if len(frac) > scale {
		return nil, fmt.Errorf("DECIMAL value %q has more than %d fractional digits", text, scale)
	}
	frac += strings.Repeat("0", scale-len(frac))
	u, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		return nil, fmt.Errorf("DECIMAL value %q is not a number", text)
	}
	if neg {
		u.Neg(u)
	}
	return u, nil
}

// twosComplement is u's minimal big-endian two's complement, as Java's
// BigInteger.toByteArray gives it (what Kafka Connect's Decimal holds).
func twosComplement(u *big.Int) []byte {
	if u.Sign() >= 0 {
		b := u.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -u-1 in bytes, inverted, is u's two's complement.
	m := new(big.Int).Neg(u)
	m.Sub(m, big.NewInt(1))
	b := m.Bytes()
	for i := range b {
		b[i] = ^b[i]
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		b = append([]byte{0xFF}, b...)
	}
	return b
}

// parseDateTime reads "YYYY-MM-DD[ hh:mm:ss[.f]]" as UTC; zero is true for
// a date with a zero year, month or day (MySQL's zero dates).
func parseDateTime(s string) (t time.Time, zero bool, err error) {
	if len(s) < 10 {
		return t, false, fmt.Errorf("date %q", s)
	}
	y, e1 := strconv.Atoi(s[0:4])
	mo, e2 := strconv.Atoi(s[5:7])
	d, e3 := strconv.Atoi(s[8:10])
	if e1 != nil || e2 != nil || e3 != nil {
		return t, false, fmt.Errorf("date %q", s)
	}
	if mo == 0 || d == 0 {
		return t, true, nil
	}
	var h, mi, sec, ns int
	if len(s) >= 19 {
		h, e1 = strconv.Atoi(s[11:13])
		mi, e2 = strconv.Atoi(s[14:16])
		sec, e3 = strconv.Atoi(s[17:19])
		if e1 != nil || e2 != nil || e3 != nil {
			return t, false, fmt.Errorf("datetime %q", s)
		}
		if len(s) > 20 && s[19] == '.' {
			if ns, err = fraction(s[20:]); err != nil {
				return t, false, fmt.Errorf("datetime %q", s)
			}
		}
	}
	return time.Date(y, time.Month(mo), d, h, mi, sec, ns, time.UTC), false, nil
}

// fraction is a fractional-seconds text in nanoseconds.
func fraction(f string) (int, error) {
	if len(f) > 9 {
		f = f[:9]
	}
	n, err := strconv.Atoi(f + strings.Repeat("0", 9-len(f)))
	return n, err
}

// parseTime reads "[-]H+:MM:SS[.f]" as microseconds.
func parseTime(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	t := strings.TrimPrefix(s, "-")
	parts := strings.Split(t, ":")
	if len(parts) != 3 {
		return 0, fmt.Errorf("time %q", s)
	}
	secText, frac, _ := strings.Cut(parts[2], ".")
	h, e1 := strconv.ParseInt(parts[0], 10, 64)
	m, e2 := strconv.ParseInt(parts[1], 10, 64)
	sec, e3 := strconv.ParseInt(secText, 10, 64)
	if e1 != nil || e2 != nil || e3 != nil {
		return 0, fmt.Errorf("time %q", s)
	}
	ns := 0
	if frac != "" {
		var err error
		if ns, err = fraction(frac); err != nil {
			return 0, fmt.Errorf("time %q", s)
		}
	}
	us := ((h*60+m)*60+sec)*1_000_000 + int64(ns/1000)
	if neg {
		us = -us
	}
	return us, nil
}

// zonedText is t as ISO-8601 in UTC ("Z") with the column's fractional
// digits.
func zonedText(t time.Time, fsp int) string {
	layout := "2006-01-02T15:04:05"
	if fsp > 0 {
		layout += "." + strings.Repeat("0", fsp)
	}
	return t.UTC().Format(layout) + "Z"
}

// pointXY reads a WKB point's coordinates.
func pointXY(wkb []byte) (x, y float64, err error) {
	if len(wkb) < 21 {
		return 0, 0, fmt.Errorf("POINT: %d bytes of WKB", len(wkb))
	}
	var order binary.ByteOrder = binary.LittleEndian
	if wkb[0] == 0 {
		order = binary.BigEndian
	}
	if order.Uint32(wkb[1:5]) != 1 {
		return 0, 0, fmt.Errorf("POINT: WKB of geometry type %d", order.Uint32(wkb[1:5]))
	}
	return math.Float64frombits(order.Uint64(wkb[5:13])), math.Float64frombits(order.Uint64(wkb[13:21])), nil
}
