package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/debezium"
)

// --format debezium writes one envelope line per Debezium record:
//
//	{"topic":T,"key":K,"value":V,"resume":R}
//
// K and V are the record's key and value as a Kafka consumer would read
// them (null for a tombstone's value or a table without a primary key);
// a consumer of Debezium events reads them and ignores resume. As in the
// lines format, resume is the token to continue after the line. One row
// change can give up to three records (a primary-key change: the delete,
// its tombstone, the create); every line but the last of them carries the
// token from before that row change and "skip":N, the number of its
// records written up to and including this line, so that a run resumed
// from such a line writes the row change's records again and drops the
// first N. With --tables, {"progress":true,"resume":R} carries the
// position past other tables' events.

// formatDebezium and formatLines are --format's values.
const (
	formatLines    = "lines"
	formatDebezium = "debezium"
)

// dbzTail is a run's Debezium encoding, on the listener's goroutine.
type dbzTail struct {
	enc  *debezium.Encoder
	recs []debezium.Record
	// drop: records still to drop, written before the resume (the last
	// line's "skip").
	drop int
}

// newDbzTail sets up the encoding of a run that resumes the file at path
// after rec: the encoder's state is read back from the file's last lines.
func newDbzTail(path string, rec recovered, opts debezium.Options, snapshot bool) (*dbzTail, error) {
	enc, err := debezium.NewEncoder(opts)
	if err != nil {
		return nil, err
	}
	d := &dbzTail{enc: enc}
	if !rec.Lines {
		return d, nil
	}
	d.drop = rec.Skip
	st, err := restoreDebezium(path, rec, snapshot && rec.Resume.SnapshotPending())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	enc.SetState(st)
	return d, nil
}

// restoreDebezium reads the encoder's state back from the lines of path,
// newest first: the transaction in flight, and (wantSnapshot) whether a
// snapshot read was written. The last rec.Skip lines are the records of
// a row change the run writes again: they are not counted.
func restoreDebezium(path string, rec recovered, wantSnapshot bool) (debezium.State, error) {
	f, err := os.Open(path)
	if err != nil {
		return debezium.State{}, err
	}
	defer f.Close()
	r := debezium.NewRestorer(wantSnapshot)
	skip := rec.Skip
	var lerr error
	err = eachLineBackward(f, rec.Size, func(line []byte) bool {
		if skip > 0 {
			skip--
			return true
		}
		var v struct {
			Value json.RawMessage `json:"value"`
		}
		if lerr = json.Unmarshal(line, &v); lerr != nil {
			return false
		}
		var value []byte
		if len(v.Value) > 0 && string(v.Value) != "null" {
			value = v.Value
		}
		if lerr = r.Add(value); lerr != nil {
			return false
		}
		return !r.Done()
	})
	if err == nil {
		err = lerr
	}
	if err != nil {
		return debezium.State{}, err
	}
	if !r.Done() {
		r.AtStart()
	}
	return r.State(), nil
}

// eachLineBackward calls fn with each complete line of f[0:size], the last
// first, until fn returns false.
func eachLineBackward(f io.ReaderAt, size int64, fn func(line []byte) bool) error {
	const chunk = 64 << 10
	var tail []byte // the start of the line that ends where the read part began
	end := size
	for end > 0 {
		from := max(end-chunk, 0)
		buf := make([]byte, end-from, int(end-from)+len(tail))
		if _, err := f.ReadAt(buf, from); err != nil {
			return err
		}
		buf = append(buf, tail...)
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		for {
			i := bytes.LastIndexByte(buf, '\n')
			if i < 0 {
				break
			}
			if !fn(buf[i+1:]) {
				return nil
			}
			buf = buf[:i]
		}
		tail = append([]byte(nil), buf...)
		if from > 0 {
			tail = append(tail, '\n') // the line goes on in the next part read
		}
		end = from
	}
	if len(tail) > 0 {
		fn(bytes.TrimSuffix(tail, []byte("\n")))
	}
	return nil
}

// onDebezium is onEvent for --format debezium: every event goes through
// the encoder (BEGIN, GTID and XID events move its transaction state), and
// the records it gives are queued as envelope lines, in order.
func (t *tailer) onDebezium(ev binlogstream.Event) error {
	switch e := ev.Event.(type) {
	case *binlogstream.Progress:
		if !e.Idle {
			t.queue(ev, -1, nil, true)
		}
		return t.checkTarget(&ev)
	case *replication.RowsEvent:
		if binlogstream.RowKind(ev.Header.EventType) == "" || !t.wants(e.Table) {
			return t.skip(&ev)
		}
	case *replication.TableMapEvent:
		return t.skip(&ev)
	}
	d := t.dbz
	recs, err := d.enc.Append(d.recs[:0], &ev)
	d.recs = recs
	if err != nil {
		return fmt.Errorf("at %s: %w", ev.Start, err)
	}
	if len(recs) == 0 {
		return t.skip(&ev)
	}
	j := <-t.free
	j.ev, j.crashAt, j.partial, j.progress, j.built = ev, -1, nil, false, true
	j.buf, j.lines, j.rows = d.appendLines(j.buf[:0], &j.ev, recs)
	t.work <- j
	t.order <- j
	if t.cfg.Tables != nil {
		t.lastLine, t.lastResume = time.Now(), ev.Resume
	}
	return t.checkTarget(&ev)
}

