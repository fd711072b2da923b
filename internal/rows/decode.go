package rows

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream/internal/digits"
	"github.com/binlogstream/binlogstream/internal/ifacebox"
	"github.com/binlogstream/binlogstream/internal/tablemap"
)

// This file decodes the row images of a rows event into exactly the
// values go-mysql's RowsEvent.DecodeData gives (same Go types, same text),
// without fmt and with a few allocations per event instead of several per
// row: go-mysql formats every DATETIME, TIME and DATE through fmt.Sprintf
// (BenchmarkRowsDecode compares the two per type family).
// FuzzRowsDecodeEqualsGoMySQL holds it to go-mysql's decoder on arbitrary
// bytes for every column type; whatever it does not handle (JSON columns,
// MySQL partial JSON updates, parser options that change value types:
// ParseTime, UseDecimal) or cannot decode goes to go-mysql's decoder,
// which then gives the values or the error it always gave.
//
// Strings alias the event's bytes (go-mysql's own strings do too), and
// the temporal and DECIMAL texts of one event share one buffer, written
// once.

// rowsEventFields locates the go-mysql parser settings a RowsEvent carries
// in unexported fields: their offsets, found once by reflection and read
// per event without it. Any not found with the expected type (another
// go-mysql version): the fast decoder is off and go-mysql decodes
// everything.
var rowsEventFields = func() (f struct {
	ok                                                                  bool
	eventType, needBitmap2, compressed, parseTime, useDecimal, location uintptr
}) {
	t := reflect.TypeOf(replication.RowsEvent{})
	f.ok = true
	at := func(name string, typ reflect.Type) uintptr {
		sf, found := t.FieldByName(name)
		if !found || sf.Type != typ || len(sf.Index) != 1 {
			f.ok = false
		}
		return sf.Offset
	}
	boolType := reflect.TypeOf(false)
	f.eventType = at("eventType", reflect.TypeOf(replication.EventType(0)))
	f.needBitmap2 = at("needBitmap2", boolType)
	f.compressed = at("compressed", boolType)
	f.parseTime = at("parseTime", boolType)
	f.useDecimal = at("useDecimal", boolType)
	f.location = at("timestampStringLocation", reflect.TypeOf((*time.Location)(nil)))
	return f
}()

// rowsSettings are the parser's settings for one rows event.
type rowsSettings struct {
	pairs, compressed bool
	loc               *time.Location // nil: the process's local zone, as go-mysql
}

// fastSettings reads re's settings; ok is false when the fast decoder does
// not apply (go-mysql decodes).
func fastSettings(re *replication.RowsEvent) (s rowsSettings, ok bool) {
	f := &rowsEventFields
	if !f.ok {
		return s, false
	}
	base := unsafe.Pointer(re)
	flag := func(off uintptr) bool { return *(*bool)(unsafe.Add(base, off)) }
	if flag(f.parseTime) || flag(f.useDecimal) {
		return s, false // time.Time and decimal.Decimal values: go-mysql's
	}
	if *(*replication.EventType)(unsafe.Add(base, f.eventType)) == replication.PARTIAL_UPDATE_ROWS_EVENT {
		return s, false
	}
	s.pairs, s.compressed = flag(f.needBitmap2), flag(f.compressed)
	s.loc = *(**time.Location)(unsafe.Add(base, f.location))
	return s, true
}

// colPlan is how one column's values are read: the type and metadata
// go-mysql's decodeValue ends up switching on (a STRING column's real type
// and length unpacked from its metadata).
type colPlan struct {
	tp       byte
	meta     uint16
	length   int
	unsigned bool
}

// tablePlan is the column plans of one Table_map; cols is nil when the
// fast decoder does not handle one of its columns (go-mysql decodes).
type tablePlan struct {
	tm   *replication.TableMapEvent
	cols []colPlan
	// compressed: a column is COMPRESSED, which go-mysql cannot decode.
	compressed bool
}

// PlanCache keeps the plan of the tables seen last; go-mysql makes a new
// TableMapEvent per Table_map, and most repeat the same table. It is used
// on go-mysql's parsing goroutine only.
type PlanCache struct {
	last *tablePlan
	byID map[uint64]*tablePlan
}

