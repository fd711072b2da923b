package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/cmd/internal/clikit"
	"github.com/binlogstream/binlogstream/debezium"
	"github.com/binlogstream/binlogstream/tailline"
)

// tailConfig is everything the streaming core needs; the CLI and the demo
// fill it from different sources.
type tailConfig struct {
	Source binlogstream.Source
	// Start is used when the output file holds no complete line.
	Start binlogstream.ResumePosition
	// Target, when set, stops the run once an event ending at or after it
	// has been written (--stop-at-current, file mode).
	Target binlogstream.Position
	// TargetNext is where the binlog goes on after Target when a Rotate
	// event ends there (binlogstream.ServerState.NextBinlog): a run that
	// starts at it has nothing to do, whatever the order of the names.
	TargetNext binlogstream.Position
	// TargetGTID, when set, stops the run once every transaction in it
	// has been written (--stop-at-current --gtid).
	TargetGTID string
	// Failover, when set, moves a GTID-mode stream to a validated writer
	// when its server stays unreachable (--failover-to).
	Failover *binlogstream.FailoverConfig
	// SchemaSnapshot reads information_schema at the first run for the
	// tables created before the stream (the Source must be a server). The
	// schema history is kept next to the output file, in FILE.schema.
	SchemaSnapshot bool
	// Tables, when set, are the tables whose rows and table lines are
	// written; the Source must leave the others' rows undecoded (their
	// DecodeTable). A progress line then carries the position past them.
	Tables binlogstream.TablePatterns
	// Snapshot, when set, reads the tables' rows while streaming
	// (--snapshot): read lines, and the target waits for them.
	Snapshot *binlogstream.SnapshotConfig
	// Debezium, when set, writes Debezium change events in envelope lines
	// (--format debezium, see debezium.go) instead of the lines format.
	Debezium *debezium.Options
	// progressInterval is the streamer's ProgressInterval with Tables
	// (default 1 s; tests shorten it).
	progressInterval time.Duration

	MaxReconnectAttempts int
	ReconnectBackoff     time.Duration
	Logger               logrus.FieldLogger

	// ProgressEvery is how often a progress line (clikit.Progress) is
	// logged at info on Logger; 0 for none.
	ProgressEvery time.Duration
	// EstimateRows, when set, estimates the rows of snapshot tables
	// (schema.table) for the progress line's rows left; asked once for
	// each table the snapshot has to read.
	EstimateRows clikit.RowEstimator
	// FlushEvery bounds how long a written line may sit in the buffer.
	FlushEvery time.Duration

	// crashBefore, when set, is asked before each row line is written; true
	// simulates SIGKILL there: the buffer goes out, then only half of that
	// line, and the run ends with errCrashed. The demo uses it.
	crashBefore func(ev binlogstream.Event, row int) bool
	// writeback, flush, writebackEvery and flushEvery replace
	// startWriteback, flushData, writebackEvery and flushEvery when set
	// (tests).
	writeback      func(*os.File) error
	flush          func(*os.File) error
	writebackEvery int
	flushEvery     int
	// reserve replaces reserveBlocks when set (tests).
	reserve func(f *os.File, off, n int64) error
}

var errCrashed = errors.New("simulated crash")

// tailResult reports what a run did.
type tailResult struct {
	Recovered recovered
	From      binlogstream.ResumePosition // where the streamer started
	Lines     uint64                      // lines written by this run
	Reached   bool                        // Target was reached
	Stats     binlogstream.Stats
}

// tailer writes the lines of delivered events to the output file.
//
// The listener (onEvent, on the streamer's goroutine) only queues each
// event; formatters turn queued events into lines in parallel, and one
// writer appends them to the file in queue order, which is binlog order.
// Decoding (go-mysql's goroutine), tracking plus queueing, formatting and
// writing so run at the same time. Every line still carries the token for
// the moment right after it, and the writer never writes a line before the
// lines ahead of it, so the file stays a valid checkpoint at every byte.
type tailer struct {
	cfg    tailConfig
	target binlogstream.Position
	stop   context.CancelFunc
	// snapshotDone reports whether --snapshot read every table.
	snapshotDone func() bool

	mu sync.Mutex // guards w against the periodic flush
	w  *bufio.Writer
	f  *os.File

	free  chan *job // jobs not in use; bounds the events in flight
	work  chan *job // to the formatters
	order chan *job // to the writer, in binlog order
	wg    sync.WaitGroup
	err   atomic.Pointer[error] // the first write error (or errCrashed)

	lines   atomic.Uint64
	rows    atomic.Uint64
	reached bool

	// The writer asks for a writeback once writebackEvery bytes were
	// written since it last asked, so that the fsync at the end of a run
	// waits for the last of them, not for all (see startWritebacks).
	unwritten   int
	writebacks  chan struct{}
	writebackWG sync.WaitGroup

	// With --tables: when the last line was queued, and how old it may get
	// before an event that writes no line writes a progress line.
	lastLine      time.Time
	lastResume    binlogstream.ResumePosition
	progressEvery time.Duration

	// dbz: --format debezium's encoding; nil for the lines format.
	dbz *dbzTail

	// batch: snapshot reads queued in one job, not yet handed on.
	batch *job
}