// appendLines writes recs, the records of ev, as envelope lines, leaving
// out those written before the resume. rows counts the row changes and
// reads whose records end here.
func (d *dbzTail) appendLines(b []byte, ev *binlogstream.Event, recs []debezium.Record) (_ []byte, lines, rows uint64) {
	_, isRows := ev.Event.(*replication.RowsEvent)
	n := 0 // the record's place among its row change's records
	for _, r := range recs {
		n++
		if d.drop > 0 {
			d.drop--
		} else {
			b = appendEnvelopeLine(b, r)
			resume := ev.Resume
			if isRows {
				resume = ev.ResumeAfterRows(r.Row + 1)
				if !r.Last {
					resume = ev.ResumeAfterRows(r.Row)
					b = append(b, `,"skip":`...)
					b = strconv.AppendInt(b, int64(n), 10)
				}
			}
			b = append(b, `,"resume":"`...)
			b, _ = resume.AppendText(b)
			b = append(b, "\"}\n"...)
			lines++
		}
		if r.Last {
			n = 0
			if r.Row >= 0 {
				rows++
			}
		}
	}
	return b, lines, rows
}

// appendEnvelopeLine writes a line up to its skip and resume fields.
func appendEnvelopeLine(b []byte, r debezium.Record) []byte {
	b = append(b, `{"topic":`...)
	b = strconv.AppendQuote(b, r.Topic)
	b = append(b, `,"key":`...)
	b = appendRaw(b, r.Key)
	b = append(b, `,"value":`...)
	return appendRaw(b, r.Value)
}

func appendRaw(b, v []byte) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return append(b, v...)
}

// appendDbzProgressLine is a progress line of --format debezium.
func appendDbzProgressLine(b []byte, ev *binlogstream.Event) []byte {
	b = append(b, `{"progress":true,"resume":"`...)
	b, _ = ev.Resume.AppendText(b)
	return append(b, "\"}\n"...)
}

// formatMismatch refuses to append lines of one format to a file written
// in the other: a reader of either could not read the file.
func formatMismatch(path, format string, rec recovered) error {
	if !rec.Lines || (format == formatDebezium) == rec.Debezium {
		return nil
	}
	was := formatLines
	if rec.Debezium {
		was = formatDebezium
	}
	return fmt.Errorf("%s was written with --format %s: run with --format %s to resume it, or use another --out", path, was, was)
}

// checkFormat checks --format and the Debezium flags, which need it.
func (o *options) checkFormat() error {
	switch o.Format {
	case formatLines:
		for name, set := range map[string]bool{"--schemas": o.Schemas, "--no-tombstones": o.NoTombstones,
			"--decimal-handling": o.DecimalHandling != string(debezium.DecimalPrecise),
			"--topic-prefix":     o.TopicPrefix != debezium.DefaultTopicPrefix} {
			if set {
				return fmt.Errorf("%s needs --format debezium", name)
			}
		}
		return nil
	case formatDebezium:
		_, err := debezium.NewEncoder(o.debeziumOptions())
		if err != nil {
			return fmt.Errorf("--decimal-handling %q: want precise, string or double", o.DecimalHandling)
		}
		if o.TopicPrefix == "" {
			return errors.New("--topic-prefix must not be empty")
		}
		return nil
	}
	return fmt.Errorf("--format %q: want lines or debezium", o.Format)
}

func (o *options) debeziumOptions() debezium.Options {
	return debezium.Options{TopicPrefix: o.TopicPrefix, DecimalHandling: debezium.DecimalHandling(o.DecimalHandling),
		Schemas: o.Schemas, NoTombstones: o.NoTombstones}
}

// formatFlags are --format and the Debezium flags.
type formatFlags struct {
	Format          string
	DecimalHandling string
	Schemas         bool
	NoTombstones    bool
	TopicPrefix     string
}

// defineFormatFlags defines --format and the Debezium flags into f.
func defineFormatFlags(fs *flag.FlagSet, f *formatFlags) {
	fs.StringVar(&f.Format, "format", formatLines, "`lines|debezium`: what a line of FILE holds: lines (binlog-tail's own, below) or debezium "+
		"(a Debezium MySQL connector change event per line: {\"topic\",\"key\",\"value\",\"resume\"}; see docs/debezium.md)")
	fs.StringVar(&f.DecimalHandling, "decimal-handling", string(debezium.DecimalPrecise), "`MODE`, with --format debezium: DECIMAL as Debezium's decimal.handling.mode: "+
		"precise (bytes of the unscaled value, the scale in the schema), string or double")
	fs.BoolVar(&f.Schemas, "schemas", false, "--format debezium: keys and values as {\"schema\",\"payload\"}, as Kafka Connect's JsonConverter writes them with schemas.enable=true")
	fs.BoolVar(&f.NoTombstones, "no-tombstones", false, "--format debezium: no tombstone (the key with a null value) after a delete")
	fs.StringVar(&f.TopicPrefix, "topic-prefix", debezium.DefaultTopicPrefix, "--format debezium: Debezium's topic.prefix, `PREFIX`: topics PREFIX.DB.TABLE, DDL to PREFIX, source.name")
}
