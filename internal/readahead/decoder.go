package readahead

import (
	"sync"
	"sync/atomic"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream/internal/rows"
)

// Decoder takes row decoding off go-mysql's reading goroutine. Its
// Decode func (a go-mysql RowsEventDecodeFunc) reads a rows event's header
// there, since finding the Table_map needs the parser's state, and hands
// the rows to a pool of workers; the stream waits for an event's rows
// before serving it, so events still come in binlog order, decoded. The
// rows of several events are decoded at once, on every core. The events
// in flight are those of the stream's queue (EventCacheCount and
// EventCacheBytes bound them).
type Decoder struct {
	skip    func(body []byte) bool // rows events it reports stay undecoded (a resume); nil: none
	filter  *TableFilter           // tables whose rows are not decoded; nil: none
	Recycle bool                   // decode into arenas that Event.Release recycles
	jobs    chan *job
	stop    chan struct{}
	once    sync.Once

	plans      rows.PlanCache // on go-mysql's goroutine only
	fastEvents atomic.Uint64  // rows events internal/rows decoded (tests compare it with go-mysql's)
	mu         sync.Mutex
	pending    map[*replication.RowsEvent]*job
}

type job struct {
	rows.Job
	err  error
	done chan struct{} // nil: decoded in place
}

// run decodes the job's rows (rows.Job.Run), counting the events the
// fast decoder decoded.
func (d *Decoder) run(j *job) error {
	fast, err := j.Run(d.Recycle)
	if fast {
		d.fastEvents.Add(1)
	}
	return err
}

// Workers is the decoder's goroutines for a DecodeWorkers setting:
// none (in place) for 1 or less.
func Workers(n int) int {
	if n <= 1 {
		return 0
	}
	return n
}

// NewDecoder starts workers goroutines; with none, Decode decodes the
// rows in place, on go-mysql's goroutine, and Wait has nothing to wait
// for. skip, when set, reports the rows events (by their body) whose rows
// are dropped undecoded: a resume's replayed ones.
func NewDecoder(workers int, skip func(body []byte) bool, filter *TableFilter) *Decoder {
	d := &Decoder{skip: skip, filter: filter, stop: make(chan struct{}), pending: map[*replication.RowsEvent]*job{}}
	if workers > 0 {
		d.jobs = make(chan *job, 4*workers)
	}
	for range workers {
		go d.work()
	}
	return d
}

func (d *Decoder) work() {
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

// Decode is the RowsEventDecodeFunc, on go-mysql's goroutine.
func (d *Decoder) Decode(re *replication.RowsEvent, data []byte) error {
	pos, err := rows.Header(re, data)
	if err != nil {
		return err
	}
	if d.skip != nil && d.skip(data) {
		re.Rows = nil // replayed: dropped by the tracker, never delivered
		return nil
	}
	if !d.filter.wants(re) {
		re.Rows = noRows
		return nil
	}
	j := &job{Job: d.plans.Job(re, pos, data)}
	if d.jobs == nil || len(data)-pos < smallRows { // no workers, or less to decode than a handoff costs: here
		err := d.run(j)
		if j.Arena != nil { // for the stream to hand to the Event
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

// Wait returns once the rows of ev (and of the events inside a
// Transaction_payload) are decoded, with a decoding error as go-mysql's
// parser reports one; and, with Recycle, the arena of a rows event's rows
// (nil for the others: the rows of a Transaction_payload's events are
// left to the garbage collector).
func (d *Decoder) Wait(ev *replication.BinlogEvent) (*rows.Arena, error) {
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

func (d *Decoder) waitRows(ev *replication.BinlogEvent, re *replication.RowsEvent) (*rows.Arena, error) {
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
			return nil, ErrClosed
		}
	}
	if j.err != nil {
		return nil, &replication.EventError{Header: ev.Header, Err: j.err.Error(), Data: ev.RawData}
	}
	return j.Arena, nil
}

// FastEvents is the number of rows events internal/rows decoded (the
// others went to go-mysql's decoder).
func (d *Decoder) FastEvents() uint64 { return d.fastEvents.Load() }

// Close stops the workers; Wait then returns ErrClosed.
func (d *Decoder) Close() { d.once.Do(func() { close(d.stop) }) }

// smallRows is the size of row data below which a rows event is decoded
// on go-mysql's goroutine even with workers: handing it over (a job, a
// channel send, a wake-up, the wait for it) costs more than decoding a
// few rows (BenchmarkRealSmallEvents).
const smallRows = 512

// noRows are the rows of an event whose table is filtered out: empty but
// not nil (nil means replayed and dropped).
var noRows = [][]any{}

// TableFilter applies SyncerConfig.DecodeTable, asking once per Table_map.
// It runs on go-mysql's goroutine only.
type TableFilter struct {
	want func(schema, table string) bool
	last *replication.TableMapEvent
	ok   bool
}

// NewTableFilter returns the filter of want; nil (every table) when want
// is nil.
func NewTableFilter(want func(schema, table string) bool) *TableFilter {
	if want == nil {
		return nil
	}
	return &TableFilter{want: want}
}

func (f *TableFilter) wants(re *replication.RowsEvent) bool {
	if f == nil || re.Table == nil {
		return true
	}
	if re.Table != f.last {
		f.last, f.ok = re.Table, f.want(string(re.Table.Schema), string(re.Table.Table))
	}
	return f.ok
}
