package debezium

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/ddl"
)

// DecimalHandling is Debezium's decimal.handling.mode.
type DecimalHandling string

const (
	// DecimalPrecise: BYTES, the unscaled value's two's complement
	// (base64 in JSON), its scale in the schema (Debezium's default).
	DecimalPrecise DecimalHandling = "precise"
	// DecimalString: the exact value as a string.
	DecimalString DecimalHandling = "string"
	// DecimalDouble: a FLOAT64, which may lose digits.
	DecimalDouble DecimalHandling = "double"
)

// BinaryHandling is Debezium's binary.handling.mode.
type BinaryHandling string

const (
	// BinaryBytes: BYTES, which JSON holds as standard base64 (the default).
	BinaryBytes BinaryHandling = "bytes"
	// BinaryBase64: a STRING of standard base64.
	BinaryBase64 BinaryHandling = "base64"
	// BinaryBase64URLSafe: a STRING of URL-safe base64.
	BinaryBase64URLSafe BinaryHandling = "base64-url-safe"
	// BinaryHex: a STRING of hex digits.
	BinaryHex BinaryHandling = "hex"
)

// DefaultTopicPrefix is Options.TopicPrefix's default.
const DefaultTopicPrefix = "binlog"

// DefaultVersion is Options.Version's default: source.version.
const DefaultVersion = "binlogstream"

// Options configure an Encoder. The zero value is Debezium's defaults with
// the topic prefix "binlog".
type Options struct {
	// TopicPrefix is Debezium's topic.prefix: the tables' topics are
	// PREFIX.DB.TABLE, DDL goes to the topic PREFIX, and source.name is
	// PREFIX. Default DefaultTopicPrefix.
	TopicPrefix string
	// DecimalHandling default DecimalPrecise; BinaryHandling default
	// BinaryBytes.
	DecimalHandling DecimalHandling
	BinaryHandling  BinaryHandling
	// Schemas writes keys and values as Kafka Connect's JsonConverter does
	// with schemas.enable=true: {"schema":...,"payload":...}. Without it,
	// the payload alone.
	Schemas bool
	// NoTombstones leaves out the record with a null value that follows
	// each delete (Debezium's tombstones.on.delete=false).
	NoTombstones bool
	// Version is source.version. Default DefaultVersion.
	Version string
	// TransactionMetadata adds Debezium's transaction metadata events
	// (provide.transaction.metadata) on the topic PREFIX.transaction: a
	// BEGIN before a transaction's first change event, an END with its
	// counts when it commits; with Schemas, their keys and values carry
	// their schemas too.
	TransactionMetadata bool
}

// TransactionTopicSuffix follows the prefix in the topic of the
// transaction metadata events (Debezium's topic.transaction).
const TransactionTopicSuffix = "transaction"

// validate fills the defaults and checks the modes.
func (o *Options) validate() error {
	if o.TopicPrefix == "" {
		o.TopicPrefix = DefaultTopicPrefix
	}
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	switch o.DecimalHandling {
	case "":
		o.DecimalHandling = DecimalPrecise
	case DecimalPrecise, DecimalString, DecimalDouble:
	default:
		return fmt.Errorf("debezium: decimal handling %q: want precise, string or double", o.DecimalHandling)
	}
	switch o.BinaryHandling {
	case "":
		o.BinaryHandling = BinaryBytes
	case BinaryBytes, BinaryBase64, BinaryBase64URLSafe, BinaryHex:
	default:
		return fmt.Errorf("debezium: binary handling %q: want bytes, base64, base64-url-safe or hex", o.BinaryHandling)
	}
	return nil
}

// Record is one Kafka record of a change event: its topic, key and value
// as JSON. Value is nil for a tombstone, Key nil for a table without a
// primary key.
type Record struct {
	Topic      string
	Key, Value []byte
	// Row is the index of the row change the record comes from in the
	// event as delivered (0 for a snapshot read), -1 for a schema change.
	Row int
	// Last is true for the last record of its row change (or statement):
	// a row change gives up to three (a primary-key change: the delete,
	// its tombstone, the create).
	Last bool
}

// Snapshot markers of source.snapshot.
const (
	SnapshotFirst = "first"
	SnapshotTrue  = "true"
	SnapshotLast  = "last"
	SnapshotFalse = "false"
)

// State is what an Encoder carries from event to event: the transaction
// in flight, and whether a snapshot read was already written. A consumer
// resuming a stream gives it back with SetState (see StateOf).
type State struct {
	// Txn is the transaction in flight; zero when none.
	Txn Txn
	// SnapshotBegun: a snapshot read was written, so the next one is not
	// marked "first".
	SnapshotBegun bool
}

