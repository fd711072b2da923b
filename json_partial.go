package binlogstream

import (
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream/internal/mysqljson"
)

// MySQL 8 logs an update of a JSON column made by JSON_SET, JSON_REPLACE
// or JSON_REMOVE as a diff when binlog_row_value_options=PARTIAL_JSON:
// the event is a PARTIAL_UPDATE_ROWS_EVENT (type 39) and the after image
// holds, for such a column, a vector of diffs instead of the document.
// go-mysql v1.16.0 decodes only the first diff of that vector (its
// decodeJSONPartialBinary returns one *replication.JsonDiff and drops the
// rest), so Event.PartialJSON and RowValues read the vector from the
// event's raw bytes and apply it to the before image's document as a MySQL
// replica does (internal/mysqljson).

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

func (d JSONDiff) String() string { return mysqljson.Diff(d).String() }

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
// before document again, which costs far more than a row logged whole:
// BenchmarkPartialJSONRowValues measures both.
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
	before, after, err := mysqljson.ReadImagePair(body[replication.EventHeaderSize:], re.Table, raw)
	if err != nil {
		return nil, fmt.Errorf("binlogstream: partial rows event at %s: %w", e.Start, err)
	}
	out := make([]partialResult, len(after))
	for c, v := range after {
		if !v.Partial || v.Null || !v.Present {
			continue
		}
		pj, err := buildPartialJSON(before[c], v.Data, detail)
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
func buildPartialJSON(before mysqljson.Column, diffs []byte, detail bool) (*PartialJSON, error) {
	ds, err := mysqljson.ReadDiffs(diffs)
	if err != nil {
		return nil, err
	}
	pj := &PartialJSON{Diffs: make([]JSONDiff, len(ds))}
	for k, d := range ds {
		pj.Diffs[k] = JSONDiff(d.Diff(detail))
	}
	switch {
	case !before.Present:
		return pj, fmt.Errorf("%w (the column is not in the before image: binlog_row_image=MINIMAL?)", ErrPartialJSONNoBefore)
	case before.Null:
		return pj, fmt.Errorf("%w (it is NULL)", ErrPartialJSONNoBefore)
	}
	pj.Before, pj.After, err = mysqljson.ApplyBinary(before.Data, ds, detail)
	return pj, err
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
	ds := make([]mysqljson.Diff, len(diffs))
	for k, d := range diffs {
		ds[k] = mysqljson.Diff(d)
	}
	out, err := mysqljson.ApplyText(doc, ds)
	if err != nil {
		return "", fmt.Errorf("binlogstream: %w", err)
	}
	return out, nil
}
