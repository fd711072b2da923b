package binlogstream

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-mysql-org/go-mysql/replication"
)

// rowsDecoder takes row decoding off go-mysql's reading goroutine. Its
// decode func (a go-mysql RowsEventDecodeFunc) reads a rows event's header
// there, since finding the Table_map needs the parser's state, and hands
// the rows to a pool of workers; the stream waits for an event's rows
// before serving it, so events still come in binlog order, decoded. The
// rows of several events are decoded at once, on every core. The events
// in flight are those of the stream's queue (EventCacheCount and
// EventCacheBytes bound them as before).
type rowsDecoder struct {
	skip    *replayWindow // rows events before it stay undecoded (a resume); nil: none
	filter  *tableFilter  // tables whose rows are not decoded; nil: none
	recycle bool          // decode into arenas that Event.Release recycles
	jobs    chan *rowsJob
	stop    chan struct{}
	once    sync.Once

	plans      planCache     // on go-mysql's goroutine only
	fastEvents atomic.Uint64 // rows events this package's decoder decoded (tests compare it with go-mysql's)
	mu         sync.Mutex
	pending    map[*replication.RowsEvent]*rowsJob
}

type rowsJob struct {
	re       *replication.RowsEvent
	fast     bool       // this package's decoder applies to the parser's settings
	plan     *tablePlan // nil: a column of the table is left to go-mysql's decoder
	settings rowsSettings
	pos      int
	data     []byte
	err      error
	done     chan struct{} // nil: decoded in place
	arena    *rowsArena    // with recycle: the memory of the decoded rows
}

// run decodes the job's rows: with this package's decoder when it applies
// (rows_decode.go), else with go-mysql's.
func (d *rowsDecoder) run(j *rowsJob) error {
	if j.fast {
		if d.recycle {
			j.arena = newArena()
		}
		ok, err := decodeRowsFast(j.re, j.plan, j.settings, j.pos, j.data, j.arena)
		if ok {
			d.fastEvents.Add(1)
			return nil
		}
		if err == nil && j.plan != nil && j.plan.compressed {
			err = fmt.Errorf("%w: rows of %s, which has a COMPRESSED column, do not decode", ErrCorruptEvent, tableName(j.re))
		}
		if err != nil {
			if j.arena != nil {
				j.arena.release(j.arena.gen.Load())
				j.arena = nil
			}
			return err
		}
		if j.arena != nil { // go-mysql decodes: its values are its own
			j.arena.release(j.arena.gen.Load())
			j.arena = nil
		}
	}
	return j.re.DecodeData(j.pos, j.data)
}

// decodeWorkers is the decoder's goroutines for a DecodeWorkers setting:
// none (in place) for 1 or less.
func decodeWorkers(n int) int {
	if n <= 1 {
		return 0
	}
	return n
}

// newRowsDecoder starts workers goroutines; with none, decode decodes the
// rows in place, on go-mysql's goroutine, and wait has nothing to wait for.
func newRowsDecoder(workers int, skip *replayWindow, filter *tableFilter) *rowsDecoder {
	d := &rowsDecoder{skip: skip, filter: filter, stop: make(chan struct{}), pending: map[*replication.RowsEvent]*rowsJob{}}
	if workers > 0 {
		d.jobs = make(chan *rowsJob, 4*workers)
	}
	for range workers {
		go d.work()
	}
	return d
}

func (d *rowsDecoder) work() {
	for {
		select {
		case <-d.stop:
			return
		case j := <-d.jobs:
			j.err = d.run(j)
			close(j.done)
		}
	}
}

