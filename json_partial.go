package binlogstream

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// MySQL 8 logs an update of a JSON column made by JSON_SET, JSON_REPLACE
// or JSON_REMOVE as a diff when binlog_row_value_options=PARTIAL_JSON:
// the event is a PARTIAL_UPDATE_ROWS_EVENT (type 39) and the after image
// holds, for such a column, a vector of diffs instead of the document.
// go-mysql v1.16.0 decodes only the first diff of that vector (its
// decodeJSONPartialBinary returns one *replication.JsonDiff and drops the
// rest), so this package reads the vector from the event's raw bytes and
// applies it to the before image's document as a MySQL replica does.

// ErrPartialJSON is matched by every *PartialJSONError.
var ErrPartialJSON = errors.New("binlogstream: partial JSON update cannot be applied")

// ErrPartialJSONNoBefore is matched when the before image does not hold
// the JSON column a partial update changes (binlog_row_image=MINIMAL and
// NOBLOB leave it out), or holds NULL: there is nothing to apply the diff
// to. A consumer that keeps its own copy of the document can apply the
// diffs (Event.PartialJSON) with ApplyJSONDiffs.
var ErrPartialJSONNoBefore = errors.New("binlogstream: the before image does not hold the JSON document the diff applies to")

// PartialJSONError says why the after document of a partial JSON update
// could not be built.
type PartialJSONError struct {
	Table  string // `schema`.`table`
	Column int    // index in the row image
	Name   string // column name, "" when unknown
	Err    error
}

func (e *PartialJSONError) Error() string {
	col := fmt.Sprintf("column %d", e.Column)
	if e.Name != "" {
		col += " (" + e.Name + ")"
	}
	return fmt.Sprintf("binlogstream: partial JSON update of %s %s: %v", e.Table, col, e.Err)
}

// Unwrap gives ErrPartialJSON and the cause.
func (e *PartialJSONError) Unwrap() []error { return []error{ErrPartialJSON, e.Err} }

// JSONDiff is one change of a partial JSON update, as MySQL logged it.
type JSONDiff struct {
	// Op is Replace, Insert or Remove (go-mysql's names and semantics).
	Op replication.JsonDiffOperation
	// Path is a MySQL JSON path: $.a, $.a.b, $[0], $.a[2], $."a b".
	Path string
	// Value is the new value as JSON text, in the form of PartialJSON.After;
	// "" for Remove.
	Value string
}

func (d JSONDiff) String() string {
	if d.Op == replication.JsonDiffOperationRemove {
		return fmt.Sprintf("%s %s", d.Op, d.Path)
	}
	return fmt.Sprintf("%s %s %s", d.Op, d.Path, d.Value)
}

// PartialJSON is a JSON column of an after image that MySQL logged as a
// diff: every diff of the column, in order, and the documents before and
// after them.
//
// The documents are compact JSON text with object keys in MySQL's order
// (shorter keys first, then bytewise), a whole DOUBLE written with ".0",
// DECIMAL unquoted and temporal values quoted: the text go-mysql gives a
// whole document with BinlogSyncerConfig.RenderJSONAsMySQLText, except
// that <, > and & stay as they are (go-mysql writes \u003c, \u003e,
// \u0026). Set that option (SyncerConfig.Tune) for whole documents to
// read the same; without it go-mysql sorts keys bytewise and writes a
// whole DOUBLE without ".0".
type PartialJSON struct {
	Diffs  []JSONDiff
	Before string
	After  string
}

// PartialJSON returns the JSON column col of row image i (numbered as in
// RowValues) when MySQL logged it as a diff: i is then an after image of
// a PARTIAL_UPDATE_ROWS_EVENT. It returns nil and no error for any other
// value (another event type, a before image, a column logged whole, SQL
// NULL, a column the image left out). The error is a *PartialJSONError
// when the diff cannot be applied, ErrPartialJSONNoBefore among its
// causes when the before image lacks the document; the PartialJSON then
// returned, when not nil, still holds the diffs (and no After). Any other
// error means the event's raw bytes could not be read.
//
// Each call walks the event's raw bytes up to image i and decodes the
// before document again: about 20 µs a row for a 50-row event of small
// documents (BenchmarkPartialJSONRowValues), against 1 µs for the same
// rows logged whole.
func (e *Event) PartialJSON(i, col int) (*PartialJSON, error) {
	cols, err := e.partialJSONImage(i, true)
	if err != nil || col < 0 || col >= len(cols) {
		return nil, err
	}
	return cols[col].pj, cols[col].err
}