// plan returns the plan of re's table, or nil when go-mysql must decode.
func (c *PlanCache) plan(re *replication.RowsEvent) *tablePlan {
	tm := re.Table
	if tm == nil {
		return nil
	}
	p := c.last
	switch {
	case p != nil && p.tm == tm:
	case c.byID[tm.TableID] != nil && samePlanSource(c.byID[tm.TableID].tm, tm):
		p = c.byID[tm.TableID]
		p.tm = tm // the newest Table_map of the same shape: a pointer compare next time
	default:
		p = newTablePlan(tm)
		if c.byID == nil || len(c.byID) >= 4096 {
			c.byID = map[uint64]*tablePlan{}
		}
		c.byID[tm.TableID] = p
	}
	c.last = p
	if p.cols == nil {
		return nil
	}
	return p
}

func samePlanSource(a, b *replication.TableMapEvent) bool {
	return a.ColumnCount == b.ColumnCount && string(a.ColumnType) == string(b.ColumnType) &&
		slices.Equal(a.ColumnMeta, b.ColumnMeta) && string(a.SignednessBitmap) == string(b.SignednessBitmap)
}

func newTablePlan(tm *replication.TableMapEvent) *tablePlan {
	p := &tablePlan{tm: tm}
	if len(tm.ColumnType) != int(tm.ColumnCount) || len(tm.ColumnMeta) != int(tm.ColumnCount) {
		return p
	}
	unsigned := tm.UnsignedMap()
	cols := make([]colPlan, tm.ColumnCount)
	for i, tp := range tm.ColumnType {
		meta := tm.ColumnMeta[i]
		c := colPlan{tp: tp, meta: meta, unsigned: unsigned[i]}
		if tp == mysql.MYSQL_TYPE_STRING {
			if meta >= 256 {
				b0, b1 := uint8(meta>>8), uint8(meta&0xFF)
				if b0&0x30 != 0x30 {
					c.length = int(uint16(b1) | uint16((b0&0x30)^0x30)<<4)
					c.tp = b0 | 0x30
				} else {
					c.length = int(meta & 0xFF)
					c.tp = b0
				}
			} else {
				c.length = int(meta)
			}
		}
		switch c.tp {
		case mysql.MYSQL_TYPE_JSON:
			return p // go-mysql's JSON rendering
		case mysql.MYSQL_TYPE_NULL, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT,
			mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_FLOAT,
			mysql.MYSQL_TYPE_DOUBLE, mysql.MYSQL_TYPE_BIT, mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2,
			mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2,
			mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_YEAR, mysql.MYSQL_TYPE_ENUM, mysql.MYSQL_TYPE_SET,
			mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_VECTOR,
			mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING:
		case tablemap.TypeBlobCompressed, tablemap.TypeVarcharCompressed:
			p.compressed = true
		default:
			return p // go-mysql's error for it
		}
		cols[i] = c
	}
	p.cols = cols
	return p
}

