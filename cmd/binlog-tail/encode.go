package main

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream"
)

// The JSON of the output lines is written by hand: the key order is fixed,
// the same binlog always gives the same bytes, and a row costs no
// reflection. See doc.go for the format.

// rowKind names what a rows event does, "" for an event that is not one.
func rowKind(t replication.EventType) string {
	switch t {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2,
		replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		return "insert"
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2,
		replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1, replication.PARTIAL_UPDATE_ROWS_EVENT:
		return "update"
	case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2,
		replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		return "delete"
	}
	return ""
}

// isTxnMarker reports whether a Query event only opens or ends a
// transaction (no line is written for those).
func isTxnMarker(q []byte) bool {
	s := strings.TrimSpace(string(q))
	return strings.EqualFold(s, "BEGIN") || strings.EqualFold(s, "COMMIT") || strings.EqualFold(s, "ROLLBACK")
}

// appendRowLine appends the line of one row change: image after is the row
// (for a delete, the deleted row); before is the update's before image.
func appendRowLine(b []byte, kind string, re *replication.RowsEvent, before, after []any, ev *binlogstream.Event, resume binlogstream.ResumePosition) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, kind...)
	b = append(b, `","schema":`...)
	b = appendString(b, string(re.Table.Schema))
	b = append(b, `,"table":`...)
	b = appendString(b, string(re.Table.Table))
	b = append(b, `,"row":`...)
	b = appendRow(b, after)
	if before != nil {
		b = append(b, `,"before":`...)
		b = appendRow(b, before)
	}
	return appendTail(b, ev, resume)
}

// appendQueryLine appends the line of a DDL or other statement event.
func appendQueryLine(b []byte, q *replication.QueryEvent, ev *binlogstream.Event) []byte {
	b = append(b, `{"type":"query","schema":`...)
	b = appendString(b, string(q.Schema))
	b = append(b, `,"query":`...)
	b = appendString(b, string(q.Query))
	return appendTail(b, ev, ev.Resume)
}

// appendTail writes the fields every line ends with; resume is always the
// last key (outfile.go reads it back).
func appendTail(b []byte, ev *binlogstream.Event, resume binlogstream.ResumePosition) []byte {
	if ev.GTID != "" {
		b = append(b, `,"gtid":`...)
		b = appendString(b, ev.GTID)
	}
	b = append(b, `,"file":`...)
	b = appendString(b, ev.End.File)
	b = append(b, `,"pos":`...)
	b = strconv.AppendUint(b, ev.End.Offset, 10)
	b = append(b, `,"resume":`...)
	b = appendString(b, resume.String())
	return append(b, "}\n"...)
}

func appendRow(b []byte, row []any) []byte {
	b = append(b, '[')
	for i, v := range row {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendValue(b, v)
	}
	return append(b, ']')
}

// timeLayout renders time.Time values (only seen when a decoder is set to
// parse times; go-mysql's default gives strings already).
const timeLayout = "2006-01-02 15:04:05.999999"

// appendValue appends one column value as go-mysql decoded it.
func appendValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case int8:
		return strconv.AppendInt(b, int64(v), 10)
	case int16:
		return strconv.AppendInt(b, int64(v), 10)
	case int32:
		return strconv.AppendInt(b, int64(v), 10)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case uint8:
		return strconv.AppendUint(b, uint64(v), 10)
	case uint16:
		return strconv.AppendUint(b, uint64(v), 10)
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10)
	case uint64:
		return strconv.AppendUint(b, v, 10)
	case uint:
		return strconv.AppendUint(b, uint64(v), 10)
	case float32:
		return appendFloat(b, float64(v), 32)
	case float64:
		return appendFloat(b, v, 64)
	case bool:
		return strconv.AppendBool(b, v)
	case string:
		return appendString(b, v)
	case []byte:
		return appendBytes(b, v)
	case time.Time:
		return appendString(b, v.UTC().Format(timeLayout))
	case fmt.Stringer: // decimal.Decimal with UseDecimal, JSON partial-update diffs
		return appendString(b, v.String())
	default:
		return appendString(b, fmt.Sprint(v))
	}
}

func appendFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		// Not representable in JSON; MySQL stores neither, but stay valid.
		return appendString(b, strconv.FormatFloat(f, 'g', -1, bits))
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

// appendBytes writes binary data: as a JSON string when it is valid UTF-8
// (lossless), else as {"base64":"<standard, padded base64>"}.
func appendBytes(b []byte, v []byte) []byte {
	if utf8.Valid(v) {
		return appendUTF8(b, v)
	}
	return appendBase64(b, v)
}

// appendString writes s as a JSON string, or as {"base64":...} when s is not
// valid UTF-8 (a VARBINARY or a latin1 string, say), which JSON cannot hold.
func appendString(b []byte, s string) []byte {
	if utf8.ValidString(s) {
		return appendUTF8(b, s)
	}
	return appendBase64(b, []byte(s))
}

func appendBase64(b []byte, v []byte) []byte {
	b = append(b, `{"base64":"`...)
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, `"}`...)
}

const hexDigits = "0123456789abcdef"

// appendUTF8 quotes valid UTF-8 as a JSON string: '"', '\' and control
// characters escaped, everything else as is.
func appendUTF8[T string | []byte](b []byte, s T) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
