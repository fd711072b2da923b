package binlogstream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlogstream/binlogstream/internal/ddl"
	"github.com/binlogstream/binlogstream/internal/rows"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/sirupsen/logrus"
)

// Stats are counters read while the streamer runs. Each counts one thing,
// over the streamer's life (every Run):
type Stats struct {
	// Delivered counts events every listener acknowledged (the inner
	// events of a Transaction_payload one each).
	Delivered uint64
	// DroppedAtStart counts replayed events dropped by the first dump of a
	// Run: the ones its start position says were delivered before.
	DroppedAtStart uint64
	// DroppedAfterReconnect counts replayed events dropped by the dumps
	// opened after a lost connection (reconnects and failovers): the ones
	// this streamer had delivered before the connection was lost.
	DroppedAfterReconnect uint64
	// ReconnectAttempts counts tries to open a dump after a lost
	// connection or a failed try, failed ones included.
	ReconnectAttempts uint64
	// Reconnects counts dumps opened after a lost connection, on the same
	// server or, after a failover, on the new one (a Run's first dump is
	// not one, however many tries it took).
	Reconnects uint64
	// Failovers counts moves to another server.
	Failovers uint64
	// Progress counts Progress events delivered (Config.ProgressInterval);
	// they are not in Delivered.
	Progress uint64
	// Lag is now minus the last delivered event's timestamp; 0 after a
	// heartbeat (the server had nothing more to send).
	Lag time.Duration
	// Position is ResumePosition().
	Position ResumePosition
	// At is the binlog file and offset after the last delivered event, on
	// the server it came from, in GTID mode too (where Position has no
	// file); zero before this streamer's first delivery.
	At Position
}

// BinlogStreamer streams a binlog to listeners with exactly-once delivery
// across crashes, resumes and reconnects. See doc.go for the contract.
type BinlogStreamer struct {
	cfg       Config
	listeners []Listener

	mu      sync.Mutex
	resume  ResumePosition // after the last acknowledged event
	src     Source         // current source: Config.Source, or a failover target
	stream  Stream
	running bool
	closed  bool
	cancel  context.CancelFunc
	// lctx is the listeners' context during a Run: cancelled StopGrace
	// after Run's, or at once by Close (lcancel).
	lctx    context.Context
	lcancel context.CancelFunc
	done    chan struct{}
	// lastRunErr is what the last Run returned, for FlushAndStop.
	lastRunErr      error
	stoppedAtTarget bool // stopIfReached cancelled the run
	// lastTS is the last delivered event's header timestamp (seconds), 0
	// after a heartbeat: Stats computes the lag from it, so the hot path
	// does not read the clock.
	lastTS    int64
	delivered uint64   // Stats.Delivered
	at        Position // Stats.At
	// stop target (StopAtCurrent): a GTID set in GTID mode, else a position
	stopSet mysql.GTIDSet
	stopPos Position
	// rotated is the last Rotate event delivered: its end in the file it
	// ends (from) and the position it names (to). The file it names may
	// sort anywhere, so a stop position in the file left is compared with
	// from while the stream is at to.
	rotated struct{ from, to Position }
	// stopNext is the source's NextBinlog at StopAtCurrent: a stream at
	// it has everything up to stopPos.
	stopNext Position

	droppedAtStart, droppedAfterReconnect atomic.Uint64
	reconnectAttempts, reconnects         atomic.Uint64
	failovers                             atomic.Uint64
	hasStop                               atomic.Bool

	// Run's goroutine only: when a Progress event is due.
	progress     progressClock
	progressSent atomic.Uint64

	// Run's goroutine only: the schema history's records (loaded and
	// appended) and the tracker of the current dump.
	schema    schemaLog
	sch       *schemaTracker
	schemaOff bool // no schema tracking (the prescan's streamer, benchmarks)
	ddlOnly   bool // the prescan's streamer: rows events may come undecoded
	// checksumLen is the length of the checksum at the end of each event
	// of the current file (its Format_description says).
	checksumLen int

	// snap is the snapshot running beside the stream (Config.Snapshot,
	// SnapshotTable, a snapshot in the start token); nil when none runs.
	// Run's goroutine only.
	snap beside
	// snapBox is what other goroutines share with the snapshot:
	// SnapshotTable's tables and the counters.
	snapBox snapBox
	// point is where the current dump's next event starts (File "" in
	// GTID mode before its first delivery): a snapshot SnapshotTable
	// starts during a Run begins there. Run's goroutine only.
	point Position
}