// decodeRowsFast fills re.Rows and re.SkippedColumns from data[pos:] as
// go-mysql's DecodeData would, and reports whether it did; when it did
// not, re is as DecodeHeader left it and go-mysql's DecodeData must run,
// unless err says why a COMPRESSED column's value cannot be read (go-mysql
// does not know those columns). The event passed checkImages.
func decodeRowsFast(re *replication.RowsEvent, p *tablePlan, s rowsSettings, pos int, data []byte, a *Arena) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil { // bytes that do not hold what the Table_map says: go-mysql's error
			re.Rows, re.SkippedColumns = nil, nil
			ok = false
			if ce, is := r.(compressedError); is {
				err = fmt.Errorf("%w: a COMPRESSED column of %s: %v", ErrCorrupt, tableName(re), ce.err)
			}
		}
	}()
	if p == nil || int(re.ColumnCount) > len(p.cols) {
		return false, nil
	}
	if s.compressed {
		var err error
		if data, err = mysql.DecompressMariadbData(data[pos:]); err != nil {
			return false, nil
		}
		pos = 0
	}
	d := rowsDec{cols: p.cols[:re.ColumnCount], loc: s.loc, box: newBoxer(a)}
	ncols := len(d.cols)
	bms := []imageBitmap{newImageBitmap(re.ColumnBitmap1, ncols)}
	if s.pairs {
		bms = append(bms, newImageBitmap(re.ColumnBitmap2, ncols))
	}
	var rows [][]any
	var skips [][]int
	if a != nil {
		rows, skips = a.rows[:0], a.skips[:0]
	} else {
		rows, skips = make([][]any, 0, 2), make([][]int, 0, 2)
	}
	var slab []any // the values of the rows to come, ncols each
	first := pos
	for pos < len(data) {
		for k := range bms {
			if len(slab) < ncols {
				more := 1
				if len(rows) > 0 { // as many as the rest holds if they are as long as the first ones
					more = min((len(data)-pos)/max((pos-first)/len(rows), 1)+1, 4096)
				}
				if a != nil {
					slab = a.vals.get(max(1024, ncols)) // zero: released arenas are zeroed
				} else {
					slab = make([]any, ncols*more)
				}
			}
			row := slab[:ncols:ncols]
			slab = slab[ncols:]
			n := d.image(row, &bms[k], data[pos:])
			if n < 0 {
				return false, nil
			}
			pos += n
			if len(rows) == 1 {
				// Two images decoded: room for as many as the event holds
				// if they are as long, and an eighth more, so that the
				// slices are not grown again (doubling them would copy
				// every row slice so far, BenchmarkRowsDecode's B/op).
				est := (len(data) - first) * 2 / max(pos-first, 1)
				est = min(est+est/8+2, 1<<20)
				rows = slices.Grow(rows, est)
				skips = slices.Grow(skips, est)
			}
			rows = append(rows, row)
			skips = append(skips, bms[k].skips)
		}
	}
	re.Rows, re.SkippedColumns = rows, skips
	if a != nil {
		a.rows, a.skips = rows, skips
		// What Release zeroes: the values and strings written, not whole slabs.
		a.vals.trimRest(slab)
		a.strs.trimLast(d.box.strs.cur)
		a.bs.trimLast(d.box.bs.cur)
	}
	return true, nil
}

// compressedError is the panic of a COMPRESSED column's value that does
// not uncompress; decodeRowsFast returns it.
type compressedError struct{ err error }

// imageBitmap is one of the event's column bitmaps: which columns the
// images after it hold, and the skipped ones as go-mysql lists them.
type imageBitmap struct {
	bits    []byte
	present int
	skips   []int // shared by every image of the side: never appended to (cap = len)
}

func newImageBitmap(b []byte, ncols int) imageBitmap {
	m := imageBitmap{bits: b}
	for i := range ncols {
		if b[i>>3]&(1<<(i&7)) != 0 {
			m.present++
		} else {
			m.skips = append(m.skips, i)
		}
	}
	if m.skips == nil {
		m.skips = []int{}
	}
	m.skips = m.skips[:len(m.skips):len(m.skips)]
	return m
}

type rowsDec struct {
	cols []colPlan
	loc  *time.Location
	text []byte // the event's temporal and DECIMAL texts, append only
	box  boxer
}

// boxer makes the interface values of one event's rows from slabs: an
// interface holding a string, an int32 or a float64 points at its value,
// which Go allocates on its own per value (BenchmarkRowsDecode's
// allocs/op count them). Here the value is appended to a slab
// of its type and the interface points into it. A slot is written once,
// before its interface exists, and never again; the slab stays alive as
// long as an interface points into it, as with any interior pointer.
type boxer struct {
	a    *Arena // where the slabs come from when recycled; nil: made
	strs box[string]
	u16  box[uint16]
	u32  box[uint32]
	ints box[int]
	u64  box[uint64]
	f32  box[float32]
	f64  box[float64]
	bs   box[[]byte]
}

// box is the slab values of one type are boxed in now, and the arena's
// slabs of that type it is replaced from when full (nil: made).
type box[T any] struct {
	cur  []T
	from *slabs[T]
}

func newBoxer(a *Arena) boxer {
	if a == nil {
		return boxer{}
	}
	return boxer{a: a, strs: box[string]{from: &a.strs}, u16: box[uint16]{from: &a.u16}, u32: box[uint32]{from: &a.u32},
		ints: box[int]{from: &a.ints}, u64: box[uint64]{from: &a.u64}, f32: box[float32]{from: &a.f32},
		f64: box[float64]{from: &a.f64}, bs: box[[]byte]{from: &a.bs}}
}

// slot appends v to x's slab and returns its address. A full slab is
// replaced by one twice its size, from 16 to 256 values: small events keep
// small slabs (a thousand events may be in flight).
func (x *box[T]) slot(v T) *T {
	if len(x.cur) == cap(x.cur) {
		if x.from != nil {
			x.cur = x.from.get(256)[:0]
		} else {
			x.cur = make([]T, 0, min(max(2*cap(x.cur), 16), 256))
		}
	}
	x.cur = append(x.cur, v)
	return &x.cur[len(x.cur)-1]
}