type partialResult struct {
	pj  *PartialJSON
	err error
}

// partialJSONImage resolves every partial JSON column of after image i;
// nil when the image has none. Without detail only After is filled in.
func (e *Event) partialJSONImage(i int, detail bool) ([]partialResult, error) {
	if e.BinlogEvent == nil || e.Header == nil || e.Header.EventType != replication.PARTIAL_UPDATE_ROWS_EVENT || i%2 != 1 {
		return nil, nil
	}
	re, ok := e.Event.(*replication.RowsEvent)
	if !ok || re.Table == nil || i < 0 || i >= len(re.Rows) {
		return nil, nil
	}
	partial := false // go-mysql's value says where a diff may be: skip the walk elsewhere
	for c, v := range re.Rows[i] {
		switch v := v.(type) {
		case *replication.JsonDiff:
			partial = true
		case []byte: // an empty diff vector (no change) reads as an empty document
			partial = partial || len(v) == 0 && c < len(re.Table.ColumnType) && re.Table.ColumnType[c] == mysql.MYSQL_TYPE_JSON
		}
	}
	if !partial {
		return nil, nil
	}
	raw := i + 2*e.SkippedRows
	body := e.RawData
	if len(body) < replication.EventHeaderSize {
		return nil, fmt.Errorf("binlogstream: partial rows event without its raw bytes")
	}
	before, after, err := readImagePair(body[replication.EventHeaderSize:], re.Table, raw)
	if err != nil {
		return nil, fmt.Errorf("binlogstream: partial rows event at %s: %w", e.Start, err)
	}
	out := make([]partialResult, len(after))
	for c, v := range after {
		if !v.partial || v.null || !v.present {
			continue
		}
		pj, err := buildPartialJSON(before[c], v.data, detail)
		if err != nil {
			perr := &PartialJSONError{Table: "`" + string(re.Table.Schema) + "`.`" + string(re.Table.Table) + "`", Column: c, Err: err}
			if e.Table != nil && c < len(e.Table.Columns) {
				perr.Name = e.Table.Columns[c].Name
			}
			out[c] = partialResult{pj, perr}
			continue
		}
		out[c].pj = pj
	}
	return out, nil
}

// buildPartialJSON applies the diff vector diffs (the after image's
// value, its length prefix removed) to the before image's column; the
// Before text and the diffs' values are rendered only with detail.
func buildPartialJSON(before imageColumn, diffs []byte, detail bool) (*PartialJSON, error) {
	ds, err := readJSONDiffs(diffs)
	if err != nil {
		return nil, err
	}
	pj := &PartialJSON{Diffs: make([]JSONDiff, len(ds))}
	for k, d := range ds {
		pj.Diffs[k] = JSONDiff{Op: d.op, Path: d.path}
		if d.value != nil && detail {
			pj.Diffs[k].Value = d.value.String()
		}
	}
	switch {
	case !before.present:
		return pj, fmt.Errorf("%w (the column is not in the before image: binlog_row_image=MINIMAL?)", ErrPartialJSONNoBefore)
	case before.null:
		return pj, fmt.Errorf("%w (it is NULL)", ErrPartialJSONNoBefore)
	}
	doc, err := decodeJSONBinary(before.data)
	if err != nil {
		return pj, fmt.Errorf("before image: %w", err)
	}
	if detail {
		pj.Before = doc.String()
	}
	for k, d := range ds {
		if err := applyJSONDiff(doc, d.op, d.path, d.value); err != nil {
			return pj, fmt.Errorf("diff %d of %d: %w", k+1, len(ds), err)
		}
	}
	pj.After = doc.String()
	return pj, nil
}

// imageColumn is one column of a row image as the event holds it.
type imageColumn struct {
	present bool   // in the image's column bitmap
	null    bool   // SQL NULL
	partial bool   // a JSON column logged as a diff (after images of PARTIAL_UPDATE_ROWS_EVENT)
	data    []byte // the value's bytes; for JSON, BLOB and GEOMETRY without their length prefix
}