// NewBinlogStreamer validates cfg and returns a streamer ready to Run.
func NewBinlogStreamer(cfg Config) (*BinlogStreamer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &BinlogStreamer{cfg: cfg, resume: cfg.Start, src: cfg.Source,
		progress: progressClock{every: cfg.ProgressInterval, now: time.Now},
		snapBox:  snapBox{opening: cfg.Snapshot != nil || cfg.Start.snap != ""}}, nil
}

// AddListener registers a listener. Listeners run in the order added,
// on Run's goroutine. Call it before Run.
func (s *BinlogStreamer) AddListener(l Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, l)
}

// ResumePosition returns the position after the last event every listener
// acknowledged. Persisting it and passing it as Config.Start later resumes
// with the next event.
func (s *BinlogStreamer) ResumePosition() ResumePosition {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resume
}

// Stats returns the streamer's counters.
func (s *BinlogStreamer) Stats() Stats {
	s.mu.Lock()
	pos, delivered, ts, at := s.resume, s.delivered, s.lastTS, s.at
	s.mu.Unlock()
	return Stats{
		Delivered:             delivered,
		DroppedAtStart:        s.droppedAtStart.Load(),
		DroppedAfterReconnect: s.droppedAfterReconnect.Load(),
		ReconnectAttempts:     s.reconnectAttempts.Load(),
		Reconnects:            s.reconnects.Load(),
		Failovers:             s.failovers.Load(),
		Progress:              s.progressSent.Load(),
		Lag:                   lagSince(ts),
		Position:              pos,
		At:                    at,
	}
}

func lagSince(ts int64) time.Duration {
	if ts == 0 {
		return 0
	}
	return max(time.Since(time.Unix(ts, 0)), 0)
}

// Close stops a running Run (which then returns ErrClosed) and waits for
// it to finish; unlike cancelling Run's context, it cancels the listener's
// context at once. It is safe to call more than once and from any goroutine.
func (s *BinlogStreamer) Close() error {
	s.mu.Lock()
	s.closed = true
	cancel, lcancel, done, st := s.cancel, s.lcancel, s.done, s.stream
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		lcancel() // the hard stop: listeners too
	}
	if st != nil {
		_ = st.Close()
	}
	if done != nil {
		<-done
	}
	return nil
}

// Run streams until ctx is done (returns ctx.Err()), Close is called
// (returns ErrClosed), a listener fails (*ListenerError), or an error that
// a reconnect cannot cure. It may be called again after it returns; it then
// resumes from ResumePosition.
func (s *BinlogStreamer) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.running {
		s.mu.Unlock()
		return ErrAlreadyRunning
	}
	runCtx, cancel := context.WithCancel(ctx)
	lctx, lcancel := context.WithCancel(context.WithoutCancel(ctx))
	s.running, s.cancel, s.done = true, cancel, make(chan struct{})
	s.lctx, s.lcancel = lctx, lcancel
	listeners := append([]Listener(nil), s.listeners...)
	s.mu.Unlock()
	go graceTimer(runCtx, lctx, lcancel, s.cfg.StopGrace)

	var err error
	if !s.schemaOff {
		err = s.schema.open(runCtx, &s.cfg, s.source(), s.ResumePosition())
	}
	if err == nil {
		err = s.openSnapshot(runCtx, s.ResumePosition(), Position{})
	}
	if err == nil {
		err = s.run(runCtx, listeners)
	}
	if s.snap != nil {
		s.snap.stop()
	}
	cancel()
	lcancel()

	s.mu.Lock()
	closed := s.closed
	switch {
	case s.stoppedAtTarget && ctx.Err() == nil && !closed:
		err = nil // cancelled by stopIfReached: the target is delivered
	case err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) &&
		!errors.As(err, new(*ListenerError)):
		err = ctx.Err()
	case closed && err != nil && runCtx.Err() != nil:
		err = ErrClosed
	}
	s.running, s.cancel, s.lastRunErr, s.stoppedAtTarget = false, nil, err, false
	s.lctx, s.lcancel = nil, nil
	close(s.done)
	s.done = nil
	s.mu.Unlock()
	return err
}