// The zero value of each type boxed: its interface's type word.
var (
	typeString  any = ""
	typeInt     any = int(0)
	typeInt16   any = int16(0)
	typeUint16  any = uint16(0)
	typeInt32   any = int32(0)
	typeUint32  any = uint32(0)
	typeInt64   any = int64(0)
	typeUint64  any = uint64(0)
	typeFloat32 any = float32(0)
	typeFloat64 any = float64(0)
	typeBytes   any = []byte(nil)
)

func (b *boxer) string(s string) any {
	if s == "" {
		return typeString
	}
	return ifacebox.At(typeString, b.strs.slot(s))
}

// Signed and unsigned integers of one size share a slab: the same bits.
func (b *boxer) int16(v int16) any   { return ifacebox.At(typeInt16, b.u16.slot(uint16(v))) }
func (b *boxer) uint16(v uint16) any { return ifacebox.At(typeUint16, b.u16.slot(v)) }
func (b *boxer) int(v int) any       { return ifacebox.At(typeInt, b.ints.slot(v)) }
func (b *boxer) int32(v int32) any   { return ifacebox.At(typeInt32, b.u32.slot(uint32(v))) }
func (b *boxer) uint32(v uint32) any { return ifacebox.At(typeUint32, b.u32.slot(v)) }
func (b *boxer) int64(v int64) any   { return ifacebox.At(typeInt64, b.u64.slot(uint64(v))) }
func (b *boxer) uint64(v uint64) any { return ifacebox.At(typeUint64, b.u64.slot(v)) }
func (b *boxer) float32(v float32) any {
	return ifacebox.At(typeFloat32, b.f32.slot(v))
}
func (b *boxer) float64(v float64) any { return ifacebox.At(typeFloat64, b.f64.slot(v)) }
func (b *boxer) bytes(v []byte) any    { return ifacebox.At(typeBytes, b.bs.slot(v)) }

// image decodes one row image into row, returning the bytes it took, or
// -1 when go-mysql must decode the event.
func (d *rowsDec) image(row []any, bm *imageBitmap, data []byte) int {
	nullLen := (bm.present + 7) / 8
	nulls := data[:nullLen]
	pos := nullLen
	ni := 0
	for i := range d.cols {
		if bm.bits[i>>3]&(1<<(i&7)) == 0 {
			continue
		}
		if nulls[ni>>3]&(1<<(ni&7)) != 0 {
			ni++
			continue
		}
		ni++
		n := d.value(&row[i], &d.cols[i], data[pos:])
		if n < 0 {
			return -1
		}
		pos += n
	}
	return pos
}

// str returns b as a string sharing its bytes (the event's bytes are
// never written after decoding; go-mysql's strings share them too).
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// textString returns the text appended to d.text since from, sharing the
// buffer: bytes once written there are never written again.
func (d *rowsDec) textString(from int) any {
	return d.box.string(str(d.text[from:len(d.text):len(d.text)]))
}

func (d *rowsDec) reserveText(n int) {
	if cap(d.text)-len(d.text) < n {
		if a := d.box.a; a != nil {
			d.text = a.text.get(max(4096, 2*n))[:0]
		} else {
			d.text = make([]byte, 0, max(min(2*cap(d.text), 4096), 256, 2*n))
		}
	}
}