// Txn is a transaction's metadata so far.
type Txn struct {
	ID string
	// Total counts its change events written; Tables counts them per
	// table, keyed "db.table".
	Total  int64
	Tables map[string]int64
	// Thread is the id of the connection that ran it, -1 unknown.
	Thread int64
	open   bool
}

// Encoder turns the events of a binlogstream stream into Debezium change
// events. It does no I/O; it keeps the state of the transaction in flight,
// so it must see every delivered event in order (BEGIN, GTID and XID
// events included) and serves one goroutine.
type Encoder struct {
	opts   Options
	state  State
	tables map[*binlogstream.Table]*tableEnc
	// pending says whether a read's token leaves snapshot rows to read
	// (ResumePosition.SnapshotPending; tests replace it).
	pending func(binlogstream.ResumePosition) bool
}

// NewEncoder returns an Encoder with opts (see Options for the defaults).
func NewEncoder(opts Options) (*Encoder, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Encoder{opts: opts, tables: map[*binlogstream.Table]*tableEnc{}, pending: binlogstream.ResumePosition.SnapshotPending}, nil
}

// Options returns the options with their defaults filled.
func (e *Encoder) Options() Options { return e.opts }

// State returns the encoder's state after the events seen so far.
func (e *Encoder) State() State {
	s := e.state
	s.Txn.Tables = copyMap(s.Txn.Tables)
	return s
}

// SetState sets the encoder's state, as for a stream resumed where it was
// taken.
func (e *Encoder) SetState(s State) {
	s.Txn.Tables = copyMap(s.Txn.Tables)
	s.Txn.open = s.Txn.ID != ""
	e.state = s
}

