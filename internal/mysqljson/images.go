package mysqljson

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Column is one column of a row image as the event holds it.
type Column struct {
	Present bool   // in the image's column bitmap
	Null    bool   // SQL NULL
	Partial bool   // a JSON column logged as a diff (after images of PARTIAL_UPDATE_ROWS_EVENT)
	Data    []byte // the value's bytes; for JSON, BLOB and GEOMETRY without their length prefix
}

// ReadImagePair reads after image i (odd) of an update rows event body
// and the before image that precedes it, skipping the images before them.
func ReadImagePair(body []byte, tm *replication.TableMapEvent, i int) (before, after []Column, err error) {
	before, after = make([]Column, len(tm.ColumnType)), make([]Column, len(tm.ColumnType))
	err = walkRowImages(body, tm, i+1, func(k int) []Column {
		switch k {
		case i - 1:
			return before
		case i:
			return after
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return before, after, nil
}

// walkRowImages reads the first n row images of an update rows event
// body (v2 layout, as MySQL 8 writes PARTIAL_UPDATE_ROWS_EVENT) with the
// Table_map tm: a before image, then an after image that starts with the
// binlog_row_value_options and, for PARTIAL_JSON, a bitmap with a bit for
// every JSON column of the table (go-mysql's decodeImage, MySQL's
// rpl_record.h). Image k is read into into(k), or only skipped when that
// is nil.
func walkRowImages(body []byte, tm *replication.TableMapEvent, n int, into func(k int) []Column) error {
	const postHeader = 6 + 2 // table id, flags
	if len(body) < postHeader+2 {
		return errors.New("rows event too short")
	}
	p := postHeader
	extra := int(binary.LittleEndian.Uint16(body[p:]))
	if extra < 2 || p+extra > len(body) {
		return fmt.Errorf("rows event extra data of %d bytes", extra)
	}
	p += extra
	ncols, k, ok := lenencInt(body[p:])
	if !ok || ncols != uint64(len(tm.ColumnType)) {
		return fmt.Errorf("rows event has %d columns, its Table_map %d", ncols, len(tm.ColumnType))
	}
	p += k
	bm := (int(ncols) + 7) / 8
	if p+2*bm > len(body) {
		return errors.New("rows event column bitmaps truncated")
	}
	cols := [2][]byte{body[p : p+bm], body[p+bm : p+2*bm]}
	p += 2 * bm
	jsonCols := 0
	for _, t := range tm.ColumnType {
		if t == mysql.MYSQL_TYPE_JSON {
			jsonCols++
		}
	}
	for k := range n {
		after := k%2 == 1
		var partialBits []byte
		if after {
			opts, k, ok := lenencInt(body[p:])
			if !ok {
				return fmt.Errorf("image %d: value options truncated", k)
			}
			p += k
			if opts&1 != 0 { // PARTIAL_JSON_UPDATES
				nb := (jsonCols + 7) / 8
				if p+nb > len(body) {
					return fmt.Errorf("image %d: partial bitmap truncated", k)
				}
				partialBits, p = body[p:p+nb], p+nb
			}
		}
		np, err := readImage(body, p, tm, cols[k%2], partialBits, into(k))
		if err != nil {
			return fmt.Errorf("image %d: %w", k, err)
		}
		p = np
	}
	return nil
}

func bitSet(b []byte, i int) bool { return i/8 < len(b) && b[i/8]&(1<<(i%8)) != 0 }

// readImage reads one row image at p into img (skips it when img is nil)
// and returns where the next one starts.
func readImage(body []byte, p int, tm *replication.TableMapEvent, colBits, partialBits []byte, img []Column) (int, error) {
	ncols := len(tm.ColumnType)
	present := 0
	for c := range ncols {
		if bitSet(colBits, c) {
			present++
		}
	}
	nb := (present + 7) / 8
	if p+nb > len(body) {
		return 0, errors.New("null bitmap truncated")
	}
	nulls := body[p : p+nb]
	p += nb
	nullIdx, jsonIdx := 0, 0
	for c := range ncols {
		var col Column
		if tm.ColumnType[c] == mysql.MYSQL_TYPE_JSON {
			// The partial bitmap counts every JSON column, present or not.
			col.Partial = bitSet(partialBits, jsonIdx)
			jsonIdx++
		}
		if col.Present = bitSet(colBits, c); col.Present {
			col.Null = bitSet(nulls, nullIdx)
			nullIdx++
		}
		if col.Present && !col.Null {
			prefix, size, err := valueSize(body[p:], tm.ColumnType[c], tm.ColumnMeta[c])
			if err != nil {
				return 0, fmt.Errorf("column %d: %w", c, err)
			}
			if size > len(body)-p {
				return 0, fmt.Errorf("column %d: value of %d bytes, %d left", c, size, len(body)-p)
			}
			if img != nil {
				col.Data = body[p+prefix : p+size]
			}
			p += size
		}
		if img != nil {
			img[c] = col
		}
	}
	return p, nil
}

// valueSize is the size in a row image of a value of binlog type tp with
// Table_map metadata meta (go-mysql's decodeValue), and the size of its
// length prefix.
func valueSize(b []byte, tp byte, meta uint16) (prefix, size int, err error) {
	length := 0
	if tp == mysql.MYSQL_TYPE_STRING {
		if meta >= 256 {
			b0, b1 := byte(meta>>8), byte(meta)
			if b0&0x30 != 0x30 {
				length = int(uint16(b1) | uint16((b0&0x30)^0x30)<<4)
				tp = b0 | 0x30
			} else {
				length = int(b1)
				tp = b0
			}
		} else {
			length = int(meta)
		}
	}
	prefixed := func(k int) (int, int, error) {
		if len(b) < k {
			return 0, 0, errors.New("length prefix truncated")
		}
		var l int
		for i := k - 1; i >= 0; i-- {
			l = l<<8 | int(b[i])
		}
		return k, k + l, nil
	}
	switch tp {
	case mysql.MYSQL_TYPE_NULL:
		return 0, 0, nil
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_YEAR:
		return 0, 1, nil
	case mysql.MYSQL_TYPE_SHORT:
		return 0, 2, nil
	case mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_TIME:
		return 0, 3, nil
	case mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_FLOAT, mysql.MYSQL_TYPE_TIMESTAMP:
		return 0, 4, nil
	case mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_DOUBLE, mysql.MYSQL_TYPE_DATETIME:
		return 0, 8, nil
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		return 0, decimalSize(int(meta>>8), int(meta&0xff)), nil
	case mysql.MYSQL_TYPE_BIT:
		return 0, (int(meta>>8)*8 + int(meta&0xff) + 7) / 8, nil
	case mysql.MYSQL_TYPE_TIMESTAMP2:
		return 0, 4 + (int(meta)+1)/2, nil
	case mysql.MYSQL_TYPE_DATETIME2:
		return 0, 5 + (int(meta)+1)/2, nil
	case mysql.MYSQL_TYPE_TIME2:
		return 0, 3 + (int(meta)+1)/2, nil
	case mysql.MYSQL_TYPE_ENUM, mysql.MYSQL_TYPE_SET:
		return 0, int(meta & 0xff), nil
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		if meta < 256 {
			return prefixed(1)
		}
		return prefixed(2)
	case mysql.MYSQL_TYPE_STRING:
		if length < 256 {
			return prefixed(1)
		}
		return prefixed(2)
	case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_JSON, mysql.MYSQL_TYPE_VECTOR:
		if meta < 1 || meta > 4 {
			return 0, 0, fmt.Errorf("type %d with a %d-byte length", tp, meta)
		}
		return prefixed(int(meta))
	}
	return 0, 0, fmt.Errorf("unsupported column type %d", tp)
}