// value decodes one non-NULL value as go-mysql's decodeValue does.
func (d *rowsDec) value(out *any, c *colPlan, data []byte) int {
	switch c.tp {
	case mysql.MYSQL_TYPE_NULL:
		*out = nil
		return 0
	case mysql.MYSQL_TYPE_LONG:
		u := binary.LittleEndian.Uint32(data)
		if c.unsigned {
			*out = d.box.uint32(u)
		} else {
			*out = d.box.int32(int32(u))
		}
		return 4
	case mysql.MYSQL_TYPE_TINY:
		if c.unsigned {
			*out = data[0]
		} else {
			*out = int8(data[0])
		}
		return 1
	case mysql.MYSQL_TYPE_SHORT:
		u := binary.LittleEndian.Uint16(data)
		if c.unsigned {
			*out = d.box.uint16(u)
		} else {
			*out = d.box.int16(int16(u))
		}
		return 2
	case mysql.MYSQL_TYPE_INT24:
		u := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16
		if c.unsigned {
			*out = d.box.uint32(u)
		} else {
			if u&0x800000 != 0 {
				u |= 0xFF000000
			}
			*out = d.box.int32(int32(u))
		}
		return 3
	case mysql.MYSQL_TYPE_LONGLONG:
		u := binary.LittleEndian.Uint64(data)
		if c.unsigned {
			*out = d.box.uint64(u)
		} else {
			*out = d.box.int64(int64(u))
		}
		return 8
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		return d.decimal(out, int(uint8(c.meta>>8)), int(uint8(c.meta)), data)
	case mysql.MYSQL_TYPE_FLOAT:
		*out = d.box.float32(math.Float32frombits(binary.LittleEndian.Uint32(data)))
		return 4
	case mysql.MYSQL_TYPE_DOUBLE:
		*out = d.box.float64(math.Float64frombits(binary.LittleEndian.Uint64(data)))
		return 8
	case mysql.MYSQL_TYPE_BIT:
		nbits := int((c.meta>>8)*8 + c.meta&0xFF)
		n := (nbits + 7) / 8
		if nbits > 1 {
			if n < 1 || n > 8 {
				return -1
			}
			var v uint64
			for _, x := range data[:n] {
				v = v<<8 | uint64(x)
			}
			*out = d.box.int64(int64(v))
		} else {
			if n != 1 {
				return -1
			}
			*out = d.box.int64(int64(data[0]))
		}
		return n
	case mysql.MYSQL_TYPE_TIMESTAMP:
		t := binary.LittleEndian.Uint32(data)
		if t == 0 {
			*out = "0000-00-00 00:00:00"
		} else {
			*out = d.timestamp(int64(t), 0, 0)
		}
		return 4
	case mysql.MYSQL_TYPE_TIMESTAMP2:
		return d.timestamp2(out, int(c.meta), data)
	case mysql.MYSQL_TYPE_DATETIME:
		v := binary.LittleEndian.Uint64(data)
		if v == 0 {
			*out = "0000-00-00 00:00:00"
			return 8
		}
		day, t := v/1000000, v%1000000
		*out = d.datetime(day/10000, (day%10000)/100, day%100, t/10000, (t%10000)/100, t%100, 0, 0)
		return 8
	case mysql.MYSQL_TYPE_DATETIME2:
		return d.datetime2(out, int(c.meta), data)
	case mysql.MYSQL_TYPE_TIME:
		v := uint64(data[0]) | uint64(data[1])<<8 | uint64(data[2])<<16
		if v == 0 {
			*out = "00:00:00"
			return 3
		}
		d.reserveText(24)
		from := len(d.text)
		d.text = digits.AppendPadded(d.text, v/10000, 2)
		d.text = append(d.text, ':')
		d.text = digits.AppendPadded(d.text, (v%10000)/100, 2)
		d.text = append(d.text, ':')
		d.text = digits.AppendPadded(d.text, v%100, 2)
		*out = d.textString(from)
		return 3
	case mysql.MYSQL_TYPE_TIME2:
		return d.time2(out, int(c.meta), data)
	case mysql.MYSQL_TYPE_DATE:
		v := uint64(data[0]) | uint64(data[1])<<8 | uint64(data[2])<<16
		if v == 0 {
			*out = "0000-00-00"
			return 3
		}
		d.reserveText(16)
		from := len(d.text)
		d.text = digits.AppendPadded(d.text, v/(16*32), 4)
		d.text = append(d.text, '-')
		d.text = digits.AppendPadded(d.text, v/32%16, 2)
		d.text = append(d.text, '-')
		d.text = digits.AppendPadded(d.text, v%32, 2)
		*out = d.textString(from)
		return 3
	case mysql.MYSQL_TYPE_YEAR:
		y := int(data[0])
		if y != 0 {
			y += 1900
		}
		*out = d.box.int(y)
		return 1
	case mysql.MYSQL_TYPE_ENUM:
		switch c.meta & 0xFF {
		case 1:
			*out = d.box.int64(int64(data[0]))
			return 1
		case 2:
			*out = d.box.int64(int64(binary.LittleEndian.Uint16(data)))
			return 2
		}
		return -1
	case mysql.MYSQL_TYPE_SET:
		n := int(c.meta & 0xFF)
		if n < 1 || n > 8 {
			return -1
		}
		var v uint64
		for k := n - 1; k >= 0; k-- {
			v = v<<8 | uint64(data[k])
		}
		*out = d.box.int64(int64(v))
		return n
	case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_VECTOR:
		var l, h int
		switch c.meta {
		case 1:
			l, h = int(data[0]), 1
		case 2:
			l, h = int(binary.LittleEndian.Uint16(data)), 2
		case 3:
			l, h = int(data[0])|int(data[1])<<8|int(data[2])<<16, 3
		case 4:
			l, h = int(binary.LittleEndian.Uint32(data)), 4
		default:
			return -1
		}
		*out = d.box.bytes(data[h : h+l : h+l])
		return h + l
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		return d.stringValue(out, int(c.meta), data)
	case tablemap.TypeBlobCompressed:
		l, h := 0, int(c.meta)
		if h < 1 || h > 4 {
			return -1
		}
		for k := h - 1; k >= 0; k-- {
			l = l<<8 | int(data[k])
		}
		v, err := uncompressColumn(data[h:h+l:h+l], 1<<(8*h)-1)
		if err != nil {
			panic(compressedError{err})
		}
		*out = d.box.bytes(v)
		return h + l
	case tablemap.TypeVarcharCompressed:
		l, h := int(data[0]), 1
		if c.meta >= 256 {
			l, h = int(binary.LittleEndian.Uint16(data)), 2
		}
		v, err := uncompressColumn(data[h:h+l:h+l], int(c.meta))
		if err != nil {
			panic(compressedError{err})
		}
		*out = d.box.string(str(v))
		return h + l
	case mysql.MYSQL_TYPE_STRING:
		return d.stringValue(out, c.length, data)
	}
	return -1
}