func copyMap(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ErrUnknownColumns: a row's table has no known column names (see
// binlogstream.Table.Known), which a change event's fields need.
var ErrUnknownColumns = errors.New("debezium: the table's column names are unknown")

// Append appends the records of ev to recs: for a rows event its row
// changes, for a SnapshotRead one read, for a DDL statement one schema
// change; nothing for other events, which only move the transaction
// state. Each row change gives its records in order: an insert "c"; an
// update "u", or, when it changes the primary key, a delete "d" of the old
// key, its tombstone and a create "c" of the new one; a delete "d" and its
// tombstone.
func (e *Encoder) Append(recs []Record, ev *binlogstream.Event) ([]Record, error) {
	switch x := ev.Event.(type) {
	case *replication.GTIDEvent, *replication.MariadbGTIDEvent:
		e.begin(ev, -1)
	case *replication.XIDEvent:
		recs = e.appendTxnEnd(recs, ev)
		e.state.Txn = Txn{}
	case *replication.QueryEvent:
		q := strings.TrimSpace(string(x.Query))
		switch {
		case strings.EqualFold(q, "BEGIN"):
			if !e.state.Txn.open || e.state.Txn.Total > 0 {
				e.begin(ev, int64(x.SlaveProxyID))
			} else {
				e.state.Txn.Thread = int64(x.SlaveProxyID)
			}
		case strings.EqualFold(q, "COMMIT"), strings.EqualFold(q, "ROLLBACK"):
			recs = e.appendTxnEnd(recs, ev)
			e.state.Txn = Txn{}
		case ddl.IsDML(x.Query):
			// A statement-logged row change: no row images to write.
		default:
			e.state.Txn = Txn{} // a DDL statement commits
			return e.appendSchemaChange(recs, ev, x), nil
		}
	case *replication.RowsEvent:
		return e.appendRows(recs, ev, x)
	case *binlogstream.SnapshotRead:
		return e.appendRead(recs, ev, x)
	}
	return recs, nil
}

// begin opens a transaction at ev. Its id is the GTID, else
// "file=FILE,pos=POS" of where it starts, as Debezium's MySQL connector
// names a transaction without a GTID.
func (e *Encoder) begin(ev *binlogstream.Event, thread int64) {
	id := ev.GTID
	if id == "" {
		id = "file=" + ev.Start.File + ",pos=" + strconv.FormatUint(ev.Start.Offset, 10)
	}
	e.state.Txn = Txn{ID: id, Tables: map[string]int64{}, Thread: thread, open: true}
}

// tableEnc is what a table version's records share.
type tableEnc struct {
	topic     string
	db, table string
	cols      []colSchema
	names     []string
	pk        []int
	// The schemas as JSON: of the key, and of the value's envelope.
	keySchema, valueSchema []byte
}

func (e *Encoder) table(t *binlogstream.Table) (*tableEnc, error) {
	if te, ok := e.tables[t]; ok {
		return te, nil
	}
	if !t.Known() {
		return nil, fmt.Errorf("%w: %s.%s (%s): give it binlog_row_metadata=FULL or a schema history", ErrUnknownColumns, t.Schema, t.Name, t.Unknown)
	}
	te := &tableEnc{topic: e.opts.TopicPrefix + "." + t.Schema + "." + t.Name, db: t.Schema, table: t.Name, pk: t.PrimaryKey,
		names: t.ColumnNames()}
	for i := range t.Columns {
		te.cols = append(te.cols, columnSchema(&t.Columns[i], &e.opts))
	}
	if e.opts.Schemas {
		te.keySchema, te.valueSchema = keySchema(te, t), envelopeSchema(te, t)
	}
	if len(e.tables) > 1024 { // table versions come and go with DDL
		clear(e.tables)
	}
	e.tables[t] = te
	return te, nil
}

// appendRows appends the records of a rows event's row changes.
func (e *Encoder) appendRows(recs []Record, ev *binlogstream.Event, re *replication.RowsEvent) ([]Record, error) {
	kind := binlogstream.RowKind(ev.Header.EventType)
	if kind == "" || ev.Table == nil {
		return recs, nil
	}
	te, err := e.table(ev.Table)
	if err != nil {
		return recs, err
	}
	if !e.state.Txn.open {
		e.begin(ev, -1)
	}
	per := 1
	if kind == "update" {
		per = 2
	}
	for i := 0; i < len(re.Rows)/per; i++ {
		src := sourceInfo{ev: ev, te: te, row: ev.SkippedRows + i, snapshot: SnapshotFalse, thread: e.state.Txn.Thread}
		switch kind {
		case "insert":
			after, err := e.row(te, ev, i, ev.Table)
			if err != nil {
				return recs, err
			}
			recs, err = e.change(recs, te, ev, i, "c", nil, after, src, true)
			if err != nil {
				return recs, err
			}
		case "delete":
			before, err := e.row(te, ev, i, ev.Table)
			if err != nil {
				return recs, err
			}
			if recs, err = e.change(recs, te, ev, i, "d", before, nil, src, e.opts.NoTombstones || te.pk == nil); err != nil {
				return recs, err
			}
			recs = e.tombstone(recs, te, before, i, true)
		case "update":
			before, err := e.row(te, ev, 2*i, ev.Table)
			if err != nil {
				return recs, err
			}
			after, err := e.row(te, ev, 2*i+1, ev.Table)
			if err != nil {
				return recs, err
			}
			if string(keyPayload(te, before)) == string(keyPayload(te, after)) {
				if recs, err = e.change(recs, te, ev, i, "u", before, after, src, true); err != nil {
					return recs, err
				}
				continue
			}
			// A new primary key: the old key's row is deleted and the new
			// key's created, each in its own key's partition.
			if recs, err = e.change(recs, te, ev, i, "d", before, nil, src, false); err != nil {
				return recs, err
			}
			recs = e.tombstone(recs, te, before, i, false)
			if recs, err = e.change(recs, te, ev, i, "c", nil, after, src, true); err != nil {
				return recs, err
			}
		}
	}
	return recs, nil
}

// tombstone appends the tombstone of a delete unless NoTombstones.
func (e *Encoder) tombstone(recs []Record, te *tableEnc, before *rowImage, i int, last bool) []Record {
	if e.opts.NoTombstones || te.pk == nil {
		return recs
	}
	return append(recs, Record{Topic: te.topic, Key: e.key(te, before), Row: i, Last: last})
}

// appendRead appends a snapshot read's record.
func (e *Encoder) appendRead(recs []Record, ev *binlogstream.Event, r *binlogstream.SnapshotRead) ([]Record, error) {
	if ev.Table == nil {
		return recs, nil
	}
	te, err := e.table(ev.Table)
	if err != nil {
		return recs, err
	}
	after, err := e.row(te, ev, 0, ev.Table)
	if err != nil {
		return recs, err
	}
	marker := SnapshotTrue
	if !e.state.SnapshotBegun {
		marker = SnapshotFirst
	}
	if !e.pending(ev.Resume) {
		marker = SnapshotLast // no table is left to read after this row
	}
	e.state.SnapshotBegun = true
	src := sourceInfo{ev: ev, te: te, snapshot: marker, thread: -1}
	value := e.envelope(te, "r", nil, after, src, nil)
	return append(recs, Record{Topic: te.topic, Key: e.key(te, after), Value: value, Row: 0, Last: true}), nil
}

// change appends one change event, counting it in the transaction.
func (e *Encoder) change(recs []Record, te *tableEnc, ev *binlogstream.Event, i int, op string, before, after *rowImage,
	src sourceInfo, last bool) ([]Record, error) {
	tx := &e.state.Txn
	if tx.Total == 0 && e.opts.TransactionMetadata {
		recs = append(recs, e.txnEvent("BEGIN", tsMillis(ev), i))
	}
	tx.Total++
	tx.Tables[te.db+"."+te.table]++
	block := &txBlock{id: tx.ID, total: tx.Total, dc: tx.Tables[te.db+"."+te.table]}
	img := after
	if img == nil {
		img = before
	}
	value := e.envelope(te, op, before, after, src, block)
	return append(recs, Record{Topic: te.topic, Key: e.key(te, img), Value: value, Row: i, Last: last}), nil
}

// appendTxnEnd appends the END event of the transaction that ev ends,
// when it wrote change events and TransactionMetadata is set.
func (e *Encoder) appendTxnEnd(recs []Record, ev *binlogstream.Event) []Record {
	if !e.opts.TransactionMetadata || e.state.Txn.Total == 0 {
		return recs
	}
	return append(recs, e.txnEvent("END", tsMillis(ev), -1))
}

// txnEvent is a transaction metadata event of the transaction in flight:
// its key {"id"}, its value status, id, for END event_count and
// data_collections (per table, by name), and ts_ms, in the order of
// Debezium's TransactionMetadataValue schema. row is the Record's Row: a
// BEGIN goes with its row change's records.
func (e *Encoder) txnEvent(status string, ts int64, row int) Record {
	tx := &e.state.Txn
	key := appendString([]byte(`{"id":`), tx.ID)
	key = append(key, '}')
	v := append([]byte(`{"status":"`), status...)
	v = append(v, `","id":`...)
	v = appendString(v, tx.ID)
	if status == "BEGIN" {
		v = append(v, `,"event_count":null,"data_collections":null`...)
	} else {
		v = append(v, `,"event_count":`...)
		v = strconv.AppendInt(v, tx.Total, 10)
		v = append(v, `,"data_collections":[`...)
		names := make([]string, 0, len(tx.Tables))
		for n := range tx.Tables {
			names = append(names, n)
		}
		sort.Strings(names)
		for j, n := range names {
			if j > 0 {
				v = append(v, ',')
			}
			v = append(v, `{"data_collection":`...)
			v = appendString(v, n)
			v = append(v, `,"event_count":`...)
			v = strconv.AppendInt(v, tx.Tables[n], 10)
			v = append(v, '}')
		}
		v = append(v, ']')
	}
	v = append(v, `,"ts_ms":`...)
	v = strconv.AppendInt(v, ts, 10)
	v = append(v, '}')
	if e.opts.Schemas {
		key = withSchema([]byte(txnKeySchema), key)
		v = withSchema([]byte(txnValueSchema), v)
	}
	return Record{Topic: e.opts.TopicPrefix + "." + TransactionTopicSuffix, Key: key, Value: v, Row: row, Last: row < 0}
}

// rowImage is a row's fields, each already rendered as JSON.
type rowImage struct {
	vals [][]byte
}

// row renders row image i of ev.
func (e *Encoder) row(te *tableEnc, ev *binlogstream.Event, i int, t *binlogstream.Table) (*rowImage, error) {
	vals := ev.RowValues(i)
	if len(vals) != len(te.cols) {
		return nil, fmt.Errorf("debezium: %s.%s: a row of %d values for %d columns", te.db, te.table, len(vals), len(te.cols))
	}
	img := &rowImage{vals: make([][]byte, len(vals))}
	for c, v := range vals {
		if pe, ok := v.(*binlogstream.PartialJSONError); ok {
			return nil, fmt.Errorf("debezium: %s.%s: %w (a change event needs binlog_row_image=FULL to hold the whole document)", te.db, te.table, pe)
		}
		b, err := te.cols[c].appendValue(nil, v, t.Columns[c].Nullable, &e.opts)
		if err != nil {
			return nil, fmt.Errorf("debezium: %s.%s column %s: %w", te.db, te.table, t.Columns[c].Name, err)
		}
		img.vals[c] = b
	}
	return img, nil
}

// keyPayload is the key's payload: the primary key's columns.
func keyPayload(te *tableEnc, img *rowImage) []byte {
	if te.pk == nil {
		return nil
	}
	b := []byte{'{'}
	for n, k := range te.pk {
		if n > 0 {
			b = append(b, ',')
		}
		b = appendString(b, nameOf(te, k))
		b = append(b, ':')
		b = append(b, img.vals[k]...)
	}
	return append(b, '}')
}

// key is the record's key, with its schema when Schemas.
func (e *Encoder) key(te *tableEnc, img *rowImage) []byte {
	p := keyPayload(te, img)
	if p == nil {
		return nil
	}
	if !e.opts.Schemas {
		return p
	}
	return withSchema(te.keySchema, p)
}

func withSchema(schema, payload []byte) []byte {
	b := make([]byte, 0, len(schema)+len(payload)+24)
	b = append(b, `{"schema":`...)
	b = append(b, schema...)
	b = append(b, `,"payload":`...)
	b = append(b, payload...)
	return append(b, '}')
}

// txBlock is the envelope's transaction field.
type txBlock struct {
	id        string
	total, dc int64
}

// sourceInfo is what the source field says of a record.
type sourceInfo struct {
	ev       *binlogstream.Event
	te       *tableEnc
	row      int
	snapshot string
	thread   int64
}

// tsMillis is the event's time in milliseconds: the binlog header's
// seconds (0 without a header).
func tsMillis(ev *binlogstream.Event) int64 {
	if ev.BinlogEvent == nil || ev.Header == nil {
		return 0
	}
	return int64(ev.Header.Timestamp) * 1000
}

func (e *Encoder) appendSource(b []byte, s sourceInfo) []byte {
	ev := s.ev
	b = append(b, `{"version":`...)
	b = appendString(b, e.opts.Version)
	b = append(b, `,"connector":"mysql","name":`...)
	b = appendString(b, e.opts.TopicPrefix)
	b = append(b, `,"ts_ms":`...)
	b = strconv.AppendInt(b, tsMillis(ev), 10)
	b = append(b, `,"snapshot":`...)
	b = appendString(b, s.snapshot)
	b = append(b, `,"db":`...)
	b = appendString(b, s.te.db)
	b = append(b, `,"sequence":null,"ts_us":`...)
	b = strconv.AppendInt(b, tsMillis(ev)*1000, 10)
	b = append(b, `,"ts_ns":`...)
	b = strconv.AppendInt(b, tsMillis(ev)*1000000, 10)
	b = append(b, `,"table":`...)
	if s.te.table == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, s.te.table)
	}
	b = append(b, `,"server_id":`...)
	var serverID uint32
	if ev.BinlogEvent != nil && ev.Header != nil {
		serverID = ev.Header.ServerID
	}
	b = strconv.AppendUint(b, uint64(serverID), 10)
	b = append(b, `,"gtid":`...)
	if ev.GTID == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, ev.GTID)
	}
	b = append(b, `,"file":`...)
	b = appendString(b, ev.End.File)
	b = append(b, `,"pos":`...)
	b = strconv.AppendUint(b, ev.Start.Offset, 10)
	b = append(b, `,"row":`...)
	b = strconv.AppendInt(b, int64(s.row), 10)
	b = append(b, `,"thread":`...)
	if s.thread < 0 {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, s.thread, 10)
	}
	return append(b, `,"query":null}`...)
}

