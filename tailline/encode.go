package tailline

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/digits"
)

// The JSON of the lines is written by hand: the key order is fixed,
// the same binlog always gives the same bytes, and a row costs no
// reflection. cmd/binlog-tail/doc.go documents the format.

// IsTxnMarker reports whether a Query event only opens or ends a
// transaction (no line is written for those).
func IsTxnMarker(q []byte) bool {
	s := strings.TrimSpace(string(q))
	return strings.EqualFold(s, "BEGIN") || strings.EqualFold(s, "COMMIT") || strings.EqualFold(s, "ROLLBACK")
}

// appendRowLine appends the line of one row change: image after is the row
// (for a delete, the deleted row); before is the update's before image;
// skipAfter and skipBefore the columns each image left out (MINIMAL and
// NOBLOB row images). The streaming path builds the same bytes from the
// parts below, with the per-event parts rendered once per event.
func appendRowLine(b []byte, kind string, re *replication.RowsEvent, tbl *binlogstream.Table, before, after []any,
	skipBefore, skipAfter []int, ev *binlogstream.Event, resume binlogstream.ResumePosition) []byte {
	b = appendRowHead(b, kind, re, tbl)
	b = appendRowImages(b, tbl, newTableFormat(tbl), before, after, skipBefore, skipAfter)
	b = appendTailHead(b, ev)
	return appendToken(b, resume)
}

// appendRowHead: `{"type":K,"schema":S,"table":T,"row":`, with
// `"positional":true` before "row" when the table's columns are unknown.
func appendRowHead(b []byte, kind string, re *replication.RowsEvent, tbl *binlogstream.Table) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, kind...)
	b = append(b, `","schema":`...)
	b = appendBytes(b, re.Table.Schema)
	b = append(b, `,"table":`...)
	b = appendBytes(b, re.Table.Table)
	if !tbl.Known() {
		b = append(b, `,"positional":true`...)
	}
	return append(b, `,"row":`...)
}

// AppendRead appends the line of r, a row a snapshot read, as a row line
// of type "read" without "before": with the table and the position of ev
// (a read of the same chunk, or r's own event) and the token of resume.
// What the lines of a chunk's rows share is written once per table (the
// start, up to the row) and once per position (the fields after the
// row); each token goes through f.tokens: the tokens of a chunk's rows
// differ only in the boundary key.
func (f *Formatter) AppendRead(b []byte, ev *binlogstream.Event, r *binlogstream.SnapshotRead, resume binlogstream.ResumePosition) []byte {
	if ev.Table != f.tfOf {
		f.tfOf, f.tf = ev.Table, newTableFormat(ev.Table)
	}
	if ev.Table != f.readOf {
		f.readOf = ev.Table
		f.readHead = append(f.readHead[:0], `{"type":"read","schema":`...)
		f.readHead = appendString(f.readHead, ev.Table.Schema)
		f.readHead = append(f.readHead, `,"table":`...)
		f.readHead = appendString(f.readHead, ev.Table.Name)
		f.readHead = append(f.readHead, `,"row":`...)
	}
	if f.readTail == nil || ev.End != f.readEnd || ev.GTID != f.readGTID {
		f.readEnd, f.readGTID = ev.End, ev.GTID
		f.readTail = appendTailHead(f.readTail[:0], ev)
	}
	b = append(b, f.readHead...)
	b = appendRowImages(b, ev.Table, f.tf, nil, r.Row, nil, absentTail(r.Row))
	b = append(b, f.readTail...)
	b = append(b, '"')
	b = f.tokens.Append(b, resume)
	return append(b, "\"}\n"...)
}

// absentTail lists the Absent values a read row ends with (the hidden
// hash columns of MariaDB's long unique keys, which a SELECT cannot read):
// left out of the line, as a row image's skipped columns are.
func absentTail(row []any) []int {
	var skip []int
	for i := len(row) - 1; i >= 0 && row[i] == binlogstream.Absent; i-- {
		skip = append(skip, i)
	}
	return skip
}

// appendRowImages: the row, then `,"before":...` for an update. tf, when
// not nil, is the table's tableFormat.
func appendRowImages(b []byte, tbl *binlogstream.Table, tf *tableFormat, before, after []any, skipBefore, skipAfter []int) []byte {
	b = appendRow(b, tbl, tf, after, skipAfter)
	if before != nil {
		b = append(b, `,"before":`...)
		b = appendRow(b, tbl, tf, before, skipBefore)
	}
	return b
}