// stringValue: a length-prefixed string, one length byte when the column
// holds fewer than 256 bytes, two otherwise.
func (d *rowsDec) stringValue(out *any, maxLen int, data []byte) int {
	if maxLen < 256 {
		l := int(data[0])
		*out = d.box.string(str(data[1 : 1+l]))
		return 1 + l
	}
	l := int(binary.LittleEndian.Uint16(data))
	*out = d.box.string(str(data[2 : 2+l]))
	return 2 + l
}

// fracBytes is the size of the fractional seconds of a TIMESTAMP2,
// DATETIME2 or TIME2.
func fracBytes(fsp int) int { return (fsp + 1) / 2 }

// datetime appends "YYYY-MM-DD hh:mm:ss" and, when fsp > 0, the six
// digits of frac cut to fsp (go-mysql's formatDatetime).
func (d *rowsDec) datetime(y, mo, dd, h, mi, s uint64, frac uint64, fsp int) any {
	d.reserveText(40)
	from := len(d.text)
	if y < 10000 && mo < 100 && dd < 100 && h < 100 && mi < 100 && s < 100 && frac < 1000000 {
		// The common case in one piece: "YYYY-MM-DD hh:mm:ss.ffffff".
		var t [26]byte
		put2 := func(at int, v uint64) { t[at], t[at+1] = digits.Pairs[2*v], digits.Pairs[2*v+1] }
		put2(0, y/100)
		put2(2, y%100)
		t[4], t[7], t[10], t[13], t[16], t[19] = '-', '-', ' ', ':', ':', '.'
		put2(5, mo)
		put2(8, dd)
		put2(11, h)
		put2(14, mi)
		put2(17, s)
		put2(20, frac/10000)
		put2(22, frac/100%100)
		put2(24, frac%100)
		n := 19
		if fsp > 0 {
			n = 20 + fsp
		}
		d.text = append(d.text, t[:n]...)
		return d.textString(from)
	}
	d.text = digits.AppendPadded(d.text, y, 4)
	d.text = append(d.text, '-')
	d.text = digits.AppendPadded(d.text, mo, 2)
	d.text = append(d.text, '-')
	d.text = digits.AppendPadded(d.text, dd, 2)
	d.text = append(d.text, ' ')
	d.text = digits.AppendPadded(d.text, h, 2)
	d.text = append(d.text, ':')
	d.text = digits.AppendPadded(d.text, mi, 2)
	d.text = append(d.text, ':')
	d.text = digits.AppendPadded(d.text, s, 2)
	d.appendFrac(frac, fsp)
	return d.textString(from)
}

