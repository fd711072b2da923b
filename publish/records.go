package publish

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/debezium"
	"github.com/binlogstream/binlogstream/tailline"
)

// Format is what the messages of a publisher hold.
type Format string

const (
	// FormatLines: one message per binlog-tail line, the line its value.
	FormatLines Format = "lines"
	// FormatDebezium: one message per Debezium MySQL connector record
	// (package debezium), its value the record's value.
	FormatDebezium Format = "debezium"
)

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatLines, FormatDebezium:
		return f, nil
	}
	return "", fmt.Errorf("--format %q: want lines or debezium", s)
}

// Record is one message a transport sends, in the format's terms.
type Record struct {
	// Schema and Table are the table the record is of; Table is empty
	// for a statement (Schema its default database), both for a line of
	// none.
	Schema, Table string
	// Topic is the Debezium topic of a FormatDebezium record, else empty.
	Topic string
	// Key is the row's primary key as a JSON object (nil without one, and
	// for statements and table lines); Value the message's body, nil
	// for a Debezium tombstone. Both are the record's own.
	Key, Value []byte
	// Token is the resume token right after the record.
	Token []byte
}

// Records turns the events a stream delivers into the Records of a
// format; it keeps the Debezium encoder's state, so it sees every event
// in order, on one goroutine. Events of tables that Tables does not
// select give none.
type Records struct {
	format Format
	tables binlogstream.TablePatterns
	lines  tailline.Formatter
	dbz    *debezium.Encoder
	drecs  []debezium.Record
	buf    []byte
	// open: a source transaction began and has not ended.
	open bool
}

// NewRecords returns the Records of format; opts are the Debezium
// encoder's (FormatDebezium).
func NewRecords(format Format, opts debezium.Options, tables binlogstream.TablePatterns) (*Records, error) {
	r := &Records{format: format, tables: tables}
	switch format {
	case FormatLines:
	case FormatDebezium:
		enc, err := debezium.NewEncoder(opts)
		if err != nil {
			return nil, err
		}
		r.dbz = enc
	default:
		return nil, fmt.Errorf("publish: unknown format %q", format)
	}
	return r, nil
}

// Encoder is the Debezium encoder (FormatDebezium), else nil.
func (r *Records) Encoder() *debezium.Encoder { return r.dbz }

// InTxn reports whether the events so far leave a source transaction
// open: a resume token taken now is inside it.
func (r *Records) InTxn() bool { return r.open }

// Append appends the records of ev to recs.
func (r *Records) Append(recs []Record, ev *binlogstream.Event) ([]Record, error) {
	r.track(ev)
	switch e := ev.Event.(type) {
	case *replication.TableMapEvent:
		if !r.wants(e) || r.format == FormatDebezium {
			return recs, nil
		}
	case *replication.RowsEvent:
		if !r.wants(e.Table) || binlogstream.RowKind(ev.Header.EventType) == "" {
			return recs, nil
		}
	case *binlogstream.SnapshotRead, *replication.QueryEvent:
	default:
		if r.format == FormatLines {
			return recs, nil
		}
	}
	if r.format == FormatDebezium {
		return r.appendDebezium(recs, ev)
	}
	return r.appendLines(recs, ev)
}

// track follows the source transactions: a GTID event or BEGIN opens
// one; an XID, COMMIT, ROLLBACK or any other statement (DDL commits)
// ends it.
func (r *Records) track(ev *binlogstream.Event) {
	switch e := ev.Event.(type) {
	case *replication.GTIDEvent, *replication.MariadbGTIDEvent:
		r.open = true
	case *replication.XIDEvent:
		r.open = false
	case *replication.QueryEvent:
		q := strings.TrimSpace(string(e.Query))
		switch {
		case strings.EqualFold(q, "BEGIN"):
			r.open = true
		case hasPrefixFold(q, "SAVEPOINT"), hasPrefixFold(q, "ROLLBACK TO"), hasPrefixFold(q, "RELEASE SAVEPOINT"):
			// A savepoint inside the transaction.
		default:
			r.open = false
		}
	}
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// wants reports whether tm's table is selected.
func (r *Records) wants(tm *replication.TableMapEvent) bool {
	return r.tables == nil || tm == nil || r.tables.Match(string(tm.Schema), string(tm.Table))
}

func (r *Records) appendLines(recs []Record, ev *binlogstream.Event) ([]Record, error) {
	var partial map[int][]any
	schema, table := "", ""
	var keys [][]byte
	switch e := ev.Event.(type) {
	case *replication.RowsEvent:
		var err error
		if partial, err = tailline.PartialAfterImages(ev); err != nil {
			return recs, err
		}
		schema, table = string(e.Table.Schema), string(e.Table.Table)
		keys = rowKeys(ev, e)
	case *replication.TableMapEvent:
		schema, table = string(e.Schema), string(e.Table)
	case *binlogstream.SnapshotRead:
		schema, table = ev.Table.Schema, ev.Table.Name
		if k, ok := tailline.AppendKey(nil, ev.Table, e.Row); ok {
			keys = [][]byte{k}
		}
	case *replication.QueryEvent:
		schema = string(e.Schema)
	}
	b, _, _ := r.lines.AppendEvent(r.buf[:0], ev, partial, -1)
	r.buf = b
	data := bytes.Clone(b)
	for i := 0; len(data) > 0; i++ {
		n := bytes.IndexByte(data, '\n') + 1
		line := data[:n:n]
		tok, _ := tailline.Token(line)
		rec := Record{Schema: schema, Table: table, Value: line, Token: tok}
		if i < len(keys) {
			rec.Key = keys[i]
		}
		recs = append(recs, rec)
		data = data[n:]
	}
	return recs, nil
}

// rowKeys are the primary keys of a rows event's row changes: the after
// image's, the before image's for a delete.
func rowKeys(ev *binlogstream.Event, e *replication.RowsEvent) [][]byte {
	per, img := 1, 0
	if binlogstream.RowKind(ev.Header.EventType) == "update" {
		per, img = 2, 1
	}
	keys := make([][]byte, 0, len(e.Rows)/per)
	for i := 0; i+per <= len(e.Rows); i += per {
		k, _ := tailline.AppendKey(nil, ev.Table, e.Rows[i+img])
		keys = append(keys, k)
	}
	return keys
}

func (r *Records) appendDebezium(recs []Record, ev *binlogstream.Event) ([]Record, error) {
	drecs, err := r.dbz.Append(r.drecs[:0], ev)
	r.drecs = drecs
	if err != nil {
		return recs, fmt.Errorf("at %s: %w", ev.Start, err)
	}
	schema, table := "", ""
	var tok []byte
	switch e := ev.Event.(type) {
	case *replication.RowsEvent:
		schema, table = string(e.Table.Schema), string(e.Table.Table)
	case *binlogstream.SnapshotRead:
		schema, table = ev.Table.Schema, ev.Table.Name
	case *replication.QueryEvent:
		schema = string(e.Schema)
	}
	if _, rows := ev.Event.(*replication.RowsEvent); !rows {
		tok, _ = ev.Resume.AppendText(nil)
	}
	for _, d := range drecs {
		t := tok
		if t == nil {
			t, _ = ev.ResumeAfterRows(d.Row + 1).AppendText(nil)
		}
		recs = append(recs, Record{Schema: schema, Table: table, Topic: d.Topic, Key: d.Key, Value: d.Value, Token: t})
	}
	return recs, nil
}