// decode is the RowsEventDecodeFunc, on go-mysql's goroutine.
func (d *rowsDecoder) decode(re *replication.RowsEvent, data []byte) error {
	pos, err := re.DecodeHeader(data)
	if err != nil {
		return err
	}
	if err := checkImages(re, pos, data); err != nil {
		return err
	}
	if d.skip != nil && d.skip.replayed(data) {
		re.Rows = nil // replayed: dropped by the tracker, never delivered
		return nil
	}
	if !d.filter.wants(re) {
		re.Rows = noRows
		return nil
	}
	j := &rowsJob{re: re, pos: pos, data: data}
	if j.settings, j.fast = fastSettings(re); j.fast {
		j.plan = d.plans.plan(re)
	}
	if d.jobs == nil || len(data)-pos < smallRows { // no workers, or less to decode than a handoff costs: here
		err := d.run(j)
		if j.arena != nil { // for the stream to hand to the Event
			d.mu.Lock()
			d.pending[re] = j
			d.mu.Unlock()
		}
		return err
	}
	j.done = make(chan struct{})
	d.mu.Lock()
	d.pending[re] = j
	d.mu.Unlock()
	select {
	case d.jobs <- j:
	case <-d.stop: // the stream is closed: nobody waits for it
	}
	return nil
}

// wait returns once the rows of ev (and of the events inside a
// Transaction_payload) are decoded, with a decoding error as go-mysql's
// parser reports one; and, with recycle, the arena of a rows event's rows
// (nil for the others: the rows of a Transaction_payload's events are
// left to the garbage collector).
func (d *rowsDecoder) wait(ev *replication.BinlogEvent) (*rowsArena, error) {
	switch e := ev.Event.(type) {
	case *replication.RowsEvent:
		return d.waitRows(ev, e)
	case *replication.TransactionPayloadEvent:
		for _, inner := range e.Events {
			if re, ok := inner.Event.(*replication.RowsEvent); ok {
				if _, err := d.waitRows(inner, re); err != nil {
					return nil, err
				}
			}
		}
	}
	return nil, nil
}

func (d *rowsDecoder) waitRows(ev *replication.BinlogEvent, re *replication.RowsEvent) (*rowsArena, error) {
	d.mu.Lock()
	j := d.pending[re]
	delete(d.pending, re)
	d.mu.Unlock()
	if j == nil {
		return nil, nil // left undecoded (replayed), or decoded in place
	}
	if j.done != nil {
		select {
		case <-j.done:
		case <-d.stop:
			return nil, errQueueClosed
		}
	}
	if j.err != nil {
		return nil, &replication.EventError{Header: ev.Header, Err: j.err.Error(), Data: ev.RawData}
	}
	return j.arena, nil
}

func (d *rowsDecoder) close() { d.once.Do(func() { close(d.stop) }) }

// smallRows is the size of row data below which a rows event is decoded
// on go-mysql's goroutine even with workers: handing it over (a job, a
// channel send, a wake-up, the wait for it) costs more than decoding a
// few rows (BenchmarkRealSmallEvents).
const smallRows = 512

// checkImages refuses a rows event whose row images take no bytes (no
// column in them) while row data follows: go-mysql's DecodeData loops for
// ever on one, appending empty rows. No server writes one; damaged bytes
// can (found by FuzzDirSourceGarbage).
func checkImages(re *replication.RowsEvent, pos int, data []byte) error {
	if pos < len(data) && !anyBitSet(re.ColumnBitmap1, int(re.ColumnCount)) {
		return fmt.Errorf("%w: a rows event of %s with %d bytes of rows but no column in its images",
			ErrCorruptEvent, tableName(re), len(data)-pos)
	}
	return nil
}

func tableName(re *replication.RowsEvent) string {
	if re.Table == nil {
		return "?.?"
	}
	return string(re.Table.Schema) + "." + string(re.Table.Table)
}

// noRows are the rows of an event whose table is filtered out: empty but
// not nil (nil means replayed and dropped).
var noRows = [][]any{}

// tableFilter applies SyncerConfig.DecodeTable, asking once per Table_map.
// It runs on go-mysql's goroutine only.
type tableFilter struct {
	want func(schema, table string) bool
	last *replication.TableMapEvent
	ok   bool
}

func newTableFilter(want func(schema, table string) bool) *tableFilter {
	if want == nil {
		return nil
	}
	return &tableFilter{want: want}
}

func (f *tableFilter) wants(re *replication.RowsEvent) bool {
	if f == nil || re.Table == nil {
		return true
	}
	if re.Table != f.last {
		f.last, f.ok = re.Table, f.want(string(re.Table.Schema), string(re.Table.Table))
	}
	return f.ok
}
