package binlogstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream/internal/ddl"
	"github.com/binlogstream/binlogstream/internal/snapshot"
)

// snapHost is what a snapshot needs of the streamer it runs beside
// (BinlogStreamer): its positions, its source and its listeners.
type snapHost interface {
	ResumePosition() ResumePosition
	source() Source
	// setResume moves the resume position to r (stamped with the
	// snapshot's state).
	setResume(r ResumePosition)
	// emit hands ev to the listeners; a failure is a *ListenerError at pos.
	emit(ctx context.Context, listeners []Listener, ev Event, pos Position) error
	// afterDelivery records a binlog event as delivered, as d says.
	afterDelivery(be *replication.BinlogEvent, d *decision)
	// countProgress counts a delivery at r towards the next Progress event.
	countProgress(r ResumePosition)
}

// snapBox is what other goroutines share with a streamer's snapshot:
// the tables SnapshotTable asked for, the counters, and whether a
// snapshot is still to open.
type snapBox struct {
	hasAdded atomic.Bool // added is not empty

	mu    sync.Mutex
	added []string // SnapshotTable calls waiting for the Run goroutine
	stats SnapshotStats
	// opening: a snapshot is configured or in the token, and what is left
	// to read is not known before Run opens it.
	opening bool
}

func (b *snapBox) setOpening(on bool) {
	b.mu.Lock()
	b.opening = on
	b.mu.Unlock()
}

// complete reports whether every table was read (true without a
// snapshot). Any goroutine may call it.
func (b *snapBox) complete() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.added) == 0 && b.stats.Tables == 0 && !b.opening
}

// snapDriver is the snapshot component: it runs a snapshot beside the
// stream (beside). Its state is advanced on Run's goroutine, between
// events; reads run on reader goroutines.
type snapDriver struct {
	host  snapHost
	box   *snapBox
	conf  *SnapshotConfig // Config.Snapshot, nil when only SnapshotTable or the token asks
	cfg   SnapshotConfig
	src   snapshotSource
	state *snapshot.State
	meta  map[string]*snapTable
	// pattern: the tables of cfg.Tables to read, by id, sorted.
	pattern []string
	tok     string // the state's token part
	tokBuf  []byte
	tokText []byte // the bytes of the tokens handed out, never written again
	dirty   bool

	gen     uint64 // reads of an older generation are discarded
	work    chan chunkJob
	results chan chunkResult
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	// reads: each table's reads not attached yet.
	reads map[string]*tableReads
	// epoch: a table's reads asked before its last discarded chunk are
	// dropped when they come back.
	epoch map[string]uint64
	cmp   chunkReader // the Run goroutine's connection for key weights
	at    Position    // the stream's point; File "" before the dump's first event

	// needWork: a table may be ready to start, or a chunk to ask for.
	needWork bool
	// chunksDone counts the chunks delivered.
	chunksDone uint64
	log        logrus.FieldLogger
	// paused: tables whose read found them gone from the server; nothing
	// more is asked of them until the stream's DROP or RENAME ends them.
	paused map[string]bool
	// reloads counts the reloads in a row after reads that failed for a
	// change of their table's definition (readSchemaError).
	reloads int

	// wake, when not nil, is closed by the next read that comes back: a
	// quiet stream waits on it (idleWake) besides its next event.
	wakeMu sync.Mutex
	wake   chan struct{}
	// placeTried: this dump asked the server where its binlog ends, to
	// place a GTID-mode snapshot that has no point yet (placeAtEnd).
	placeTried bool
	// quiet: between is called at a heartbeat, not after an event.
	quiet bool
	// sendsAhead is the table whose reads the (one) reader's connection
	// last found it can send ahead: its reads are asked chained.
	sendsAhead atomic.Pointer[snapTable]
}

var _ beside = (*snapDriver)(nil)

