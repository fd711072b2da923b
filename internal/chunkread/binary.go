package chunkread

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// binaryConn is what a binary-protocol read needs of its connection:
// go-mysql's *client.Conn, whose packets it reads itself so that a row's
// values go from the packet into the slab with no step between.
type binaryConn interface {
	Prepare(query string) (*client.Stmt, error)
	ResetSequence()
	WritePacket(data []byte) error
	ReadPacket() ([]byte, error)
	ReadPacketReuseMem(dst []byte) ([]byte, error)
	CapabilityString() string
}

var _ binaryConn = (*client.Conn)(nil)

// selectBinary runs the SELECT q as a prepared statement, whose rows
// come in the binary protocol, into c.Rows. The statement holds its
// bounds as literals, as the text query does, so both compare the same
// way; it is prepared per chunk, in a round trip of its own here and in
// the read's one round trip where pipelined allows it. A server or proxy
// that refuses prepared statements is read in the text protocol from
// then on.
func (r *Reader) selectBinary(cc binaryConn, t *Table, q string, c *Chunk) error {
	st, err := cc.Prepare(q)
	if cannotPrepare(err) {
		r.text = true
		return r.selectRows(t, q, c)
	}
	if err != nil {
		return err
	}
	defer st.Close() // no answer to wait for

	cc.ResetSequence()
	if err := cc.WritePacket(executePacket(st.ID)); err != nil {
		return err
	}
	raw, ok := r.rawAnswer(cc)
	if !ok {
		return r.readBinaryResult(cc, t, c)
	}
	defer func() { r.pkt = nil }() // the rows' packets were views of raw's buffer
	err = r.readBinaryResult(raw, t, c)
	if err == nil && !raw.drained() {
		err = errUndrained
	}
	return err
}

// executePacket is COM_STMT_EXECUTE of statement id, with its packet
// header's room: no cursor, one iteration, no parameters.
func executePacket(id uint32) []byte {
	pkt := make([]byte, 4, 14)
	pkt = append(pkt, mysql.COM_STMT_EXECUTE)
	pkt = binary.LittleEndian.AppendUint32(pkt, id)
	return append(pkt, 0, 1, 0, 0, 0)
}

// readBinaryResult reads a COM_STMT_EXECUTE's binary result set into
// c.Rows, to its end even after a row it cannot read, so that the
// connection stays usable.
func (r *Reader) readBinaryResult(cc binaryConn, t *Table, c *Chunk) error {
	fields, err := r.readResultHead(cc, "the chunk's SELECT", true)
	if err != nil {
		return err
	}
	defer func() {
		if cap(r.pkt) > 1<<20 {
			r.pkt = nil // a large row's buffer goes with its chunk
		}
	}()
	var sl slab
	var rowErr error
	for {
		if r.pkt, err = cc.ReadPacketReuseMem(r.pkt[:0]); err != nil {
			return err
		}
		if len(r.pkt) == 0 {
			return mysql.ErrMalformPacket
		}
		switch r.pkt[0] {
		case mysql.EOF_HEADER: // the result's end (an EOF or an OK)
			return rowErr
		case mysql.ERR_HEADER:
			return errPacket(r.pkt)
		}
		if rowErr != nil {
			continue // read the result to its end: the connection stays usable
		}
		row, err := sl.binaryRow(r.pkt, fields, t.Extra, t.Fill)
		if err != nil {
			rowErr = &rowError{fmt.Errorf("read a row of %s: %w", t.ID(), err)}
			continue
		}
		if k := len(fields) - len(t.Columns); k > 0 {
			// A read sent ahead also selects its key's assignments
			// (assignList): not the row's.
			copy(row[len(t.Columns):], row[len(fields):])
			row = row[: len(row)-k : len(row)-k]
		}
		for _, j := range t.floats {
			if f, ok := row[j].(float64); ok {
				row[j] = sl.float32(float32(f))
			}
		}
		if len(c.Rows) == cap(c.Rows) {
			// Doubling from rowsCap: append's growth by a quarter would
			// allocate (and zero) about five times a chunk's row slice.
			n := max(2*cap(c.Rows), rowsCap)
			if len(c.Rows) == 0 && c.limit > 0 {
				n = c.limit // a full chunk's, allocated once
			}
			rows := make([][]any, len(c.Rows), n)
			copy(rows, c.Rows)
			c.Rows = rows
		}
		c.Rows = append(c.Rows, row)
	}
}