// graceTimer cancels the listeners' context grace after Run's context is
// done (at once when grace is negative); it returns when lctx is done.
func graceTimer(runCtx, lctx context.Context, lcancel context.CancelFunc, grace time.Duration) {
	select {
	case <-runCtx.Done():
	case <-lctx.Done():
		return
	}
	if grace < 0 {
		lcancel()
		return
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-t.C:
		lcancel()
	case <-lctx.Done():
	}
}

func (s *BinlogStreamer) run(ctx context.Context, listeners []Listener) error {
	log := s.cfg.Logger
	failures := 0   // consecutive failed connections
	dumped := false // a dump was opened: the next one is a reconnect
	var lastErr error
	for opened := 0; ; opened++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.reachedStop() {
			if dumped {
				return nil
			}
			// At the target before any dump: the server is still checked,
			// so a run refuses the same server whether or not it had
			// anything to stream.
			err := s.checkBinlogSettings(ctx, s.source())
			if err == nil || !IsRetryable(err) {
				return err
			}
			failures++
			lastErr = err
			continue
		}
		if failures > 0 {
			if failures > s.cfg.MaxReconnectAttempts {
				if s.cfg.Failover == nil {
					return &ReconnectError{Attempts: failures - 1, Last: lastErr}
				}
				src, err := s.failover(ctx, &ReconnectError{Attempts: failures - 1, Last: lastErr})
				if err != nil {
					return err
				}
				s.mu.Lock()
				s.src = src
				s.mu.Unlock()
				s.failovers.Add(1)
				if s.snap != nil {
					if err := s.snap.moved(ctx); err != nil {
						return err
					}
				}
				failures = 0
				continue
			}
			wait := backoff(s.cfg.ReconnectBackoff, s.cfg.MaxReconnectBackoff, failures-1)
			log.WithFields(logrus.Fields{"attempt": failures, "wait": wait, "error": lastErr}).Warn("binlog connection lost; reconnecting")
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		if opened > 0 {
			s.reconnectAttempts.Add(1)
		}
		before := s.ResumePosition()
		err := s.streamOnce(ctx, listeners, &dumped)
		// Progress is a resume position that moved: replayed events
		// dropped without moving it do not reset the attempt count, so a
		// server that keeps cutting the replay cannot loop us forever.
		progressed := s.ResumePosition() != before
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			if errors.As(err, new(*ListenerError)) {
				return err // a failure during a graceful stop is not swallowed
			}
			return ctx.Err()
		}
		if !IsRetryable(err) {
			return err
		}
		if progressed {
			failures = 0
		}
		failures++
		lastErr = err
	}
}

func backoff(base, maxWait time.Duration, n int) time.Duration {
	if n > 30 {
		return maxWait
	}
	d := time.Duration(math.Min(float64(base)*math.Pow(2, float64(n)), float64(maxWait)))
	return d
}

// streamOnce opens one dump at the safe point and streams until an error
// (nil: the stop target was reached). *dumped says a dump of this Run was
// opened before (this one is then a reconnect); it is set once this one is.
func (s *BinlogStreamer) streamOnce(ctx context.Context, listeners []Listener, dumped *bool) (err error) {
	from := s.ResumePosition()
	if !s.schemaOff {
		if s.sch, err = s.schema.trackerAt(from); err != nil {
			return err
		}
	}
	tr, st, err := s.openDump(ctx, from)
	if err != nil {
		return err
	}
	if err := s.attachStream(st); err != nil {
		return err
	}
	defer s.detachStream(st)
	s.point = Position{}
	if !from.IsGTID() {
		s.point = from.Streamed // every event after it is delivered
	}
	if s.snap != nil {
		s.snap.atDump(from)
	}
	dropped := &s.droppedAtStart
	if *dumped {
		s.reconnects.Add(1)
		dropped = &s.droppedAfterReconnect
	}
	*dumped = true
	return s.streamEvents(ctx, listeners, st, tr, from, dropped)
}

