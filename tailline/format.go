package tailline

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream"
)

// Formatter writes the lines of events. It keeps, between events, what
// the row lines of one table share (the table's tableFormat) and the
// scratch of the per-event parts; one Formatter serves one goroutine.
type Formatter struct {
	tokens binlogstream.TokenWriter // for the row and read lines' tokens
	head   []byte                   // the rows event's per-line prefix and tail
	tail   []byte
	// The last table this Formatter wrote rows of, and its tableFormat.
	tfOf *binlogstream.Table
	tf   *tableFormat
	// The read lines' start, up to the row, for the table readOf; and the
	// fields after the row, for the position readEnd and GTID readGTID.
	readOf   *binlogstream.Table
	readHead []byte
	readTail []byte
	readEnd  binlogstream.Position
	readGTID string
}

// AppendEvent appends the lines of ev: one per row change of a rows
// event, one for a snapshot's read, a Table_map or a statement, none for other events (a
// transaction's BEGIN or COMMIT included: see IsTxnMarker). partial holds
// a partial JSON update's after images (PartialAfterImages). limit, when
// not negative, writes at most that many row lines. It returns the lines
// written and where the last of them starts in b.
func (f *Formatter) AppendEvent(b []byte, ev *binlogstream.Event, partial map[int][]any, limit int) (_ []byte, lines, last int) {
	switch e := ev.Event.(type) {
	case *replication.RowsEvent:
		return f.appendRows(b, ev, e, partial, limit)
	case *binlogstream.SnapshotRead:
		return f.AppendRead(b, ev, e, ev.Resume), 1, len(b)
	case *replication.TableMapEvent:
		return AppendTableLine(b, e, ev.Table, ev), 1, len(b)
	case *replication.QueryEvent:
		if IsTxnMarker(e.Query) {
			return b, 0, len(b)
		}
		return AppendQueryLine(b, e, ev), 1, len(b)
	}
	return b, 0, len(b)
}

// appendRows is AppendEvent for a rows event.
func (f *Formatter) appendRows(b []byte, ev *binlogstream.Event, e *replication.RowsEvent, partial map[int][]any, limit int) (_ []byte, lines, last int) {
	kind := binlogstream.RowKind(ev.Header.EventType)
	if kind == "" {
		return b, 0, len(b)
	}
	per := 1
	if kind == "update" {
		per = 2
	}
	// The parts every line of the event shares.
	f.head = appendRowHead(f.head[:0], kind, e, ev.Table)
	if ev.Table != f.tfOf {
		f.tfOf, f.tf = ev.Table, newTableFormat(ev.Table)
	}
	f.tail = appendTailHead(f.tail[:0], ev)
	n := len(e.Rows) / per
	if limit >= 0 {
		n = min(n, limit)
	}
	// A MINIMAL or NOBLOB row image names the columns it left out.
	skips := e.SkippedColumns
	if len(skips) != len(e.Rows) {
		skips = nil
	}
	last = len(b)
	for i := range n {
		var before, after []any
		var skipBefore, skipAfter []int
		if per == 2 {
			before, after = e.Rows[2*i], e.Rows[2*i+1]
			if vals, ok := partial[2*i+1]; ok {
				after = withDocuments(after, vals)
			}
			if skips != nil {
				skipBefore, skipAfter = skips[2*i], skips[2*i+1]
			}
		} else {
			after = e.Rows[i]
			if skips != nil {
				skipAfter = skips[i]
			}
		}
		last = len(b)
		b = append(b, f.head...)
		b = appendRowImages(b, ev.Table, f.tf, before, after, skipBefore, skipAfter)
		b = append(b, f.tail...)
		b = appendRowToken(&f.tokens, b, ev, i+1)
	}
	return b, n, last
}

// PartialAfterImages returns, for a MySQL partial JSON update, the after
// images' values with each logged diff turned into the full document; a
// document that cannot be built (a before image without the column, as
// binlog_row_image MINIMAL or NOBLOB logs it) is an error: a line never
// holds a diff as if it were the value.
func PartialAfterImages(ev *binlogstream.Event) (map[int][]any, error) {
	re, ok := ev.Event.(*replication.RowsEvent)
	if !ok || ev.Header.EventType != replication.PARTIAL_UPDATE_ROWS_EVENT {
		return nil, nil
	}
	out := map[int][]any{}
	for i := 1; i < len(re.Rows); i += 2 {
		vals := ev.RowValues(i)
		for _, v := range vals {
			if pe, isErr := v.(*binlogstream.PartialJSONError); isErr {
				return nil, fmt.Errorf("at %s: %w (the lines need binlog_row_image=FULL to hold the whole document)", ev.Start, pe)
			}
		}
		out[i] = vals
	}
	return out, nil
}

// withDocuments replaces the JSON diffs of a partial update's raw after
// image by the documents RowValues built.
func withDocuments(raw, vals []any) []any {
	out := raw
	for c, v := range raw {
		if _, isDiff := v.(*replication.JsonDiff); isDiff && c < len(vals) {
			if &out[0] == &raw[0] {
				out = append([]any(nil), raw...)
			}
			out[c] = vals[c]
		}
	}
	return out
}

// resumeKey is what precedes the token at the end of every line.
var resumeKey = []byte(`,"resume":"`)

// Token returns the resume token at the end of a line (with or without
// its newline), as it is written: "resume" is always the line's last key,
// and a token holds nothing JSON escapes. ok is false for a line without.
func Token(line []byte) (tok []byte, ok bool) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	i := bytes.LastIndex(line, resumeKey)
	if i < 0 || !bytes.HasSuffix(line, []byte(`"}`)) {
		return nil, false
	}
	return line[i+len(resumeKey) : len(line)-2], true
}

// Resume is the position the token at the end of line names.
func Resume(line []byte) (binlogstream.ResumePosition, error) {
	tok, ok := Token(line)
	if !ok {
		return binlogstream.ResumePosition{}, errors.New("not a binlog-tail line: no resume token at its end")
	}
	return binlogstream.ParseResumePosition(string(tok))
}