// readImagePair reads after image i (odd) of an update rows event body
// and the before image that precedes it, skipping the images before them.
func readImagePair(body []byte, tm *replication.TableMapEvent, i int) (before, after []imageColumn, err error) {
	before, after = make([]imageColumn, len(tm.ColumnType)), make([]imageColumn, len(tm.ColumnType))
	err = walkRowImages(body, tm, i+1, func(k int) []imageColumn {
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

// readRowImages reads the first n row images.
func readRowImages(body []byte, tm *replication.TableMapEvent, n int) ([][]imageColumn, error) {
	out := make([][]imageColumn, n)
	err := walkRowImages(body, tm, n, func(k int) []imageColumn {
		out[k] = make([]imageColumn, len(tm.ColumnType))
		return out[k]
	})
	return out, err
}

// walkRowImages reads the first n row images of an update rows event
// body (v2 layout, as MySQL 8 writes PARTIAL_UPDATE_ROWS_EVENT) with the
// Table_map tm: a before image, then an after image that starts with the
// binlog_row_value_options and, for PARTIAL_JSON, a bitmap with a bit for
// every JSON column of the table (go-mysql's decodeImage, MySQL's
// rpl_record.h). Image k is read into into(k), or only skipped when that
// is nil.
func walkRowImages(body []byte, tm *replication.TableMapEvent, n int, into func(k int) []imageColumn) error {
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
func readImage(body []byte, p int, tm *replication.TableMapEvent, colBits, partialBits []byte, img []imageColumn) (int, error) {
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
		var col imageColumn
		if tm.ColumnType[c] == mysql.MYSQL_TYPE_JSON {
			// The partial bitmap counts every JSON column, present or not.
			col.partial = bitSet(partialBits, jsonIdx)
			jsonIdx++
		}
		if col.present = bitSet(colBits, c); col.present {
			col.null = bitSet(nulls, nullIdx)
			nullIdx++
		}
		if col.present && !col.null {
			prefix, size, err := valueSize(body[p:], tm.ColumnType[c], tm.ColumnMeta[c])
			if err != nil {
				return 0, fmt.Errorf("column %d: %w", c, err)
			}
			if size > len(body)-p {
				return 0, fmt.Errorf("column %d: value of %d bytes, %d left", c, size, len(body)-p)
			}
			if img != nil {
				col.data = body[p+prefix : p+size]
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

// setPartialJSON puts into out (RowValues of image i) the after document
// of each JSON column image i logs as a diff, or the *PartialJSONError
// that says why there is none.
func (e *Event) setPartialJSON(i int, out []any) {
	cols, err := e.partialJSONImage(i, false)
	if err != nil {
		re := e.Event.(*replication.RowsEvent)
		for c, v := range re.Rows[i] {
			if _, ok := v.(*replication.JsonDiff); ok && c < len(out) {
				out[c] = &PartialJSONError{Table: "`" + string(re.Table.Schema) + "`.`" + string(re.Table.Table) + "`", Column: c, Err: err}
			}
		}
		return
	}
	for c, r := range cols {
		switch {
		case r.err != nil:
			out[c] = r.err
		case r.pj != nil:
			out[c] = r.pj.After
		}
	}
}

// ApplyJSONDiffs applies diffs (a PartialJSON's, in order) to doc, a JSON
// document as text, with a MySQL replica's rules, and returns the result
// in PartialJSON's text form. It is for a consumer that keeps its own copy
// of the document where the before image cannot give it
// (binlog_row_image=MINIMAL or NOBLOB): the document must be the one the
// server held before the update.
func ApplyJSONDiffs(doc string, diffs []JSONDiff) (string, error) {
	root, err := parseJSONText(doc)
	if err != nil {
		return "", fmt.Errorf("binlogstream: document: %w", err)
	}
	for k, d := range diffs {
		var val *jsonNode
		if d.Op != replication.JsonDiffOperationRemove {
			if val, err = parseJSONText(d.Value); err != nil {
				return "", fmt.Errorf("binlogstream: diff %d of %d (%s): %w", k+1, len(diffs), d.Path, err)
			}
		}
		if err := applyJSONDiff(root, d.Op, d.Path, val); err != nil {
			return "", fmt.Errorf("binlogstream: diff %d of %d: %w", k+1, len(diffs), err)
		}
	}
	return root.String(), nil
}
