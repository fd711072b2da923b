package binlogstream

// What a listener receives: Event, its methods, Listener, and the bodies
// the streamer makes itself (Progress, SnapshotRead).

import (
	"context"
	"fmt"
	"io"
	"iter"

	"github.com/binlogstream/binlogstream/internal/rows"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Event is one binlog event handed to the listeners, as a value: copies
// are complete and independent (the go-mysql BinlogEvent they point to is
// shared and never modified after delivery).
//
// Which token to persist: Resume covers the whole event, every row change
// of a rows event included. A consumer that writes a rows event's changes
// one at a time, and may stop between them, persists beside each change
// the token ResumeAfterRows gives for it, not Resume: a restart from
// Resume stored beside the first of several changes never delivers the
// others. Changes yields each change with that token:
//
//	for change, resume := range ev.Changes() {
//		// apply change and persist resume.String() in one commit
//	}
type Event struct {
	*replication.BinlogEvent

	// Start and End locate the event in the binlog (64-bit offsets). End is
	// where the next event starts; for a Rotate it is the next file's start.
	Start, End Position
	// GTID of the transaction the event belongs to, "" when it has none.
	GTID string
	// Resume is the position to persist once this event is applied: a
	// stream resumed from it starts with the event after this one.
	Resume ResumePosition
	// SkippedRows is the number of row changes trimmed from the front of
	// this rows event because they were delivered before a resume (see
	// ResumeAfterRows). Rows holds only the changes not delivered yet.
	SkippedRows int
	// Table describes the table of a Table_map or rows event as of this
	// event's position (nil for other events): column names, declared
	// types and primary key when they can be proven (Table.Known), else
	// the Table_map's column types and why the names are unknown. One
	// *Table is shared by every event of one table version.
	Table *Table
	// DDL lists, for a DDL statement the schema history follows, each
	// table it created, altered, renamed or dropped, as the history has
	// it after the statement (nil for other events, and when the stream
	// keeps no schema history).
	DDL []TableChange

	before ResumePosition

	// GTID mode: the fingerprint after fpRows row changes of this event,
	// so that a token per row costs O(1) each, not O(row).
	fpRows int
	fp     uint64

	// A piece of a rows event a snapshot split (splitRows): the event, and
	// the index of the piece's first row change in it.
	rowsOf  *Event
	rowsOff int

	// The memory of the decoded rows, when the source recycles it
	// (RecycleRows), and its generation when it was given to this event.
	arena    *rows.Arena
	arenaGen uint64
}

// Release hands the memory of the event's decoded rows back to its source
// for the rows of later events, when the source recycles it
// (SyncerConfig.RecycleRows, DirConfig.RecycleRows); otherwise it does
// nothing. After Release, nothing may read the event's Rows,
// SkippedColumns, values from them (their strings and []byte included)
// or RowValues: they hold later events' values. Every other field stays
// valid. Calling Release again, on this Event or a copy, does nothing.
// A consumer that keeps no row past its listener, or past the step that
// writes the rows out, calls it there; without it the memory is left to
// the garbage collector, as when the source does not recycle.
func (e *Event) Release() {
	if e.arena != nil {
		e.arena.Release(e.arenaGen)
		e.arena = nil
	}
}

// ResumeAfterRows returns the position to persist once the first n row
// changes of this rows event (not safe for concurrent calls on one Event;
// calls with growing n are cheapest) (as delivered, after any trimming) are
// applied, for consumers that checkpoint between the rows of one event. A
// stream resumed from it delivers this event again with those n changes
// trimmed. n equal to all the event's changes gives Resume.
func (e *Event) ResumeAfterRows(n int) ResumePosition {
	total := RowChanges(e.BinlogEvent)
	if e.rowsOf != nil {
		return e.rowsOf.ResumeAfterRows(e.rowsOff + min(max(n, 0), total))
	}
	if n <= 0 && e.SkippedRows == 0 {
		return e.before
	}
	if n >= total {
		return e.Resume
	}
	r := e.before
	if r.IsGTID() {
		r.Progress.Rows, r.Progress.Fingerprint = e.progressAfterRows(n)
		return r
	}
	r.Rows += uint32(n)
	return r
}

// Changes iterates over the row changes of a rows event (as delivered,
// after any trimming), each with the token to persist once it and those
// before it are applied: ResumeAfterRows(i+1) for the i-th, so the last
// one's is Resume. A change is one row for an insert or a delete and the
// (before, after) pair for an update, a sub-slice of Rows. Other events
// yield nothing. Like ResumeAfterRows, it is not safe for concurrent use
// on one Event.
func (e *Event) Changes() iter.Seq2[[][]any, ResumePosition] {
	return func(yield func([][]any, ResumePosition) bool) {
		n := RowChanges(e.BinlogEvent)
		if n == 0 {
			return
		}
		rows := e.Event.(*replication.RowsEvent).Rows
		per := len(rows) / n
		for i := range n {
			if !yield(rows[i*per:(i+1)*per:(i+1)*per], e.ResumeAfterRows(i+1)) {
				return
			}
		}
	}
}

// progressAfterRows is the row count and fingerprint of
// ResumeAfterRows(n) in GTID mode, for the n below RowChanges it passes,
// without copying the position.
func (e *Event) progressAfterRows(n int) (rows uint32, fingerprint uint64) {
	// before counts the transaction's rows up to this event; the trimmed
	// rows were delivered before the resume.
	k := e.SkippedRows + n
	if e.fpRows == 0 || k < e.fpRows {
		e.fpRows, e.fp = 0, e.before.Progress.Fingerprint
	}
	e.fp = addRows(e.fp, e.BinlogEvent, k-e.fpRows)
	e.fpRows = k
	return e.before.Progress.Rows + uint32(k), e.fp
}

// Listener receives events in binlog order. An error stops Run; the event
// does not count as streamed and is delivered again after a resume. ev is
// the listener's own copy, to keep as long as it likes: an Event is a value
// (positions, and a pointer to go-mysql's decoded event, which is never
// reused), so passing it costs a copy, not an allocation per event.
//
// Stopping: cancelling Run's context is a graceful stop. The event being
// delivered finishes: ctx, the listener's context, is not cancelled with
// Run's but Config.StopGrace (default 30 s) later, the hard deadline, or at
// once by Close. No event is delivered after Run's context is done. Run
// then returns its context's error if the listener acknowledged the event
// (nil), and the *ListenerError if it failed, the cancellation of its own
// ctx included (it matches context.Canceled too), so a failure is never
// swallowed and the event is delivered again after a resume.
type Listener func(ctx context.Context, ev Event) error

// Progress is the body (Event.Event) of the event a streamer delivers when
// Config.ProgressInterval is set and the resume position moved, or the
// stream stayed idle, without a delivery for that long: its Resume covers
// what the listeners never saw (rows events of tables SyncerConfig.DecodeTable
// leaves out, replayed events dropped at a resume) so a consumer can persist
// it and not read that stretch again after a restart.
//
// It is not a binlog event: its Header has EventType UNKNOWN_EVENT and
// timestamp 0, Start and End are the resume position's Streamed (in GTID
// mode, where the token holds no file position, the binlog position of
// the event or heartbeat the stream moved to), and a
// listener that switches on ev.Event's type and ignores what it does not
// know ignores it. Persisting its Resume is optional, like any event's.
type Progress struct {
	// Idle is true when nothing moved since the last delivery: the event
	// came on a heartbeat, so a consumer can flush what it batched.
	Idle bool
}

// SnapshotRead is the body (Event.Event) of a row a snapshot read: Row
// holds its values as a rows event's Rows do (RowValues(0) gives them as
// the server means them, through Event.Table). Its Header has EventType
// UNKNOWN_EVENT; Start and End are the stream's position it was delivered
// at. Every row change of its key that the stream delivers comes after it.
//
// A chunk's rows are delivered back to back, and ChunkEnd marks the last
// one: a consumer that commits its sink at ChunkEnd holds whole chunks per
// commit (an empty chunk delivers no row and so no ChunkEnd).
type SnapshotRead struct {
	Row      []any
	ChunkEnd bool
}

// Dump writes a line for go-mysql's Dump convention.
func (r *SnapshotRead) Dump(w io.Writer) { _, _ = fmt.Fprintf(w, "=== SnapshotRead ===\n%v\n", r.Row) }

// Decode is never called: a SnapshotRead is made by the streamer.
func (r *SnapshotRead) Decode([]byte) error { return nil }