// tableFormat is what is worked out once per table version for the rows of
// its events: each column's `"name":` key and how its values are written.
type tableFormat struct {
	keys [][]byte
	enc  []colEncoding
	mask []uint64 // encUnsigned: the column's width, as a mask of its bits
	set  []byte   // encSet: where a value's members are joined (a job's tableFormat is its formatter's alone)
}

// colEncoding says how a column's values are written.
type colEncoding uint8

const (
	// encValue: through Table.Value (the general case).
	encValue colEncoding = iota
	// encSigned: a signed integer column; go-mysql's value is the server's.
	encSigned
	// encUTF8: text in a UTF-8 charset, go-mysql's string as it is.
	encUTF8
	// encAsIs: DECIMAL, FLOAT, DOUBLE: go-mysql's value is the server's.
	encAsIs
	// encBytes: VARBINARY and BLOB, bytes whichever Go type holds them.
	encBytes
	// encLatin1: text in latin1 (MariaDB's default charset), the same
	// bytes in UTF-8 when they are ASCII.
	encLatin1
	// encDatetime: DATETIME and TIMESTAMP, whose text go-mysql's decoding
	// gives with the column's fractional digits already (checked by length).
	encDatetime
	// encUnsigned: an UNSIGNED integer column; a signed value (decoded
	// without signedness metadata) is the same bits at the column's width.
	encUnsigned
	// encTime: TIME, whose text has the column's fractional digits when it
	// ends in a dot and FSP digits (or, with FSP 0, holds no dot).
	encTime
	// encDate: DATE, a string as it is.
	encDate
	// encYear: YEAR, an integer as it is.
	encYear
	// encEnum: ENUM with its members known: an index into them.
	encEnum
	// encSet: SET with its members known: a bit per member.
	encSet
	// encBit: BIT, the value's bits as an unsigned integer.
	encBit
	// encJSON: JSON, its text as a string.
	encJSON
)

// unsignedMasks are the bits of each integer type (Table.Value's reading
// of a signed value at the column's width).
var unsignedMasks = map[string]uint64{"tinyint": 0xFF, "smallint": 0xFFFF, "mediumint": 0xFFFFFF, "int": 0xFFFFFFFF, "bigint": ^uint64(0)}

// newTableFormat is tbl's tableFormat; nil when its columns are unknown.
func newTableFormat(tbl *binlogstream.Table) *tableFormat {
	if !tbl.Known() {
		return nil
	}
	tf := &tableFormat{keys: make([][]byte, len(tbl.Columns)), enc: make([]colEncoding, len(tbl.Columns)),
		mask: make([]uint64, len(tbl.Columns))}
	var all []byte
	ends := make([]int, len(tbl.Columns))
	for i, c := range tbl.Columns {
		all = append(appendString(all, c.Name), ':')
		ends[i] = len(all)
		switch {
		case isIntegerType(c.DataType) && !c.Unsigned:
			tf.enc[i] = encSigned
		case isTextType(c.DataType) && (c.Charset == "utf8mb4" || c.Charset == "utf8mb3" || c.Charset == "ascii"):
			tf.enc[i] = encUTF8
		case c.DataType == "decimal" || c.DataType == "float" || c.DataType == "double":
			tf.enc[i] = encAsIs
		case c.DataType == "varbinary" || c.DataType == "tinyblob" || c.DataType == "blob" ||
			c.DataType == "mediumblob" || c.DataType == "longblob":
			tf.enc[i] = encBytes
		case isTextType(c.DataType) && c.Charset == "latin1":
			tf.enc[i] = encLatin1
		case c.DataType == "datetime" || c.DataType == "timestamp":
			tf.enc[i] = encDatetime
		case isIntegerType(c.DataType):
			tf.enc[i], tf.mask[i] = encUnsigned, unsignedMasks[c.DataType]
		case c.DataType == "time":
			tf.enc[i] = encTime
		case c.DataType == "date":
			tf.enc[i] = encDate
		case c.DataType == "year":
			tf.enc[i] = encYear
		case c.DataType == "enum" && c.Elems != nil:
			tf.enc[i] = encEnum
		case c.DataType == "set" && c.Elems != nil:
			tf.enc[i] = encSet
		case c.DataType == "bit":
			tf.enc[i] = encBit
		case c.DataType == "json" && utf8Charset(c.Charset):
			tf.enc[i] = encJSON
		}
	}
	from := 0
	for i, end := range ends {
		tf.keys[i] = all[from:end:end]
		from = end
	}
	return tf
}