// closedChan is a wake that has already happened.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// idleWake is what a stream with nothing queued waits on besides its
// next event, between source transactions: closed at once when the
// snapshot can act now (a read came back, or work is due and no idle
// pump has run since the last event: pumped says one has), closed by the
// next read that comes back while reads are in flight, nil when only the
// stream's own events and heartbeats can move it (a chunk waits for the
// stream to reach its position). Chunks attach by the same rules either
// way; this only spares the wait for the next event or heartbeat.
func (d *snapDriver) idleWake(pumped bool) <-chan struct{} {
	if d.state == nil {
		return nil
	}
	if d.at.File == "" {
		if d.placeTried || pumped {
			return nil
		}
		return closedChan // placeAtEnd, once a dump
	}
	if len(d.results) > 0 || !pumped && d.due() {
		return closedChan
	}
	if !d.reading() {
		return nil
	}
	d.wakeMu.Lock()
	defer d.wakeMu.Unlock()
	if len(d.results) > 0 { // came back since the check above
		return closedChan
	}
	if d.wake == nil {
		d.wake = make(chan struct{})
	}
	return d.wake
}

// signalWake wakes a stream waiting on idleWake: a read came back.
func (d *snapDriver) signalWake() {
	d.wakeMu.Lock()
	if d.wake != nil {
		close(d.wake)
		d.wake = nil
	}
	d.wakeMu.Unlock()
}

// due reports whether a pump has something to do at the stream's point:
// a read came back, a waiting chunk's position is reached, or a table may
// start. It is called after every event, so it allocates nothing.
func (d *snapDriver) due() bool {
	if d.needWork || len(d.results) > 0 || d.box.hasAdded.Load() {
		return true
	}
	for _, tr := range d.reads {
		if r := tr.first(); r != nil && r.read.at.Compare(d.at) <= 0 {
			return true
		}
	}
	return false
}

func toPos(p Position) snapshot.Pos { return snapshot.Pos{File: p.File, Offset: p.Offset} }

func comparePos(a, b snapshot.Pos) int {
	return Position{File: a.File, Offset: a.Offset}.Compare(Position{File: b.File, Offset: b.Offset})
}

// snapNoFold: the tests' negative control (SnapshotNoFold).
var snapNoFold bool

// snapAnywhere: the tests' negative control (SnapshotAttachAnywhere):
// chunks attach after any event, inside source transactions too, and
// only then (no attach while the dump is quiet). Each attaches at the
// first event past its read's position, as a read that came back after
// the stream passed it would, whatever the stream's lag.
var snapAnywhere bool

// snapChainFault, when set, is every reader's chunkread.SetChainFault
// (the tests' SnapshotChainFault).
var snapChainFault *snapFault

// snapFault is chunkread.SetChainFault's arguments.
type snapFault struct {
	every   int
	noCheck bool
	hit     func()
}

// snapMinReaders: the tests' floor on SnapshotConfig.Readers
// (BINLOGSTREAM_TEST_SNAPSHOT_READERS), to run every snapshot test with
// several readers on each table.
var snapMinReaders int

// snapInflight, when set, sees a table's reads in flight each time one
// is asked (the tests' SnapshotInflight).
var snapInflight func(table string, n int)

// snapReadAge, when set, sees each chunk read's transaction lifetime as
// the read is taken in (the benchmarks' SnapshotReadAges).
var snapReadAge func(time.Duration)

var snapStateCfg = snapshot.Config{Compare: snapshot.CompareValues, ComparePos: comparePos}

// openSnapDriver makes the snapshot component for h from the resume
// token's state in from (or a fresh one) and starts its readers; at, when
// known, is the stream's point.
func openSnapDriver(ctx context.Context, h snapHost, conf *SnapshotConfig, log logrus.FieldLogger, box *snapBox,
	from ResumePosition, at Position) (*snapDriver, error) {
	d := &snapDriver{host: h, box: box, conf: conf, log: log}
	if err := d.reopen(ctx, from); err != nil {
		return nil, err
	}
	if at.File != "" {
		d.restart(at)
	}
	return d, nil
}