// appendFrac appends "." and frac as six digits (or more) with the last
// 6-fsp cut, as go-mysql's %06d and slice do; nothing when fsp is 0.
func (d *rowsDec) appendFrac(frac uint64, fsp int) {
	if fsp == 0 {
		return
	}
	d.text = append(d.text, '.')
	d.text = digits.AppendPadded(d.text, frac, 6)
	d.text = d.text[:len(d.text)-(6-fsp)]
}

func (d *rowsDec) zeroDatetime(frac uint64, fsp int) any {
	if fsp == 0 {
		return "0000-00-00 00:00:00"
	}
	return d.datetime(0, 0, 0, 0, 0, 0, frac, fsp)
}

func bigEndian(b []byte) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

// frac2 is the fractional part of a DATETIME2 or TIMESTAMP2 in
// microseconds (go-mysql's scaling: the stored digits times 10^k).
func frac2(fsp int, b []byte) int64 {
	switch fsp {
	case 1, 2:
		return int64(b[0]) * 10000
	case 3, 4:
		return int64(binary.BigEndian.Uint16(b)) * 100
	case 5, 6:
		return int64(bigEndian(b[:3]))
	}
	return 0
}

func (d *rowsDec) datetime2(out *any, fsp int, data []byte) int {
	if fsp > 6 {
		return -1 // go-mysql cuts its text with a negative count: its error
	}
	n := 5 + fracBytes(fsp)
	intPart := int64(bigEndian(data[:5])) - 0x8000000000
	frac := frac2(fsp, data[5:n])
	if intPart == 0 {
		*out = d.zeroDatetime(uint64(frac), fsp)
		return n
	}
	tmp := intPart<<24 + frac
	if tmp < 0 {
		tmp = -tmp
	}
	ymdhms := tmp >> 24
	ymd := ymdhms >> 17
	ym := ymd >> 5
	hms := ymdhms % (1 << 17)
	*out = d.datetime(uint64(ym/13), uint64(ym%13), uint64(ymd%(1<<5)), uint64(hms>>12), uint64((hms>>6)%(1<<6)), uint64(hms%(1<<6)), uint64(frac), fsp)
	return n
}

func (d *rowsDec) timestamp2(out *any, fsp int, data []byte) int {
	if fsp > 6 {
		return -1
	}
	n := 4 + fracBytes(fsp)
	sec := int64(binary.BigEndian.Uint32(data[:4]))
	usec := frac2(fsp, data[4:n])
	if sec == 0 {
		*out = d.zeroDatetime(uint64(usec), fsp)
		return n
	}
	*out = d.timestamp(sec, usec, fsp)
	return n
}

// timestamp formats a TIMESTAMP in the configured zone as go-mysql does
// with time.Time.Format (fractional digits truncated).
func (d *rowsDec) timestamp(sec, usec int64, fsp int) any {
	t := time.Unix(sec, usec*1000)
	if d.loc != nil {
		t = t.In(d.loc)
	}
	y, mo, dd := t.Date()
	h, mi, s := t.Clock()
	if y < 0 || y > 9999 {
		return t.Format(fracTimeLayouts[fsp]) // not from a 32-bit TIMESTAMP, but exact
	}
	// Format's digits are the nanoseconds' first fsp: the microseconds'.
	return d.datetime(uint64(y), uint64(mo), uint64(dd), uint64(h), uint64(mi), uint64(s), uint64(t.Nanosecond()/1000), fsp)
}

var fracTimeLayouts = [7]string{"2006-01-02 15:04:05", "2006-01-02 15:04:05.0", "2006-01-02 15:04:05.00",
	"2006-01-02 15:04:05.000", "2006-01-02 15:04:05.0000", "2006-01-02 15:04:05.00000", "2006-01-02 15:04:05.000000"}