// openDump opens the source's dump at from's safe point (in GTID mode at
// its executed set; where the source can skip a replay, at the safe point
// with the replay up to Streamed skipped) and returns it with the tracker
// that follows its events.
func (s *BinlogStreamer) openDump(ctx context.Context, from ResumePosition) (eventTracker, Stream, error) {
	src := s.source()
	if err := s.checkBinlogSettings(ctx, src); err != nil {
		return nil, nil, s.classify(from, err)
	}
	s.cfg.Logger.WithField("from", from.describe()).Debug("opening binlog dump")
	if from.IsGTID() {
		gt, err := newGTIDTracker(from)
		if err != nil {
			return nil, nil, err
		}
		st, err := src.OpenGTID(ctx, gt.executed.Clone())
		if err != nil {
			return nil, nil, s.classify(from, err)
		}
		return gt, st, nil
	}
	if from.Safe.Offset > math.MaxUint32 {
		return nil, nil, fmt.Errorf("%w: safe point %s (stream in GTID mode to pass such files)", ErrOffsetTooLarge, from.Safe)
	}
	tr := newTracker(from)
	pos := mysql.Position{Name: from.Safe.File, Pos: uint32(from.Safe.Offset)}
	var st Stream
	var err error
	if rs, ok := src.(ReplaySkipper); ok && from.inRowsStmt && from.Streamed.Compare(from.Safe) > 0 {
		st, err = rs.OpenFileReplay(ctx, pos, from.Streamed)
	} else {
		st, err = src.OpenFile(ctx, pos)
	}
	if err != nil {
		return nil, nil, s.classify(from, err)
	}
	return tr, st, nil
}

// attachStream makes st the streamer's open dump (Close closes it), or
// closes st and returns ErrClosed when the streamer is closed.
func (s *BinlogStreamer) attachStream(st Stream) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = st.Close()
		return ErrClosed
	}
	s.stream = st
	return nil
}

// detachStream forgets and closes the dump attachStream attached.
func (s *BinlogStreamer) detachStream(st Stream) {
	s.mu.Lock()
	s.stream = nil
	s.mu.Unlock()
	_ = st.Close()
}

// streamEvents reads st's events and acts on each, until an error or
// the stop target (nil). from advances with the events delivered; dropped
// counts the replayed events dropped.
func (s *BinlogStreamer) streamEvents(ctx context.Context, listeners []Listener, st Stream, tr eventTracker,
	from ResumePosition, dropped *atomic.Uint64) error {
	var d, di decision // reused for every event
	is, _ := st.(idleStream)
	pumped := false // an idle pump ran since the last event
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var be *replication.BinlogEvent
		var err error
		if wake := s.idleWake(is, tr, pumped); wake != nil {
			var idle bool
			if be, idle, err = is.nextOrIdle(ctx, wake); err == nil && idle {
				// Nothing queued and the snapshot can act: it does so now,
				// between transactions, not at the next event or heartbeat.
				pumped = true
				if err := s.betweenTxns(ctx, listeners); err != nil {
					return err
				}
				if s.reachedStop() {
					return nil
				}
				continue
			}
		} else {
			be, err = st.Next(ctx)
		}
		if err != nil {
			return s.classify(from, err)
		}
		pumped = false
		stop, err := s.streamEvent(ctx, listeners, st, be, tr, &d, &di, &from, dropped)
		if err != nil || stop {
			return err
		}
	}
}

// idleWake is what the next read of is may also wait on (see
// beside.idleWake): nil without a snapshot, a stream that cannot be woken,
// or inside a transaction.
func (s *BinlogStreamer) idleWake(is idleStream, tr eventTracker, pumped bool) <-chan struct{} {
	if s.snap == nil || is == nil || !tr.between() || snapAnywhere {
		return nil
	}
	return s.snap.idleWake(pumped)
}

// streamEvent tracks one event of st and ignores, drops or delivers it as
// the tracker decides; stop once the stop target is reached.
func (s *BinlogStreamer) streamEvent(ctx context.Context, listeners []Listener, st Stream, be *replication.BinlogEvent,
	tr eventTracker, d, di *decision, from *ResumePosition, dropped *atomic.Uint64) (stop bool, err error) {
	arena := takeArena(st)
	if be.Header.EventType == replication.FORMAT_DESCRIPTION_EVENT {
		s.formatDescription(be)
	}
	if err := tr.observe(be, d); err != nil {
		return false, err
	}
	d.between = tr.between() || snapAnywhere
	switch d.action {
	case actIgnore:
		return s.ignoreEvent(ctx, listeners, be, d)
	case actDrop:
		return false, s.dropEvent(ctx, listeners, be, d, dropped)
	case actExpand:
		err = s.expandPayload(ctx, listeners, be, tr.(*gtidTracker), di, from, dropped)
		d.between = tr.between() || snapAnywhere
	default:
		if pe, ok := be.Event.(*replication.TransactionPayloadEvent); ok && len(pe.Events) > 0 {
			err = s.deliverPayload(ctx, listeners, pe, d, di, from, dropped)
		} else {
			err = s.handle(ctx, listeners, be, d, from, dropped, arena)
		}
	}
	if err != nil {
		return false, err
	}
	if d.between { // chunks go between source transactions, never inside one
		if err := s.betweenTxns(ctx, listeners); err != nil {
			return false, err
		}
	}
	return s.reachedStop(), nil
}

