package mysqljson

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// The text forms below are go-mysql's with RenderJSONAsMySQLText (its
// json_mysql_text.go), so a document built from a diff reads like a whole
// document go-mysql decodes in that mode: compact, keys in MySQL's order,
// a whole DOUBLE keeps ".0", DECIMAL unquoted, temporal values quoted.

func formatDouble(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	if f == math.Trunc(f) {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// quote quotes s byte-transparently, as MySQL stores JSON strings.
func quote(s string) string {
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
			return quote(packedTime(int64(binary.LittleEndian.Uint64(b))))
		}
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_TIMESTAMP:
		if len(b) >= 8 {
			return quote(packedDatetime(int64(binary.LittleEndian.Uint64(b)), tp == mysql.MYSQL_TYPE_DATE))
		}
	}
	return quote("base64:type" + strconv.Itoa(int(tp)) + ":" + base64.StdEncoding.EncodeToString(b))
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