// rowsCap is the first capacity of a chunk's rows: a chunk of a power of
// two rows from it on fills its slice exactly.
const rowsCap = 1024

// rowError is a row of a result the reader could not convert; the
// result was read to its end, so the connection is still in step.
type rowError struct{ err error }

func (e *rowError) Error() string { return e.err.Error() }
func (e *rowError) Unwrap() error { return e.err }

// cannotPrepare reports whether err is a server's or proxy's refusal of
// prepared statements.
func cannotPrepare(err error) bool {
	var me *mysql.MyError
	return errors.As(err, &me) && (me.Code == mysql.ER_UNKNOWN_COM_ERROR || me.Code == mysql.ER_UNSUPPORTED_PS)
}

// errPacket is the server's error in an ERR packet.
func errPacket(data []byte) error {
	if len(data) < 9 {
		return mysql.ErrMalformPacket
	}
	e := &mysql.MyError{Code: binary.LittleEndian.Uint16(data[1:])}
	if data[3] == '#' {
		e.State = string(data[4:9])
		e.Message = string(data[9:])
	} else {
		e.Message = string(data[3:])
	}
	return e
}

var errShortRow = errors.New("binary row shorter than its columns")

// binaryRow converts one binary-protocol row packet p into the values
// the text protocol's row gives (FieldRaw), followed by extra fill
// values.
func (s *slab) binaryRow(p []byte, fields []*mysql.Field, extra int, fill any) ([]any, error) {
	n := len(fields) + extra
	if cap(s.vals)-len(s.vals) < n {
		s.vals = make([]any, 0, max(slabValues, n))
	}
	row := s.vals[len(s.vals) : len(s.vals)+n : len(s.vals)+n]
	s.vals = s.vals[:len(s.vals)+n]
	for j := len(fields); j < n; j++ {
		row[j] = fill
	}
	pos := 1 + (len(fields)+9)>>3
	if len(p) < pos {
		return nil, errShortRow
	}
	nulls := p[1:pos]
	for i, f := range fields {
		if nulls[(i+2)>>3]&(1<<((i+2)&7)) != 0 {
			row[i] = nil
			continue
		}
		size := 0
		switch f.Type {
		case mysql.MYSQL_TYPE_NULL:
			row[i] = nil
			continue
		case mysql.MYSQL_TYPE_TINY:
			size = 1
		case mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_YEAR:
			size = 2
		case mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_FLOAT:
			size = 4
		case mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_DOUBLE:
			size = 8
		}
		if size > 0 {
			if len(p)-pos < size {
				return nil, errShortRow
			}
			row[i] = s.fixed(p[pos:pos+size], f)
			pos += size
			continue
		}
		if pos >= len(p) {
			return nil, errShortRow
		}
		v, null, m, err := mysql.LengthEncodedString(p[pos:])
		if err != nil {
			return nil, err
		}
		pos += m
		switch {
		case null:
			row[i] = nil
		case isTemporalField(f.Type):
			if row[i], err = s.temporal(v, f); err != nil {
				return nil, err
			}
		default:
			row[i] = s.bytesValue(v, f)
		}
	}
	return row, nil
}