// ignoreEvent passes an event that is not delivered; a heartbeat says the
// stream is idle (no lag), may end it at a target set meanwhile (stop),
// and may report progress.
func (s *BinlogStreamer) ignoreEvent(ctx context.Context, listeners []Listener, be *replication.BinlogEvent, d *decision) (stop bool, err error) {
	if !d.heartbeat {
		return false, nil
	}
	s.mu.Lock()
	s.lastTS = 0
	s.mu.Unlock()
	if s.snap != nil {
		s.snap.atHeartbeat(be)
	}
	if d.between {
		if err := s.betweenTxns(ctx, listeners); err != nil {
			return false, err
		}
	}
	if s.reachedStop() { // a target set while the stream was idle
		return true, nil
	}
	return false, s.maybeProgress(ctx, listeners, false, heartbeatAt(be, d))
}

// heartbeatAt is where a heartbeat says the dump is: the file it names
// and its LogPos, else the decision's end.
func heartbeatAt(be *replication.BinlogEvent, d *decision) Position {
	if hb, ok := be.Event.(*replication.HeartbeatEvent); ok && hb.Filename != "" && be.Header.LogPos != 0 {
		return Position{File: hb.Filename, Offset: uint64(be.Header.LogPos)}
	}
	return d.end
}

// dropEvent follows a replayed event the listeners already had in the
// schema history, counts it in dropped and moves the resume position
// past it.
func (s *BinlogStreamer) dropEvent(ctx context.Context, listeners []Listener, be *replication.BinlogEvent, d *decision,
	dropped *atomic.Uint64) error {
	if _, err := s.observeSchema(be, d); err != nil {
		return err
	}
	dropped.Add(1)
	s.setResume(d.after)
	return s.maybeProgress(ctx, listeners, true, d.end)
}

// expandPayload tracks and handles, one by one, the inner events of a
// GTID-mode Transaction_payload.
func (s *BinlogStreamer) expandPayload(ctx context.Context, listeners []Listener, be *replication.BinlogEvent, gt *gtidTracker,
	di *decision, from *ResumePosition, dropped *atomic.Uint64) error {
	for _, inner := range be.Event.(*replication.TransactionPayloadEvent).Events {
		if err := gt.observeInner(inner, di); err != nil {
			return err
		}
		if err := s.handle(ctx, listeners, inner, di, from, dropped, nil); err != nil {
			return err
		}
	}
	return nil
}

// deliverPayload delivers the inner events of a file-mode
// Transaction_payload one by one. They share the payload's position, so
// their resume positions count inner events (Inner) past its start.
// di is the caller's scratch decision for the inner events.
func (s *BinlogStreamer) deliverPayload(ctx context.Context, listeners []Listener, pe *replication.TransactionPayloadEvent,
	d, di *decision, from *ResumePosition, dropped *atomic.Uint64) error {
	n := len(pe.Events)
	for i := range int(d.skipInner) { // delivered before the resume: their Table_maps still count
		if _, err := s.observeSchema(pe.Events[i], d); err != nil {
			return err
		}
	}
	for i := int(d.skipInner); i < n; i++ {
		before := d.before
		before.Streamed, before.Inner, before.Rows, before.inRowsStmt = d.start, uint32(i), 0, false
		if i == int(d.skipInner) {
			before.Rows = d.skipRows
		}
		after := before
		after.Inner, after.Rows = uint32(i+1), 0
		if i == n-1 {
			after = d.after
		}
		*di = decision{action: actDeliver, start: d.start, end: d.end, gtid: d.gtid, before: before, after: after}
		if i == int(d.skipInner) {
			di.skipRows = d.skipRows
		}
		if err := s.handle(ctx, listeners, pe.Events[i], di, from, dropped, nil); err != nil {
			return err
		}
	}
	return nil
}