// appendColumn writes column i's value v as encoding says, falling back
// to the general appendColumn for values of another Go type.
func (tf *tableFormat) appendColumn(b []byte, tbl *binlogstream.Table, i int, v any) []byte {
	switch tf.enc[i] {
	case encSigned:
		switch v.(type) {
		case int64, int32, int16, int8:
			return appendValue(b, v)
		}
	case encUTF8, encBytes:
		switch x := v.(type) {
		case string:
			return appendString(b, x)
		case []byte:
			return appendBytes(b, x)
		}
	case encLatin1:
		switch x := v.(type) {
		case string:
			if isASCII(x) {
				return appendString(b, x)
			}
		case []byte:
			if isASCII(x) {
				return appendBytes(b, x)
			}
		}
	case encDatetime:
		// "YYYY-MM-DD hh:mm:ss" and "." and FSP digits: as Table.Value gives it.
		fsp := tbl.Columns[i].FSP
		if x, ok := v.(string); ok && (fsp == 0 && len(x) == 19 || fsp > 0 && len(x) == 20+fsp && x[19] == '.') {
			return appendString(b, x)
		}
	case encAsIs:
		switch x := v.(type) {
		case string:
			return appendString(b, x)
		case float64:
			return appendFloat(b, x, 64)
		case float32:
			return appendFloat(b, float64(x), 32)
		}
	case encUnsigned:
		switch x := v.(type) {
		case int64:
			return digits.AppendUint(b, uint64(x)&tf.mask[i])
		case uint64:
			return digits.AppendUint(b, x)
		}
	case encTime:
		if x, ok := v.(string); ok && hasFraction(x, tbl.Columns[i].FSP) {
			return appendString(b, x)
		}
	case encDate:
		if x, ok := v.(string); ok {
			return appendString(b, x)
		}
	case encYear:
		if x, ok := v.(int64); ok {
			return appendInt(b, x)
		}
	case encEnum:
		if x, ok := v.(int64); ok {
			elems := tbl.Columns[i].Elems
			if x <= 0 || x > int64(len(elems)) {
				return append(b, `""`...)
			}
			return appendString(b, elems[x-1])
		}
	case encSet:
		if x, ok := v.(int64); ok {
			tf.set = tf.set[:0]
			for k, m := range tbl.Columns[i].Elems {
				if uint64(x)&(1<<uint(k)) != 0 {
					if len(tf.set) > 0 {
						tf.set = append(tf.set, ',')
					}
					tf.set = append(tf.set, m...)
				}
			}
			return appendBytes(b, tf.set)
		}
	case encBit:
		if x, ok := v.(int64); ok {
			return digits.AppendUint(b, uint64(x))
		}
	case encJSON:
		switch x := v.(type) {
		case []byte:
			return appendBytes(b, x)
		case string:
			return appendString(b, x)
		}
	}
	return appendColumn(b, tbl, i, v)
}

// hasFraction reports whether a temporal text has exactly fsp fractional
// digits: none and no dot for 0, else a dot and fsp digits at its end.
func hasFraction(s string, fsp int) bool {
	if fsp == 0 {
		return strings.IndexByte(s, '.') < 0
	}
	if len(s) <= fsp || s[len(s)-fsp-1] != '.' {
		return false
	}
	for i := len(s) - fsp; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// AppendTableLine appends the line of a Table_map: the table the rows after
// it belong to, as of this position.
func AppendTableLine(b []byte, tm *replication.TableMapEvent, tbl *binlogstream.Table, ev *binlogstream.Event) []byte {
	b = append(b, `{"type":"table","schema":`...)
	b = appendBytes(b, tm.Schema)
	b = append(b, `,"table":`...)
	b = appendBytes(b, tm.Table)
	if tbl == nil {
		tbl = &binlogstream.Table{}
	}
	b = append(b, `,"source":"`...)
	b = append(b, tbl.Source.String()...)
	b = append(b, `","columns":[`...)
	for i, c := range tbl.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		if tbl.Known() {
			b = appendString(b, c.Name)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `,"type":`...)
		if c.Type != "" {
			b = appendString(b, c.Type)
		} else {
			b = append(b, "null"...)
		}
		if c.Charset != "" {
			b = append(b, `,"charset":`...)
			b = appendString(b, c.Charset)
		}
		b = append(b, `,"nullable":`...)
		b = strconv.AppendBool(b, c.Nullable)
		b = append(b, '}')
	}
	b = append(b, ']')
	if len(tbl.PrimaryKey) > 0 && tbl.Known() {
		b = append(b, `,"primary_key":[`...)
		for i, k := range tbl.PrimaryKey {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, tbl.Columns[k].Name)
		}
		b = append(b, ']')
	}
	if tbl.Unknown != "" {
		b = append(b, `,"unknown":`...)
		b = appendString(b, tbl.Unknown)
	}
	b = appendTailHead(b, ev)
	return appendToken(b, ev.Resume)
}