func (d *rowsDec) time2(out *any, fsp int, data []byte) int {
	n := 3 + fracBytes(fsp)
	var tmp, intPart, frac int64
	switch fsp {
	case 1, 2:
		intPart = int64(bigEndian(data[:3])) - 0x800000
		frac = int64(data[3])
		if intPart < 0 && frac != 0 {
			intPart++
			frac -= 0x100
		}
		tmp = intPart<<24 + frac*10000
	case 3, 4:
		intPart = int64(bigEndian(data[:3])) - 0x800000
		frac = int64(binary.BigEndian.Uint16(data[3:5]))
		if intPart < 0 && frac != 0 {
			intPart++
			frac -= 0x10000
		}
		tmp = intPart<<24 + frac*100
	case 5, 6:
		tmp = int64(bigEndian(data[:6])) - 0x800000000000
		return d.timeText(out, tmp, fsp, n)
	default:
		if fsp > 6 {
			return -1
		}
		intPart = int64(bigEndian(data[:3])) - 0x800000
		tmp = intPart << 24
	}
	if intPart == 0 && frac == 0 {
		*out = "00:00:00"
		return n
	}
	return d.timeText(out, tmp, fsp, n)
}

// timeText is go-mysql's timeFormat.
func (d *rowsDec) timeText(out *any, tmp int64, fsp, n int) int {
	d.reserveText(40)
	from := len(d.text)
	if tmp < 0 {
		tmp = -tmp
		d.text = append(d.text, '-')
	}
	hms := tmp >> 24
	d.text = digits.AppendPadded(d.text, uint64((hms>>12)%(1<<10)), 2)
	d.text = append(d.text, ':')
	d.text = digits.AppendPadded(d.text, uint64((hms>>6)%(1<<6)), 2)
	d.text = append(d.text, ':')
	d.text = digits.AppendPadded(d.text, uint64(hms%(1<<6)), 2)
	if secPart := tmp % (1 << 24); secPart != 0 {
		d.text = append(d.text, '.')
		d.text = digits.AppendPadded(d.text, uint64(secPart), 6)
		d.text = d.text[:len(d.text)-(6-fsp)]
	}
	*out = d.textString(from)
	return n
}

// decimalPart reads n bytes of a binary DECIMAL at at, big-endian, with
// the sign bit of the first byte flipped back and mask applied (negative
// values are stored inverted).
func decimalPart(b []byte, at, n int, mask uint32) uint32 {
	var v uint32
	for k := at; k < at+n; k++ {
		x := uint32(b[k])
		if k == 0 {
			x ^= 0x80
		}
		v = v<<8 | (x^mask)&0xFF
	}
	return v
}

// decimal is go-mysql's decodeDecimal (UseDecimal off): the value's exact
// text.
func (d *rowsDec) decimal(out *any, precision, scale int, data []byte) int {
	const digitsPerInteger = 9
	compressed := [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}
	integral := precision - scale
	uncompIntegral, uncompFractional := integral/digitsPerInteger, scale/digitsPerInteger
	compIntegral := integral - uncompIntegral*digitsPerInteger
	compFractional := scale - uncompFractional*digitsPerInteger
	if compIntegral < 0 || compFractional < 0 || uncompIntegral < 0 {
		return -1
	}
	size := uncompIntegral*4 + compressed[compIntegral] + uncompFractional*4 + compressed[compFractional]
	if size == 0 || size > len(data) {
		return -1
	}
	b := data[:size]
	d.reserveText(precision + 2)
	from := len(d.text)
	var mask uint32
	if b[0]&0x80 == 0 {
		mask = math.MaxUint32
		d.text = append(d.text, '-')
	}
	part := func(at, n int) uint32 { return decimalPart(b, at, n, mask) }
	pos := compressed[compIntegral]
	leading := true
	if v := part(0, pos); v != 0 {
		leading = false
		d.text = digits.AppendPadded(d.text, uint64(v), 1)
	}
	for range uncompIntegral {
		v := part(pos, 4)
		pos += 4
		if leading {
			if v != 0 {
				leading = false
				d.text = digits.AppendPadded(d.text, uint64(v), 1)
			}
		} else {
			if v >= 1e9 {
				return -1 // go-mysql's zero padding of more digits than 9 panics: its error
			}
			d.text = digits.AppendPadded(d.text, uint64(v), digitsPerInteger)
		}
	}
	if leading {
		d.text = append(d.text, '0')
	}
	if pos < size {
		d.text = append(d.text, '.')
		for range uncompFractional {
			v := part(pos, 4)
			if v >= 1e9 {
				return -1
			}
			d.text = digits.AppendPadded(d.text, uint64(v), digitsPerInteger)
			pos += 4
		}
		if n := compressed[compFractional]; n > 0 {
			v := part(pos, n)
			d.text = digits.AppendPadded(d.text, uint64(v), compFractional)
			pos += n
		}
	}
	*out = d.textString(from)
	return pos
}