// job is one event on its way to the file.
type job struct {
	ev binlogstream.Event
	// more: snapshot reads after ev, formatted into the same buffer.
	more    []readRow
	crashAt int    // cfg.crashBefore said yes for this row; -1 for none
	buf     []byte // the event's lines
	lines   uint64
	rows    uint64
	cut     int           // with crashAt: where the crash line starts in buf
	ready   chan struct{} // formatted
	done    chan struct{} // written; only waited for on a crash
	partial map[int][]any // a partial JSON update's after images (values), by row image index
	// progress: the event's line is a progress line (--tables).
	progress bool
	// built: buf holds the event's lines already (--format debezium).
	built bool
	dbz   bool               // a progress line in the debezium format
	enc   tailline.Formatter // writes the lines
}

// readRow is a snapshot read batched after a job's event, a read of the
// same table at the same position: only the row and the token differ, so
// the rest of its Event is not kept. (Event.Release lends an arena's
// memory back; a read's row is in its chunk's memory, not an arena.)
type readRow struct {
	read   *binlogstream.SnapshotRead
	resume binlogstream.ResumePosition
}

const (
	// queuedEvents bounds the events between the listener and the file.
	// Deeper queues cost more than they smooth: the heap grows by what
	// stands in the queues (and in SyncerConfig.EventCacheCount's events
	// decoded ahead, cli.go), and every new page of it is a fault to take;
	// BenchmarkRealTailMixes (root package) shows the page faults, peak
	// RSS and CPU of a depth.
	queuedEvents = 16
	// maxKeptBuf: a job's line buffer grown past this by a huge event is
	// dropped after use, so the queue holds at most about
	// queuedEvents*maxKeptBuf between huge events.
	maxKeptBuf = 1 << 20
	// writebackEvery: bytes written between two writeback requests.
	writebackEvery = 16 << 20
	// flushEvery: every flushEvery-th writeback request flushes the file's
	// data to stable storage instead of starting its disk writes.
	flushEvery = 2
	// writeBuffer: the lines go to the file in writes of this size (and
	// when the periodic flush finds some): fewer system calls where each
	// costs much (a VM), against a copy into the buffer, which costs less
	// than a write per event; BenchmarkRealTailMixes (root package)
	// compares sizes.
	writeBuffer = 256 << 10
	// readBatch bounds the snapshot reads one job carries: a chunk's rows
	// cross the pipeline's channels a batch at a time, not one each.
	readBatch = 256
)

// formatters is how many goroutines turn events into lines.
func formatters() int {
	return min(runtime.GOMAXPROCS(0), 4)
}

func (t *tailer) startPipeline() {
	t.free = make(chan *job, queuedEvents)
	t.work = make(chan *job, queuedEvents)
	t.order = make(chan *job, queuedEvents)
	for range queuedEvents {
		t.free <- &job{ready: make(chan struct{}, 1), done: make(chan struct{}, 1)}
	}
	for range formatters() {
		t.wg.Go(func() {
			for j := range t.work {
				j.format()
				j.ready <- struct{}{}
			}
		})
	}
	t.writebacks = make(chan struct{}, 1)
	t.writebackWG.Go(t.startWritebacks)
	t.wg.Go(t.writer)
}

// stopPipeline writes everything queued and stops the goroutines.
func (t *tailer) stopPipeline() {
	close(t.work)
	close(t.order)
	t.wg.Wait()
	close(t.writebacks)
	t.writebackWG.Wait()
}