// AppendQueryLine appends the line of a DDL or other statement event, q
// being ev's: the statement with its secrets masked (Event.MaskedQuery),
// as the output is often shipped elsewhere.
func AppendQueryLine(b []byte, q *replication.QueryEvent, ev *binlogstream.Event) []byte {
	b = append(b, `{"type":"query","schema":`...)
	b = appendBytes(b, q.Schema)
	b = append(b, `,"query":`...)
	b = appendString(b, ev.MaskedQuery())
	b = appendTailHead(b, ev)
	return appendToken(b, ev.Resume)
}

// AppendProgressLine: the position moved past events that write no line
// (rows of tables --tables leaves out).
func AppendProgressLine(b []byte, ev *binlogstream.Event) []byte {
	b = append(b, `{"type":"progress"`...)
	b = appendTailHead(b, ev)
	return appendToken(b, ev.Resume)
}

// appendTailHead writes the fields every line of ev ends with, up to the
// value of "resume", which is always the last key (binlog-tail reads it
// back from its file, binlog-publish from a message: see Resume).
func appendTailHead(b []byte, ev *binlogstream.Event) []byte {
	if ev.GTID != "" {
		b = append(b, `,"gtid":`...)
		b = appendString(b, ev.GTID)
	}
	b = append(b, `,"file":`...)
	b = appendString(b, ev.End.File)
	b = append(b, `,"pos":`...)
	b = strconv.AppendUint(b, ev.End.Offset, 10)
	return append(b, `,"resume":`...)
}

// appendToken ends a line with its resume token.
func appendToken(b []byte, resume binlogstream.ResumePosition) []byte {
	// The token is base64url after "bls1.": nothing to escape in JSON, and
	// AppendText writes it without allocating.
	b = append(b, '"')
	b, _ = resume.AppendText(b)
	return append(b, "\"}\n"...)
}

// appendRowToken is appendToken for the row lines of one event, after
// its first n rows, through w: their tokens share most of their bytes.
func appendRowToken(w *binlogstream.TokenWriter, b []byte, ev *binlogstream.Event, n int) []byte {
	b = append(b, '"')
	b = w.AppendAfterRows(b, ev, n)
	return append(b, "\"}\n"...)
}

// appendRow writes a row image: an object keyed by column name, in the
// table's column order and without the columns the image left out, when
// the table is known; else an array of every value.
func appendRow(b []byte, tbl *binlogstream.Table, tf *tableFormat, row []any, skipped []int) []byte {
	if !tbl.Known() || len(tbl.Columns) != len(row) {
		b = append(b, '[')
		for i, v := range row {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendColumn(b, tbl, i, v)
		}
		return append(b, ']')
	}
	b = append(b, '{')
	first := true
	for i, v := range row {
		if len(skipped) > 0 && slices.Contains(skipped, i) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		if tf == nil {
			b = append(appendString(b, tbl.Columns[i].Name), ':')
			b = appendColumn(b, tbl, i, v)
			continue
		}
		b = append(b, tf.keys[i]...)
		if v == nil {
			b = append(b, "null"...)
		} else {
			b = tf.appendColumn(b, tbl, i, v)
		}
	}
	return append(b, '}')
}

func isASCII[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// appendColumn writes column i's value as the server means it
// (Table.Value; a value it does not change costs no allocation).
func appendColumn(b []byte, tbl *binlogstream.Table, i int, v any) []byte {
	return appendValue(b, tbl.Value(i, v))
}

func isIntegerType(dt string) bool {
	switch dt {
	case "tinyint", "smallint", "mediumint", "int", "bigint":
		return true
	}
	return false
}

func isTextType(dt string) bool {
	switch dt {
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		return true
	}
	return false
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
		return appendInt(b, int64(v))
	case int16:
		return appendInt(b, int64(v))
	case int32:
		return appendInt(b, int64(v))
	case int64:
		return appendInt(b, v)
	case int:
		return appendInt(b, int64(v))
	case uint8:
		return digits.AppendUint(b, uint64(v))
	case uint16:
		return digits.AppendUint(b, uint64(v))
	case uint32:
		return digits.AppendUint(b, uint64(v))
	case uint64:
		return digits.AppendUint(b, v)
	case uint:
		return digits.AppendUint(b, uint64(v))
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
	case binlogstream.Geometry:
		b = append(b, `{"srid":`...)
		b = strconv.AppendUint(b, uint64(v.SRID), 10)
		b = append(b, `,"wkb":"`...)
		b = hex.AppendEncode(b, v.WKB)
		return append(b, `"}`...)
	case binlogstream.RawText:
		b = append(b, `{"charset":`...)
		b = appendString(b, v.Charset)
		b = append(b, `,"base64":"`...)
		b = base64.StdEncoding.AppendEncode(b, v.Bytes)
		return append(b, `"}`...)
	case fmt.Stringer: // decimal.Decimal with UseDecimal, JSON partial-update diffs
		return appendString(b, v.String())
	default:
		return appendString(b, fmt.Sprint(v))
	}
}