// envelope is a change event's value.
func (e *Encoder) envelope(te *tableEnc, op string, before, after *rowImage, src sourceInfo, tx *txBlock) []byte {
	b := make([]byte, 0, 512)
	b = append(b, `{"before":`...)
	b = appendImage(b, te, before)
	b = append(b, `,"after":`...)
	b = appendImage(b, te, after)
	b = append(b, `,"source":`...)
	b = e.appendSource(b, src)
	b = append(b, `,"transaction":`...)
	if tx == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"id":`...)
		b = appendString(b, tx.id)
		b = append(b, `,"total_order":`...)
		b = strconv.AppendInt(b, tx.total, 10)
		b = append(b, `,"data_collection_order":`...)
		b = strconv.AppendInt(b, tx.dc, 10)
		b = append(b, '}')
	}
	b = append(b, `,"op":"`...)
	b = append(b, op...)
	ts := tsMillis(src.ev)
	b = append(b, `","ts_ms":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"ts_us":`...)
	b = strconv.AppendInt(b, ts*1000, 10)
	b = append(b, `,"ts_ns":`...)
	b = strconv.AppendInt(b, ts*1000000, 10)
	b = append(b, '}')
	if e.opts.Schemas {
		return withSchema(te.valueSchema, b)
	}
	return b
}

func appendImage(b []byte, te *tableEnc, img *rowImage) []byte {
	if img == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	for c, v := range img.vals {
		if c > 0 {
			b = append(b, ',')
		}
		b = appendString(b, nameOf(te, c))
		b = append(b, ':')
		b = append(b, v...)
	}
	return append(b, '}')
}

// names of the columns, kept with the table's encoder.
func nameOf(te *tableEnc, c int) string { return te.names[c] }