// startWritebacks serves the writer's writeback requests on a goroutine
// of its own, as they take milliseconds: most start the disk writes of
// what the file holds (startWriteback: sync_file_range, not waited for),
// every flushEvery-th flushes the file's data to stable storage
// (flushData: fdatasync, waited for here, not by the writer). With the
// writes started while the stream runs, the fsync at the end of a run
// waits for the last of them only; on a disk with a volatile write cache
// (a VM's virtual disk) that fsync still flushes the cache, which the
// flushes along the way keep small. BenchmarkRealTailMixes (root
// package) measures the wall and CPU of a run with them.
//
// A writeback that is not available here (or not for this file) is not
// asked for again: the fsync at the end still writes everything and
// reports any error. A flush that fails otherwise fails the run: Linux
// reports a lost write to one fsync only, so the one at the end could
// succeed after this one failed.
func (t *tailer) startWritebacks() {
	start, flush := startWriteback, flushData
	if t.cfg.writeback != nil {
		start = t.cfg.writeback
	}
	if t.cfg.flush != nil {
		flush = t.cfg.flush
	}
	startOK, flushOK := true, true
	n, every := 0, cmp.Or(t.cfg.flushEvery, flushEvery)
	for range t.writebacks {
		if n++; flushOK && n%every == 0 {
			err := flush(t.f)
			if err == nil {
				continue
			}
			flushOK = false
			if !errors.Is(err, errors.ErrUnsupported) {
				t.fail(fmt.Errorf("flushing %s to disk: %w", t.f.Name(), err))
				continue
			}
		}
		if startOK {
			startOK = start(t.f) == nil
		}
	}
}

func (t *tailer) fail(err error) {
	t.err.CompareAndSwap(nil, &err)
	t.stop()
}

func (t *tailer) failed() error {
	if p := t.err.Load(); p != nil {
		return *p
	}
	return nil
}

// writer appends the formatted events to the file in queue order.
func (t *tailer) writer() {
	for j := range t.order {
		<-j.ready
		if t.failed() == nil {
			if err := t.write(j); err != nil {
				t.fail(err)
			}
		}
		if j.crashAt >= 0 {
			j.done <- struct{}{}
			continue // the listener recycles it
		}
		t.recycle(j)
	}
}

func (t *tailer) write(j *job) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if j.crashAt < 0 {
		if _, err := t.w.Write(j.buf); err != nil {
			return err
		}
		t.lines.Add(j.lines)
		t.rows.Add(j.rows)
		if t.unwritten += len(j.buf); t.unwritten >= cmp.Or(t.cfg.writebackEvery, writebackEvery) {
			select {
			case t.writebacks <- struct{}{}:
				t.unwritten = 0
			default: // one is running: ask again after the next event
			}
		}
		return nil
	}
	// What a process killed in the middle of writing the crash line would
	// leave behind: every earlier line, then half of this one.
	if _, err := t.w.Write(j.buf[:j.cut]); err != nil {
		return err
	}
	if err := t.w.Flush(); err != nil {
		return err
	}
	line := j.buf[j.cut:]
	if _, err := t.f.Write(line[:len(line)/2]); err != nil {
		return err
	}
	t.w.Reset(io.Discard) // nothing more reaches the file
	return errCrashed
}

// recycle releases the job's event (its rows are written or will never
// be) and makes the job free.
func (t *tailer) recycle(j *job) {
	if cap(j.buf) > maxKeptBuf {
		j.buf = nil
	}
	j.ev.Release()
	clear(j.more)
	j.ev, j.more, j.partial, j.built = binlogstream.Event{}, j.more[:0], nil, false
	t.free <- j
}