// handle drops (counting in dropped) or delivers one event as d says;
// arena is the memory of its decoded rows when the source recycles it.
func (s *BinlogStreamer) handle(ctx context.Context, listeners []Listener, be *replication.BinlogEvent, d *decision,
	from *ResumePosition, dropped *atomic.Uint64, arena *rows.Arena) error {
	switch d.action {
	case actIgnore:
		return nil
	case actDrop:
		if _, err := s.observeSchema(be, d); err != nil {
			return err
		}
		dropped.Add(1)
		s.setResume(d.after)
		return s.maybeProgress(ctx, listeners, true, d.end)
	}
	if err := s.checkStatement(be, d); err != nil {
		return err
	}
	table, err := s.observeSchema(be, d)
	if err != nil {
		return err
	}
	if re, ok := be.Event.(*replication.RowsEvent); ok && isRowsEvent(be.Header.EventType) {
		switch {
		case re.Rows == nil && !s.ddlOnly:
			// SkipReplayedRows left it undecoded: it should have been dropped.
			return positionError("rows event at %s-%s was skipped as replayed but is not before the streamed position %s",
				d.start, d.end, from.Streamed)
		case re.Rows != nil && len(re.Rows) == 0:
			// Its table is filtered out (SyncerConfig.DecodeTable): not
			// delivered, the position moves past it.
			s.setResume(d.after)
			return s.maybeProgress(ctx, listeners, true, d.end)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ev := Event{BinlogEvent: be, Start: d.start, End: d.end, GTID: d.gtid, Resume: d.after, before: d.before, Table: table}
	if s.sch != nil && s.sch.ddl != nil {
		ev.DDL, s.sch.ddl = s.sch.ddl, nil
	}
	if arena != nil {
		ev.arena, ev.arenaGen = arena, arena.Gen()
	}
	if d.skipRows > 0 {
		re := be.Event.(*replication.RowsEvent)
		k := int(d.skipRows) * rowsPerChange(be.Header.EventType)
		if len(re.SkippedColumns) == len(re.Rows) { // a MINIMAL/NOBLOB image's columns left out, per row
			re.SkippedColumns = re.SkippedColumns[k:]
		}
		re.Rows = re.Rows[k:]
		ev.SkippedRows = int(d.skipRows)
	}
	if s.snap != nil {
		return s.deliverBeside(ctx, listeners, be, d, ev)
	}
	if err := s.emit(ctx, listeners, ev, d.end); err != nil {
		return err
	}
	s.afterDelivery(be, d)
	return nil
}

// deliverBeside delivers an event while a snapshot runs: the snapshot
// sees it before (and may deliver it itself) and, for a DDL statement,
// after. ev is a copy: handle's own does not escape to the heap.
func (s *BinlogStreamer) deliverBeside(ctx context.Context, listeners []Listener, be *replication.BinlogEvent, d *decision, ev Event) error {
	if handled, err := s.snap.beforeDelivery(ctx, listeners, &ev, d); err != nil || handled {
		return err
	}
	if err := s.emit(ctx, listeners, ev, d.end); err != nil {
		return err
	}
	s.afterDelivery(be, d)
	if q, ok := be.Event.(*replication.QueryEvent); ok && ddl.IsDDL(q.Query) {
		return s.snap.afterDDL(ctx)
	}
	return nil
}

// emit hands ev to every listener; a failure is a *ListenerError at pos.
func (s *BinlogStreamer) emit(_ context.Context, listeners []Listener, ev Event, pos Position) error {
	for _, l := range listeners {
		if err := l(s.lctx, ev); err != nil {
			return &ListenerError{Position: pos, Err: err}
		}
	}
	return nil
}

// afterDelivery records that the listeners acknowledged the event d is
// the decision for.
func (s *BinlogStreamer) afterDelivery(be *replication.BinlogEvent, d *decision) {
	s.point = d.end
	// One lock for these: atomics each would cost more per event.
	if s.progress.every > 0 { // no copy of the position per event otherwise
		s.progress.delivered(d.after)
	}
	s.mu.Lock()
	s.resume = d.after
	s.delivered++
	s.at = d.end
	if be.Header.EventType == replication.ROTATE_EVENT {
		s.rotated.from = Position{File: d.start.File, Offset: d.start.Offset + uint64(be.Header.EventSize)}
		s.rotated.to = d.end
	}
	if ts := be.Header.Timestamp; ts != 0 {
		s.lastTS = int64(ts)
	}
	s.mu.Unlock()
}

// beside is a snapshot running beside the stream (snapshot_stream.go).
// The streamer holds one only while a snapshot runs, calls it at the
// moments below on Run's goroutine, and never sees a chunk.
type beside interface {
	// beforeDelivery is called before ev is delivered as d says. It puts
	// the snapshot's state into d's and ev's resume positions, and holds
	// back or folds ev's row changes of tables still to read: handled
	// says it delivered what is left of ev itself (and recorded it).
	beforeDelivery(ctx context.Context, listeners []Listener, ev *Event, d *decision) (handled bool, err error)
	// afterDDL is called after a DDL statement was delivered: the tables'
	// definitions are read again.
	afterDDL(ctx context.Context) error
	// between is called between source transactions, never inside one:
	// the chunks the stream has reached attach, their rows delivered.
	between(ctx context.Context, listeners []Listener) error
	// atDump places the snapshot at a new dump's start, from.
	atDump(from ResumePosition)
	// atHeartbeat places it at a heartbeat of an idle stream.
	atHeartbeat(be *replication.BinlogEvent)
	// moved reopens it on the streamer's source after a failover.
	moved(ctx context.Context) error
	// stamp puts the snapshot's state into a position the streamer
	// hands out.
	stamp(r *ResumePosition)
	// stop ends its reads, at the end of a Run.
	stop()
	// idleWake is what a stream with nothing queued may wait on besides
	// its next event, between source transactions, so that the component
	// acts at once (between) rather than at the next event or heartbeat;
	// nil for nothing. pumped says it acted so since the last event.
	idleWake(pumped bool) <-chan struct{}
}

// betweenTxns lets the snapshot attach chunks between source
// transactions, first opening one that SnapshotTable asked for during a
// Run without a snapshot.
func (s *BinlogStreamer) betweenTxns(ctx context.Context, listeners []Listener) error {
	if s.snap == nil {
		if !s.snapBox.hasAdded.Load() || s.point.File == "" { // on every event: no lock
			return nil
		}
		if err := s.openSnapshot(ctx, s.ResumePosition(), s.point); err != nil {
			return err
		}
	}
	return s.snap.between(ctx, listeners)
}

// openSnapshot starts the snapshot of a Run that starts at from, or of
// one SnapshotTable asked for at the stream's point at: none when no
// snapshot is configured, in from's token or asked for.
func (s *BinlogStreamer) openSnapshot(ctx context.Context, from ResumePosition, at Position) error {
	if s.snap != nil {
		s.snap.stop()
		s.snap = nil
	}
	if s.cfg.Snapshot == nil && from.snap == "" && !s.snapBox.hasAdded.Load() {
		s.snapBox.setOpening(false)
		return nil
	}
	snap, err := openSnapDriver(ctx, s, s.cfg.Snapshot, s.cfg.Logger, &s.snapBox, from, at)
	if err != nil {
		return err
	}
	s.snap = snap
	return nil
}

// eventTracker is the pure core for one dump: file mode (tracker) or GTID
// mode (gtidTracker).
type eventTracker interface {
	observe(ev *replication.BinlogEvent, d *decision) error
	// between reports whether the last event observed left the stream
	// between transactions (and statements): no source transaction open.
	between() bool
}

// Source is the source the streamer reads: Config.Source, or after a
// failover the candidate it moved to.
func (s *BinlogStreamer) Source() Source { return s.source() }

func (s *BinlogStreamer) source() Source {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src
}

func (s *BinlogStreamer) setResume(r ResumePosition) {
	s.mu.Lock()
	s.resume = r
	if s.snap != nil {
		// Stamped in place: &r would escape through the interface, an
		// allocation per delivered row.
		s.snap.stamp(&s.resume)
	}
	s.mu.Unlock()
}

// classify wraps source errors in the package's typed errors.
func (s *BinlogStreamer) classify(from ResumePosition, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var me *mysql.MyError
	if errors.As(err, &me) && !IsRetryable(err) {
		se := &ServerError{Start: from.Safe, From: from, Err: me}
		var he *hintError
		if errors.As(err, &he) {
			se.hint = he.hint
		}
		return se
	}
	var ee *replication.EventError
	if errors.As(err, &ee) {
		return newDecodeError(from, err)
	}
	return err
}

// countProgress counts a delivery at r towards the next Progress event.
func (s *BinlogStreamer) countProgress(r ResumePosition) {
	if s.progress.every > 0 {
		s.progress.delivered(r)
	}
}