// reopen stops the readers, restores the state from the resume token's
// in from, reads the tables' definitions on the host's source and starts
// the readers.
func (d *snapDriver) reopen(ctx context.Context, from ResumePosition) error {
	d.stop()
	d.state = nil
	src, ok := d.host.source().(snapshotSource)
	if !ok {
		return configError("Snapshot: the source (%T) cannot read tables", d.host.source())
	}
	d.cfg = SnapshotConfig{}
	if d.conf != nil {
		d.cfg = *d.conf
	}
	if err := d.cfg.validate(); err != nil {
		return err
	}
	d.cfg.Readers = max(d.cfg.Readers, snapMinReaders)
	d.src, d.meta, d.pattern = src, map[string]*snapTable{}, nil
	d.paused = map[string]bool{}
	d.reads, d.epoch = map[string]*tableReads{}, map[string]uint64{}
	return d.open(ctx, from)
}

// moved reopens a snapshot in progress on the stream's source after a
// failover moved it: the readers' connections and the tables' metadata
// belong to the old server. The state is restored from the resume
// position, as a resumed Run's would be, since the next dump starts there.
func (d *snapDriver) moved(ctx context.Context) error {
	if d.state == nil {
		return nil
	}
	return d.reopen(ctx, d.host.ResumePosition())
}

// afterDDL reopens a snapshot in progress after a DDL statement was
// delivered: the tables' columns and keys it reads by are reloaded from
// the server, and the reads in flight, made with the old ones, are
// dropped. Every later read is made after the statement (restart), so its
// rows have the columns the stream's schema has where they are delivered.
func (d *snapDriver) afterDDL(ctx context.Context) error {
	if d.state == nil || d.box.complete() {
		return nil
	}
	if err := d.reopen(ctx, d.host.ResumePosition()); err != nil {
		return err
	}
	d.restart(d.at)
	return nil
}

// maxSchemaReloads bounds the reloads in a row after chunk reads that
// failed because their table's definition changed under them.
const maxSchemaReloads = 20

// readSchemaError is a chunk read that failed because the table's
// definition changed since its columns and keys were read.
type readSchemaError struct{ err error }

func (e *readSchemaError) Error() string { return e.err.Error() }
func (e *readSchemaError) Unwrap() error { return e.err }

// schemaChanged reports whether a read failed for a change of its table's
// definition: a column or index gone (the SELECT names them), or a read
// view older than the table's definition.
func isNoSuchTable(err error) bool {
	var me *mysql.MyError
	return errors.As(err, &me) && me.Code == mysql.ER_NO_SUCH_TABLE
}

func schemaChanged(err error) bool {
	var me *mysql.MyError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Code {
	case mysql.ER_BAD_FIELD_ERROR, mysql.ER_KEY_DOES_NOT_EXITS, mysql.ER_TABLE_DEF_CHANGED:
		return true
	}
	return false
}

// endDropped ends the snapshot of the tables a DROP or RENAME statement
// takes away, before the statement's event is delivered, so that its
// token records them done.
func (d *snapDriver) endDropped(q *replication.QueryEvent) {
	stmt := string(q.Query)
	if !ddl.DropsOrRenames(stmt) {
		return
	}
	for _, k := range ddl.Targets(string(q.Schema), stmt) {
		id := k.Schema + "." + k.Name
		if _, active := d.state.Active(id); active || d.state.Pending(id) {
			d.state.End(id)
			delete(d.paused, id)
			d.dirty, d.needWork = true, true
		}
	}
}