// tail recovers the output file at path, then streams from the token of its
// last line (or cfg.Start) until ctx is done, Target is reached, or an error.
// A cancelled ctx is a clean stop: the result's error is nil.
func tail(ctx context.Context, path string, cfg tailConfig) (res tailResult, err error) {
	f, rec, err := openOutput(path)
	if err != nil {
		return res, err
	}
	res.Recovered = rec
	from := cfg.Start
	if rec.Lines {
		from = rec.Resume
	}
	res.From = from
	if from.IsZero() {
		f.Close()
		return res, errors.New("no start position")
	}
	rw := newReservingWriter(f, rec.Size, cfg.reserve)
	t := &tailer{cfg: cfg, target: cfg.Target, f: f, w: bufio.NewWriterSize(rw, writeBuffer)}
	if cfg.Debezium != nil {
		if t.dbz, err = newDbzTail(path, rec, *cfg.Debezium, cfg.Snapshot != nil); err != nil {
			f.Close()
			return res, err
		}
	}
	defer func() {
		if t.order != nil {
			t.stopPipeline()
		}
		t.mu.Lock()
		ferr := t.w.Flush()
		t.mu.Unlock()
		if ferr == nil {
			ferr = f.Sync()
		}
		// The blocks reserved past the end go back once the data is
		// synced. Failing to give them back loses nothing (they stay
		// reserved, as after a kill): a warning, not a failed run.
		if rerr := rw.release(); rerr != nil && cfg.Logger != nil {
			cfg.Logger.Warnf("%s: %v", path, rerr)
		}
		if cerr := f.Close(); ferr == nil {
			ferr = cerr
		}
		if err == nil && ferr != nil {
			err = fmt.Errorf("writing %s: %w", path, ferr)
		}
		res.Lines = t.lines.Load()
	}()

	if !t.target.IsZero() && from.Rows == 0 && !snapshotPending(cfg, rec) &&
		(from.Streamed.Compare(t.target) >= 0 || from.Streamed == cfg.TargetNext) {
		res.Reached = true
		return res, nil // nothing to do
	}

	store, err := openSchemaHistory(path, rec.Lines)
	if err != nil {
		return res, err
	}
	defer store.Close()
	schema := &binlogstream.SchemaConfig{Store: store, Snapshot: cfg.SchemaSnapshot}
	progress := t.followTables(schema, from)
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{
		Source:               cfg.Source,
		Start:                from,
		MaxReconnectAttempts: cfg.MaxReconnectAttempts,
		ReconnectBackoff:     cfg.ReconnectBackoff,
		Failover:             cfg.Failover,
		Logger:               cfg.Logger,
		Schema:               schema,
		ProgressInterval:     progress,
		Snapshot:             cfg.Snapshot,
	})
	if err != nil {
		return res, err
	}
	if cfg.TargetGTID != "" {
		// Run returns nil once it is delivered (at once if it already is).
		if err := s.StopAtGTID(cfg.TargetGTID); err != nil {
			return res, err
		}
	}
	if !cfg.Target.IsZero() {
		// The library's stop also waits for the snapshot, which may end
		// with no line (a last chunk that holds no row), and takes a
		// last Rotate naming a file of another name as the end of its
		// file (checkTarget sees only the name it names).
		s.StopAt(cfg.Target)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	t.stop = stop
	t.snapshotDone = func() bool { return s.SnapshotStats().Tables == 0 }
	t.startPipeline()
	s.AddListener(t.onEvent)

	bg := t.background(runCtx, s)
	err = s.Run(runCtx)
	t.flushReads()
	if t.cfg.Tables != nil && t.failed() == nil && (err == nil || t.reached || ctx.Err() != nil && errors.Is(err, ctx.Err())) {
		t.checkpointAtStop(s.ResumePosition())
	}
	t.stopPipeline()
	t.order = nil
	stop()
	bg.Wait()
	res.Stats = s.Stats()
	if werr := t.failed(); werr != nil {
		return res, werr // the run was stopped for it
	}
	res.Reached = t.reached || (err == nil && (cfg.TargetGTID != "" || !cfg.Target.IsZero()))
	if res.Reached || (ctx.Err() != nil && errors.Is(err, ctx.Err())) {
		return res, nil
	}
	if errors.Is(err, errCrashed) {
		return res, errCrashed
	}
	return res, err
}