// fixed is a fixed-size binary value b: an integer in the signedness of
// its column, a FLOAT as float32 and a DOUBLE as float64.
func (s *slab) fixed(b []byte, f *mysql.Field) any {
	unsigned := f.Flag&mysql.UNSIGNED_FLAG != 0
	switch f.Type {
	case mysql.MYSQL_TYPE_FLOAT:
		return s.float32(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case mysql.MYSQL_TYPE_DOUBLE:
		return s.float64(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	}
	var u uint64
	var i int64
	switch len(b) {
	case 1:
		u, i = uint64(b[0]), int64(int8(b[0]))
	case 2:
		x := binary.LittleEndian.Uint16(b)
		u, i = uint64(x), int64(int16(x))
	case 4:
		x := binary.LittleEndian.Uint32(b)
		u, i = uint64(x), int64(int32(x))
	default:
		u = binary.LittleEndian.Uint64(b)
		i = int64(u)
	}
	if unsigned {
		return s.uint64(u)
	}
	return s.int64(i)
}

// temporal is a binary DATE, DATETIME, TIMESTAMP or TIME b as the text
// protocol writes it: the column's fractional digits, no more and no
// fewer, and TIME's days folded into its hours.
func (s *slab) temporal(b []byte, f *mysql.Field) (any, error) {
	if cap(s.text)-len(s.text) < 40 {
		s.text = make([]byte, 0, slabText)
	}
	i := len(s.text)
	t := s.text
	var micro uint32
	switch f.Type {
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		var neg byte
		var days uint32
		var h, m, sec byte
		switch len(b) {
		case 0:
		case 8, 12:
			neg, days, h, m, sec = b[0], binary.LittleEndian.Uint32(b[1:]), b[5], b[6], b[7]
			if len(b) == 12 {
				micro = binary.LittleEndian.Uint32(b[8:])
			}
		default:
			return nil, fmt.Errorf("TIME value of %d bytes", len(b))
		}
		if neg == 1 {
			t = append(t, '-')
		}
		hours := uint64(days)*24 + uint64(h)
		if hours < 10 {
			t = append(t, '0')
		}
		t = appendUint(t, hours)
		t = append(t, ':')
		t = append2(t, m)
		t = append(t, ':')
		t = append2(t, sec)
	default:
		var year uint16
		var mon, day, h, m, sec byte
		switch len(b) {
		case 0:
		case 4, 7, 11:
			year, mon, day = binary.LittleEndian.Uint16(b), b[2], b[3]
			if len(b) >= 7 {
				h, m, sec = b[4], b[5], b[6]
			}
			if len(b) == 11 {
				micro = binary.LittleEndian.Uint32(b[7:])
			}
		default:
			return nil, fmt.Errorf("date value of %d bytes", len(b))
		}
		t = append2(t, byte(year/100))
		t = append2(t, byte(year%100))
		t = append(t, '-')
		t = append2(t, mon)
		t = append(t, '-')
		t = append2(t, day)
		if f.Type == mysql.MYSQL_TYPE_DATE || f.Type == mysql.MYSQL_TYPE_NEWDATE {
			break
		}
		t = append(t, ' ')
		t = append2(t, h)
		t = append(t, ':')
		t = append2(t, m)
		t = append(t, ':')
		t = append2(t, sec)
	}
	if d := int(f.Decimal); d > 0 && d <= 6 {
		t = append(t, '.')
		var frac [6]byte
		for k := 5; k >= 0; k-- {
			frac[k] = byte('0' + micro%10)
			micro /= 10
		}
		t = append(t, frac[:d]...)
	}
	s.text = t
	out := s.text[i:len(s.text):len(s.text)]
	return s.string(unsafe.String(&out[0], len(out))), nil // the slab's bytes are never written again
}

// append2 appends v (below 100) in two digits.
func append2(t []byte, v byte) []byte { return append(t, '0'+v/10, '0'+v%10) }

// appendUint appends v in decimal.
func appendUint(t []byte, v uint64) []byte {
	var d [20]byte
	k := len(d)
	for {
		k--
		d[k] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(t, d[k:]...)
}