func (d *snapDriver) open(ctx context.Context, from ResumePosition) error {
	var saved snapshot.Saved
	fresh := from.snap == ""
	if !fresh {
		var err error
		if saved, err = snapshot.Parse([]byte(from.snap)); err != nil {
			return fmt.Errorf("binlogstream: resume token: %w", err)
		}
	}
	var names []string
	for _, t := range saved.Tables {
		if !t.Done {
			names = append(names, t.Name)
		}
	}
	tables, missing, keyless, err := d.src.snapshotTables(ctx, d.cfg.Tables, names)
	if err != nil {
		return err
	}
	if err := d.keyless(keyless, names, fresh, saved); err != nil {
		return err
	}
	for _, t := range tables {
		d.meta[t.id] = t
		if len(d.cfg.Tables) > 0 && d.cfg.Tables.Match(t.table.Schema, t.table.Name) {
			d.pattern = append(d.pattern, t.id)
		}
	}
	sort.Strings(d.pattern)
	d.state = snapshot.Restore(snapStateCfg, saved, snapshot.Pos{})
	for _, id := range missing {
		// Dropped or renamed after the token's point: no row is left to
		// read. Until the stream reaches the statement, the table's row
		// changes are delivered as they come.
		d.log.WithField("table", id).Warn("snapshot: the table is gone from the server; its snapshot ends")
		d.state.End(id)
		d.dirty = true
	}
	for _, id := range d.pattern {
		if fresh || id > saved.Cursor && !d.state.Done(id) {
			d.state.Add(id)
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	d.cancel = cancel
	// The connections outlive a cancelled Run until their reader returns:
	// closing one under a query in flight races inside go-mysql, and a
	// chunk read is short.
	if d.cmp, err = d.src.chunkReader(context.WithoutCancel(rctx)); err != nil {
		cancel()
		d.cancel = nil
		return err
	}
	for _, t := range saved.Tables {
		if t.Bound != nil && d.meta[t.Name] != nil {
			if err := d.cmp.keyCmp(d.meta[t.Name], []*snapshot.Key{t.Bound}); err != nil {
				d.stop()
				return err
			}
			d.state.SetBoundCmp(t.Name, t.Bound.Cmp)
		}
	}
	// Up to Readers tables are read at once, each with up to Readers
	// reads in flight (two results each): neither channel fills.
	n := d.cfg.Readers * (d.cfg.Readers + 1)
	d.work, d.results = make(chan chunkJob, n+aheadReads), make(chan chunkResult, 2*n+aheadReads)
	for range d.cfg.Readers {
		d.wg.Add(1)
		go d.reader(rctx)
	}
	d.dirty, d.needWork = true, true
	d.setRemaining()
	return nil
}

// keyless deals with the selected tables that have no key to read them
// by. At a fresh start they are refused, or skipped with a warning, as
// SnapshotConfig.Keyless says; refused, the Run fails before it delivers
// anything. On a reopen (a resume, a DDL, a failover) one created since
// the start is skipped with a warning: its rows all come from the stream.
// A table still being read that has lost its key is refused. Skipped
// tables are never added.
func (d *snapDriver) keyless(ids, pending []string, fresh bool, saved snapshot.Saved) error {
	var refuse []string
	for _, id := range ids {
		switch {
		case slices.Contains(pending, id), fresh && d.cfg.Keyless == KeylessRefuse:
			refuse = append(refuse, id)
		case !fresh && id <= saved.Cursor: // not to read in this snapshot
		default:
			d.log.WithField("table", id).Warn("snapshot: the table has no primary key and no UNIQUE key of NOT NULL columns: " +
				"its rows are not read, its changes stream as they come")
		}
	}
	if len(refuse) > 0 {
		return &SnapshotKeyError{Tables: refuse}
	}
	return nil
}

// setRemaining publishes, for other goroutines, how much is left to read.
func (d *snapDriver) setRemaining() {
	pending, held := d.state.Tables(), d.state.Held()
	d.box.mu.Lock()
	d.box.stats.Tables, d.box.stats.Pending, d.box.stats.Held, d.box.opening = len(pending), pending, held, false
	d.box.mu.Unlock()
}

// stop ends the readers and waits for them.
func (d *snapDriver) stop() {
	if d.cancel != nil {
		d.cancel()
		d.wg.Wait()
		d.cmp.close()
		d.cancel = nil
	}
}

// token is the state's part of a resume token.
func (d *snapDriver) token() string {
	if d.dirty {
		d.tokBuf = d.state.Append(d.tokBuf[:0])
		d.tok, d.dirty = d.keepToken(d.tokBuf), false
	}
	return d.tok
}

// tokenText is the size of a slab of token text.
const tokenText = 64 << 10

// keepToken is b as a string, its bytes copied into a slab shared by the
// tokens of many rows rather than one allocation per delivered row.
func (d *snapDriver) keepToken(b []byte) string {
	if len(b) == 0 || len(b) > tokenText/16 {
		return string(b)
	}
	if cap(d.tokText)-len(d.tokText) < len(b) {
		d.tokText = make([]byte, 0, tokenText)
	}
	i := len(d.tokText)
	d.tokText = append(d.tokText, b...)
	return unsafe.String(&d.tokText[i], len(b))
}

// restart drops the reads in flight and the held changes, as of a new dump
// whose first event starts at at: positions of an earlier dump (another
// server, after a failover) do not place a later read.
func (d *snapDriver) restart(at Position) {
	d.gen++
	clear(d.reads)
	d.state.Restart(toPos(at))
	d.at, d.needWork = at, true
}

// between attaches the chunks the stream has reached, delivering their
// rows, and starts the reads of tables still to read.
func (d *snapDriver) between(ctx context.Context, listeners []Listener) error {
	defer func() { d.quiet = false }()
	if d.state == nil { // a reopen failed; SnapshotTable may start it again
		if !d.box.hasAdded.Load() || d.at.File == "" {
			return nil
		}
		if err := d.reopen(ctx, d.host.ResumePosition()); err != nil {
			return err
		}
		d.restart(d.at)
	}
	if d.at.File == "" && !d.placeTried {
		d.placeTried = true
		d.placeAtEnd(ctx)
	}
	if d.at.File == "" || !d.due() {
		return nil
	}
	d.needWork = false
	if err := d.takeAdded(ctx); err != nil {
		return err
	}
	// While chunks attach at once (the stream is at or past their reads'
	// positions, as on an idle server), wait for the reads in flight
	// rather than for the next event or heartbeat.
	for round := 0; ; round++ {
		var wait time.Duration
		if round > 0 {
			wait = readWait
		}
		if err := d.collect(ctx, wait); err != nil {
			if !errors.As(err, new(*readSchemaError)) || d.reloads >= maxSchemaReloads {
				return err
			}
			// The table changed on the server before the stream reached
			// the statement: read it again by its new definition.
			d.reloads++
			return d.afterDDL(ctx)
		}
		chunks := d.chunksDone
		for _, id := range d.state.Tables() {
			if err := d.attachTable(ctx, listeners, id); err != nil {
				return err
			}
		}
		if err := d.startTables(ctx); err != nil {
			return err
		}
		if d.chunksDone == chunks || !d.reading() {
			break
		}
	}
	d.stampResume()
	return nil
}

// readWait bounds how long the stream waits for a chunk read in flight
// after a chunk was delivered at once; a slower read is attached at a
// later event or heartbeat.
const readWait = time.Second

// reading reports whether a chunk read is in flight.
func (d *snapDriver) reading() bool {
	for _, tr := range d.reads {
		if tr.inflight > 0 {
			return true
		}
	}
	return false
}

// attachTable attaches table id's next chunk while the stream has reached
// it, and asks for the next read.
func (d *snapDriver) attachTable(ctx context.Context, listeners []Listener, id string) error {
	for {
		tr := d.reads[id]
		if tr == nil {
			break
		}
		r := tr.first()
		if r == nil {
			break
		}
		c := r.chunk
		if snapNoFold {
			nc := *c
			nc.At, nc.Low = toPos(d.at), nil
			c = &nc
		}
		if snapAnywhere && !d.quiet && comparePos(c.At, toPos(d.at)) >= 0 {
			// The negative control takes every chunk as a read that came
			// back late: at the first event past its position, or at a
			// heartbeat once the writes stopped.
			return nil
		}
		o, rows := d.state.Attach(c, toPos(d.at))
		if o == snapshot.Wait {
			return nil
		}
		d.needWork = true
		if o == snapshot.Discard {
			// The reads after this one start from its keys, and so do
			// the reads in flight: drop them all.
			d.reread(id)
			break
		}
		tr.back, tr.asked = tr.back[1:], tr.asked[1:]
		tr.want++
		var keep *snapshot.Pos
		if len(tr.asked) > 0 {
			keep = &tr.asked[0] // a later read may be placed before c
		}
		if err := d.deliverChunk(ctx, listeners, r.job.t, c, rows, keep); err != nil {
			return err
		}
	}
	if _, active := d.state.Active(id); !active {
		if d.reads[id] != nil {
			d.dropReads(id) // reads asked past the table's end
		}
		return nil
	}
	if tr := d.reads[id]; tr != nil && tr.outstanding() == 0 {
		delete(d.reads, id) // asked again from the boundary
	}
	if d.reads[id] == nil {
		if err := d.ask(ctx, d.meta[id]); err != nil {
			return err
		}
	}
	return d.readAhead(ctx, id)
}

// deliverChunk delivers a ready chunk's rows, each with the token whose
// boundary is its key, the last with the chunk finished.
func (d *snapDriver) deliverChunk(ctx context.Context, listeners []Listener, t *snapTable, c *snapshot.Chunk, rows []snapshot.Row, keep *snapshot.Pos) error {
	// The rows' events in two allocations per chunk, one header shared.
	hdr := &replication.EventHeader{EventType: replication.UNKNOWN_EVENT}
	bes, reads := make([]replication.BinlogEvent, len(rows)), make([]SnapshotRead, len(rows))
	// The counter of rows read is moved once per chunk.
	delivered := 0
	defer func() {
		d.box.mu.Lock()
		d.box.stats.Rows += uint64(delivered)
		d.box.mu.Unlock()
	}()
	// Each row's position before it is the one the row before set.
	before := d.host.ResumePosition()
	for i := range rows {
		row := &rows[i]
		d.state.DeliveredAt(t.id, &row.Key)
		if i == len(rows)-1 {
			d.state.FinishKeeping(c, keep)
			d.setRemaining() // the last row's listener sees the table read
		}
		d.dirty = true
		r := before
		r.snap = d.token()
		reads[i].Row = *row.Data.(*[]any)
		reads[i].ChunkEnd = i == len(rows)-1
		be := &bes[i]
		be.Header, be.Event = hdr, &reads[i]
		ev := Event{BinlogEvent: be, Start: d.at, End: d.at, Resume: r, before: before, Table: t.table}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := d.host.emit(ctx, listeners, ev, d.at); err != nil {
			return err
		}
		d.host.countProgress(r)
		d.host.setResume(r)
		before = r
		delivered++
	}
	if len(rows) == 0 {
		d.state.FinishKeeping(c, keep)
		d.dirty = true
	}
	d.chunksDone++
	return nil
}

// startTables starts reading pending tables while fewer than Readers
// tables are being read: pattern tables in name order, then added ones.
func (d *snapDriver) startTables(ctx context.Context) error {
	reading := 0
	var pending []string
	for _, id := range d.state.Tables() {
		if _, ok := d.state.Active(id); ok {
			reading++
		} else if d.state.Pending(id) {
			pending = append(pending, id)
		}
	}
	for _, id := range pending {
		if reading >= d.cfg.Readers {
			break
		}
		d.state.Start(id, toPos(d.at), slices.Contains(d.pattern, id))
		d.dirty = true
		reading++
		d.dropReads(id) // reads of an earlier snapshot of the table
		if err := d.ask(ctx, d.meta[id]); err != nil {
			return err
		}
	}
	return nil
}

// takeAdded puts the tables SnapshotTable named under snapshot.
func (d *snapDriver) takeAdded(ctx context.Context) error {
	b := d.box
	b.mu.Lock()
	added := b.added
	b.added = nil
	b.hasAdded.Store(false)
	b.mu.Unlock()
	if len(added) == 0 {
		return nil
	}
	var names []string
	for _, id := range added {
		if d.meta[id] == nil {
			names = append(names, id)
		}
	}
	if len(names) > 0 {
		tables, missing, keyless, err := d.src.snapshotTables(ctx, nil, names)
		if err != nil {
			return err
		}
		if len(keyless) > 0 {
			return &SnapshotKeyError{Tables: keyless}
		}
		if len(missing) > 0 {
			return fmt.Errorf("binlogstream: snapshot: no base table %s", strings.Join(missing, ", "))
		}
		for _, t := range tables {
			d.meta[t.id] = t
		}
	}
	for _, id := range added {
		if _, active := d.state.Active(id); !active {
			d.state.Add(id)
			d.dirty = true
		}
	}
	return nil
}

// SnapshotTable puts schema.table under snapshot while streaming (the
// consumer added it to what it reads): from the next event on, its rows
// are read in chunks as Config.Snapshot's tables are, and the resume
// token records it, so a resume continues it. A table being read keeps
// its progress; one read before is read again. Any goroutine may call it.
func (s *BinlogStreamer) SnapshotTable(schema, table string) {
	b := &s.snapBox
	b.mu.Lock()
	b.added = append(b.added, schema+"."+table)
	b.hasAdded.Store(true)
	b.mu.Unlock()
}

// SnapshotComplete reports whether the snapshot has read every table,
// with each table's rows handed to the listeners: true without a
// snapshot; false from NewBinlogStreamer, when one is configured or in
// the start token, until then (also before Run has opened it, when
// SnapshotStats still counts no table). It turns true as the last
// table's last row is delivered, or after it, when the table's last
// read comes back empty. A table SnapshotTable adds makes it false again
// until that table is read. Any goroutine may call it.
func (s *BinlogStreamer) SnapshotComplete() bool { return s.snapBox.complete() }

// SnapshotStats returns the snapshot's counters (zero without one).
func (s *BinlogStreamer) SnapshotStats() SnapshotStats {
	b := &s.snapBox
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// stampResume puts the snapshot's state into the streamer's position
// (setResume stamps it).
func (d *snapDriver) stampResume() {
	d.host.setResume(d.host.ResumePosition())
	d.setRemaining()
}

// atDump places the snapshot at a new dump's start: in file mode at
// from.Streamed, after which every event is delivered (and its row
// changes classified); in GTID mode, whose positions are the new server's,
// at the dump's first delivered event.
func (d *snapDriver) atDump(from ResumePosition) {
	d.at = Position{}
	d.placeTried = false
	if from.IsGTID() {
		return
	}
	if d.state != nil {
		d.restart(from.Streamed)
	}
	d.at = from.Streamed
}

// atHeartbeat notes that the dump is quiet, and places a snapshot that
// has no point in the binlog yet (a GTID-mode dump that delivered
// nothing: an idle server) at the heartbeat's position. The dump sends a heartbeat only once it sent
// everything up to that position, so the stream is there.
func (d *snapDriver) atHeartbeat(be *replication.BinlogEvent) {
	d.quiet = true
	if d.state == nil || d.at.File != "" {
		return
	}
	if hb, ok := be.Event.(*replication.HeartbeatEvent); ok && hb.Filename != "" && be.Header.LogPos != 0 {
		d.restart(Position{File: hb.Filename, Offset: uint64(be.Header.LogPos)})
	}
}

// placeAtEnd places a GTID-mode snapshot that has no point yet (a quiet
// dump that delivered nothing) at the end of the server's binlog, when
// the stream is provably there: the binlog position is read first, then
// the executed set; if that set is still the stream's, nothing was
// written after what the stream has, up to the position read before it
// (a set only grows). Otherwise, or on any error, the first event or
// heartbeat places it, as without this.
func (d *snapDriver) placeAtEnd(ctx context.Context) {
	r := d.host.ResumePosition()
	p, ok := d.host.source().(Prober)
	if !ok || !r.IsGTID() || r.GTID != "" {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	before, err := p.Probe(pctx)
	if err != nil || before.Binlog.IsZero() {
		return
	}
	after, err := p.Probe(pctx)
	if err != nil {
		return
	}
	have, err1 := mysql.ParseGTIDSet(r.Flavor, r.Executed)
	now, err2 := mysql.ParseGTIDSet(r.Flavor, after.Executed)
	if err1 != nil || err2 != nil || !have.Equal(now) {
		return
	}
	d.restart(before.Binlog)
}

// stamp puts the snapshot's state into a position the streamer hands
// out.
func (d *snapDriver) stamp(r *ResumePosition) {
	if d.state != nil {
		r.snap = d.token()
	}
}