// openSchemaHistory is the store of the output's schema history,
// FILE.schema. The history belongs to the output: a file with no line
// starts a new one (perhaps on another server's binlog), created empty
// before the first line is written.
func openSchemaHistory(path string, lines bool) (*binlogstream.FileSchemaStore, error) {
	if !lines {
		if err := os.Remove(schemaPath(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if err := createSchemaHistory(path); err != nil {
			return nil, err
		}
	}
	return binlogstream.NewFileSchemaStore(schemaPath(path)), nil
}

// followTables, with --tables, limits the schema snapshot to the
// patterns' databases when they name fixed ones and returns the
// streamer's progress interval, the tailer's progress lines starting
// from `from`; 0 without --tables. The rows of other tables are not
// delivered, and their other events write no line: a progress line about
// once a second keeps the file's checkpoint past them (see skip).
func (t *tailer) followTables(schema *binlogstream.SchemaConfig, from binlogstream.ResumePosition) time.Duration {
	if t.cfg.Tables == nil {
		return 0
	}
	progress := time.Second
	if t.cfg.progressInterval > 0 {
		progress = t.cfg.progressInterval
	}
	if dbs, ok := t.cfg.Tables.Schemas(); ok {
		schema.Databases = dbs // only their tables need a definition
	}
	t.progressEvery, t.lastLine, t.lastResume = progress, time.Now(), from
	return progress
}

// schemaPath is where the schema history of the output file lives.
func schemaPath(out string) string { return out + ".schema" }

// background flushes the buffer every FlushEvery (so the file trails an
// idle stream by at most that) and logs progress.
func (t *tailer) background(ctx context.Context, s *binlogstream.BinlogStreamer) *sync.WaitGroup {
	var wg sync.WaitGroup
	flushEvery := t.cfg.FlushEvery
	if flushEvery <= 0 {
		flushEvery = 200 * time.Millisecond
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(flushEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				t.mu.Lock()
				var err error
				if t.w.Buffered() > 0 {
					err = t.w.Flush()
				}
				t.mu.Unlock()
				if err != nil {
					return // the next write fails and stops the run
				}
			}
		}
	}()
	if t.cfg.ProgressEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clikit.ReportProgress(ctx, s, t.rows.Load, t.cfg.EstimateRows, t.cfg.Logger, t.cfg.ProgressEvery)
		}()
	}
	return &wg
}

// onEvent is the streamer's listener: it queues the events that write
// lines, in order. It asks cfg.crashBefore about every row here, on the
// streamer's goroutine, and on a crash waits until the writer has left
// the file as a kill would.
func (t *tailer) onEvent(_ context.Context, ev binlogstream.Event) error {
	if err := t.failed(); err != nil {
		return err
	}
	if t.dbz != nil {
		return t.onDebezium(ev)
	}
	if e, ok := ev.Event.(*binlogstream.SnapshotRead); ok {
		return t.queueRead(ev, e)
	}
	t.flushReads()
	rows := false
	switch e := ev.Event.(type) {
	case *replication.RowsEvent:
		if binlogstream.RowKind(ev.Header.EventType) == "" || !t.wants(e.Table) {
			return t.skip(&ev)
		}
		rows = true
	case *replication.QueryEvent:
		if tailline.IsTxnMarker(e.Query) {
			return t.skip(&ev)
		}
	case *replication.TableMapEvent:
		if !t.wants(e) {
			return t.skip(&ev)
		}
	case *binlogstream.Progress:
		if e.Idle { // nothing moved: the last line's token is current
			return t.checkTarget(&ev)
		}
		t.queue(ev, -1, nil, true)
		return t.checkTarget(&ev)
	default:
		return t.skip(&ev)
	}
	crashAt := -1
	if t.cfg.crashBefore != nil && rows {
		for i := range binlogstream.RowChanges(ev.BinlogEvent) {
			if t.cfg.crashBefore(ev, i) {
				crashAt = i
				break
			}
		}
	}
	partial, err := tailline.PartialAfterImages(&ev)
	if err != nil {
		return err
	}
	j := t.queue(ev, crashAt, partial, false)
	if crashAt >= 0 {
		<-j.done
		t.recycle(j)
		return t.failed()
	}
	return t.checkTarget(&ev)
}

// queue hands ev to the formatters and the writer, in order; progress
// makes its line a progress line.
func (t *tailer) queue(ev binlogstream.Event, crashAt int, partial map[int][]any, progress bool) *job {
	j := <-t.free
	j.ev, j.crashAt, j.partial, j.progress, j.built = ev, crashAt, partial, progress, false
	j.dbz = t.dbz != nil
	t.work <- j
	t.order <- j
	if t.cfg.Tables != nil {
		t.lastLine, t.lastResume = time.Now(), ev.Resume
	}
	return j
}