// appendInt is strconv.AppendInt(b, v, 10) without its intermediate
// buffer: the digits are written in place, two a step.
func appendInt(b []byte, v int64) []byte {
	if v < 0 {
		return digits.AppendUint(append(b, '-'), -uint64(v))
	}
	return digits.AppendUint(b, uint64(v))
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
func appendBytes(b []byte, v []byte) []byte { return appendText(b, v) }

// appendString writes s as a JSON string, or as {"base64":...} when s is not
// valid UTF-8 (a VARBINARY or a latin1 string, say), which JSON cannot hold.
func appendString(b []byte, s string) []byte { return appendText(b, s) }

func appendBase64(b []byte, v []byte) []byte {
	b = append(b, `{"base64":"`...)
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, `"}`...)
}

const hexDigits = "0123456789abcdef"

// textClass sorts bytes for appendText: one table lookup per byte in the
// common case.
var textClass = func() (t [256]byte) {
	for c := range 256 {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = nonASCII
		case c < 0x20 || c == '"' || c == '\\':
			t[c] = escaped
		}
	}
	return t
}()

const (
	plainASCII = iota
	escaped
	nonASCII
)

// appendText quotes s as a JSON string ('"', '\' and control characters
// escaped, everything else as is) while checking, in the same pass, that
// it is valid UTF-8; if it is not, it writes the base64 form instead.
func appendText[T string | []byte](b []byte, s T) []byte {
	mark := len(b)
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plainWord(load8(s, i)) {
			i += 8
			continue
		}
		c := s[i]
		switch textClass[c] {
		case plainASCII:
			i++
			continue
		case nonASCII:
			n := utf8SeqLen(s, i)
			if n == 0 {
				return appendBase64(b[:mark], []byte(s))
			}
			i += n
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
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// load8 returns s[i:i+8] as a little-endian word (one load: the compiler
// combines the byte loads).
func load8[T string | []byte](s T, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// plainWord reports whether the eight bytes of x are all plainASCII (no
// byte at or over 0x80, under 0x20, '"' or '\\'), eight a step: the
// quoting of the ASCII text most values are costs a few instructions per
// word instead of a table lookup and a branch per byte.
func plainWord(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, bs := x^(ones*'"'), x^(ones*'\\')
	// A byte is under 0x20 (or, after the xor, zero) exactly when
	// subtracting 0x20 (1) borrows into its high bit while the byte's own
	// high bit is clear; bytes at or over 0x80 are caught by x&highs.
	return (x|(x-ones*0x20)&^x|(q-ones)&^q|(bs-ones)&^bs)&highs == 0
}

// utf8SeqLen returns the length of the valid UTF-8 sequence that starts
// with the non-ASCII byte s[i], or 0 when there is none: the rules of
// utf8.Valid (no overlong forms, no surrogates, nothing past U+10FFFF).
func utf8SeqLen[T string | []byte](s T, i int) int {
	c, rest := s[i], len(s)-i
	cont := func(k int) bool { return s[i+k]&0xC0 == 0x80 }
	lo, hi := byte(0x80), byte(0xBF) // the second byte's range
	switch {
	case c >= 0xC2 && c <= 0xDF:
		if rest >= 2 && cont(1) {
			return 2
		}
	case c >= 0xE0 && c <= 0xEF:
		if c == 0xE0 {
			lo = 0xA0
		} else if c == 0xED {
			hi = 0x9F
		}
		if rest >= 3 && s[i+1] >= lo && s[i+1] <= hi && cont(2) {
			return 3
		}
	case c >= 0xF0 && c <= 0xF4:
		if c == 0xF0 {
			lo = 0x90
		} else if c == 0xF4 {
			hi = 0x8F
		}
		if rest >= 4 && s[i+1] >= lo && s[i+1] <= hi && cont(2) && cont(3) {
			return 4
		}
	}
	return 0
}

// utf8Charset: text in it is UTF-8 as stored (MariaDB's JSON, a LONGTEXT,
// can be converted to another charset).
func utf8Charset(cs string) bool {
	switch cs {
	case "", "utf8mb4", "utf8mb3", "utf8", "ascii":
		return true
	}
	return false
}