// queueRead adds ev, a snapshot read (e), to the batch of reads queued
// next; the batch is handed on at the chunk's end, when it is full, and
// before any other event (a read of another table or position included).
func (t *tailer) queueRead(ev binlogstream.Event, e *binlogstream.SnapshotRead) error {
	chunkEnd := e.ChunkEnd
	if j := t.batch; j != nil && (ev.Table != j.ev.Table || ev.End != j.ev.End || ev.GTID != j.ev.GTID) {
		t.flushReads()
	}
	if j := t.batch; j != nil {
		j.more = append(j.more, readRow{e, ev.Resume})
	} else {
		j = <-t.free
		j.ev, j.crashAt, j.partial, j.progress, j.built, j.dbz = ev, -1, nil, false, false, false
		t.batch = j
	}
	if chunkEnd || len(t.batch.more)+1 >= readBatch {
		t.flushReads()
	}
	if !chunkEnd {
		return nil // a snapshot ends at a chunk's end: the target waits for it
	}
	return t.checkTarget(&ev)
}

// flushReads hands the batch of snapshot reads on, if any.
func (t *tailer) flushReads() {
	j := t.batch
	if j == nil {
		return
	}
	t.batch = nil
	t.work <- j
	t.order <- j
	if t.cfg.Tables != nil {
		last := j.ev.Resume
		if len(j.more) > 0 {
			last = j.more[len(j.more)-1].resume
		}
		t.lastLine, t.lastResume = time.Now(), last
	}
}

// checkpointAtStop writes a progress line at r, where the stream stopped
// cleanly, when the file's last line is behind it (--tables: the other
// tables' traffic after it), so that a rerun does not read that again.
func (t *tailer) checkpointAtStop(r binlogstream.ResumePosition) {
	if r == t.lastResume || r.IsZero() {
		return
	}
	// A progress line reads only the position fields: no event body.
	t.queue(binlogstream.Event{Start: r.Streamed, End: r.Streamed, Resume: r}, -1, nil, true)
}

// skip passes over an event that writes no line. With --tables, the
// events of the other tables that do reach binlog-tail (their Table_maps,
// the transactions' ends) write a progress line when the last line is a
// progress interval old, so the file's checkpoint keeps up with them.
func (t *tailer) skip(ev *binlogstream.Event) error {
	if t.cfg.Tables != nil && time.Since(t.lastLine) >= t.progressEvery {
		t.queue(*ev, -1, nil, true)
	}
	return t.checkTarget(ev)
}

// wants reports whether the rows of tm's table are written (--tables).
// The sources leave the others' rows undecoded and undelivered; a source
// without that filter still gets none of them written.
func (t *tailer) wants(tm *replication.TableMapEvent) bool {
	return t.cfg.Tables == nil || tm == nil || t.cfg.Tables.Match(string(tm.Schema), string(tm.Table))
}

func (t *tailer) checkTarget(ev *binlogstream.Event) error {
	// ev.Resume, not ev.End: the inner events of a Transaction_payload all
	// end where the payload ends, and only the last one is past it.
	if t.cfg.Snapshot != nil && !t.snapshotDone() {
		return nil
	}
	if r := ev.Resume; !t.target.IsZero() && r.Rows == 0 && r.Inner == 0 && r.Streamed.Compare(t.target) >= 0 {
		t.reached = true
		t.stop()
	}
	return nil
}

// snapshotPending reports whether --snapshot may have rows left to read:
// a fresh file, or a last line whose token holds a snapshot not finished.
func snapshotPending(cfg tailConfig, rec recovered) bool {
	return cfg.Snapshot != nil && (!rec.Lines || rec.Resume.SnapshotPending())
}

// format renders the job's event as lines into j.buf (up to and including
// the crash line when there is one).
func (j *job) format() {
	if j.built {
		return
	}
	b := j.buf[:0]
	ev := &j.ev
	if j.progress && j.dbz {
		j.buf, j.lines, j.rows = appendDbzProgressLine(b, ev), 1, 0
		return
	}
	if j.progress {
		j.buf, j.lines, j.rows = tailline.AppendProgressLine(b, ev), 1, 0
		return
	}
	limit := -1
	if j.crashAt >= 0 {
		limit = j.crashAt + 1
	}
	b, n, last := j.enc.AppendEvent(b, ev, j.partial, limit)
	for i := range j.more {
		b = j.enc.AppendRead(b, ev, j.more[i].read, j.more[i].resume)
	}
	n += len(j.more)
	j.buf, j.lines, j.rows = b, uint64(n), 0
	switch ev.Event.(type) {
	case *replication.RowsEvent, *binlogstream.SnapshotRead:
		j.rows = uint64(n)
	}
	if j.crashAt >= 0 {
		j.cut = last
		j.lines, j.rows = uint64(n-1), uint64(n-1)
	}
}
