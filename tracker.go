package binlogstream

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"
)

// The tracker is the pure core of the streamer: it observes one decoded
// event at a time, in the order a dump sends them, and answers "deliver,
// drop or ignore?" and "where may a new dump start?". It does no I/O, so a
// test can crash it after any event with a plain loop.

type action int

const (
	// actIgnore: a connection artifact (fake Rotate, header
	// Format_description, fake Gtid_list, heartbeat). Not binlog content.
	actIgnore action = iota
	// actDrop: a replayed event that was delivered before the resume.
	actDrop
	// actDeliver: a new event; hand it to the listeners.
	actDeliver
	// actExpand (GTID mode): a Transaction_payload; observe its inner
	// events one by one instead.
	actExpand
)

// decision is the tracker's answer for one event.
type decision struct {
	action action
	start  Position // where the event starts in the binlog
	end    Position // where the next event starts
	gtid   string   // GTID of the transaction the event belongs to
	// skipRows row changes at the front of a rows event (or of the inner
	// event skipInner of a Transaction_payload, whose first skipInner
	// inner events were delivered) were delivered before the resume.
	skipRows  uint32
	skipInner uint32
	// before is the resume position just before this event, after the one
	// right after it. Both are only meaningful for actDeliver and actDrop.
	before, after ResumePosition
	heartbeat     bool
	// between: the event left the stream between source transactions,
	// where snapshot chunks may attach (set by the streamer from
	// eventTracker.between).
	between bool
}

type txnStage uint8

const (
	txnNone       txnStage = iota
	txnHeader              // a GTID event was read; BEGIN or the statement follows
	txnOpen                // inside BEGIN ... COMMIT/XID (or a MariaDB group)
	txnStandalone          // MariaDB FL_STANDALONE group: one statement, no COMMIT
)

type tracker struct {
	from ResumePosition

	next      Position // where the next event starts; File "" until the dump's Rotate
	replaying bool     // still before from.Streamed (or its partial event)
	pending   bool     // a statement is open: its Table_map(s) are behind us
	rowsStmt  bool     // the open statement is a rows statement (a Table_map was read)
	stage     txnStage // transaction state at next
	gtid      string
	safe      Position
	safeInTxn bool
	safeGTID  string
	last      ResumePosition // resume position after the last event observed
	sawRotate bool
}

// newTracker returns a tracker for a dump that starts at from.Safe.
func newTracker(from ResumePosition) *tracker {
	t := &tracker{
		from:      from,
		safe:      from.Safe,
		safeInTxn: from.InTxn,
		safeGTID:  from.GTID,
		last:      from,
		gtid:      from.GTID,
	}
	if from.InTxn {
		t.stage = txnOpen
	}
	t.replaying = from.Streamed.Compare(from.Safe) > 0 || from.Rows > 0 || from.Inner > 0
	return t
}

// RowKind names what a rows event type does: "insert", "update" or
// "delete" (MariaDB's compressed rows events and MySQL's partial JSON
// updates included); "" for every other event type.
func RowKind(t replication.EventType) string {
	switch rowKinds[t] {
	case kindInsert:
		return "insert"
	case kindUpdate:
		return "update"
	case kindDelete:
		return "delete"
	}
	return ""
}

// What a rows event type does, as rowKinds holds it (kindNone: not a rows
// event).
const (
	kindNone uint8 = iota
	kindInsert
	kindUpdate
	kindDelete
)

// rowKinds is RowKind as a table: the event type is a byte, and row
// counts and tokens ask it for every row.
var rowKinds = func() (k [256]uint8) {
	for _, t := range []replication.EventType{replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1,
		replication.WRITE_ROWS_EVENTv2, replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1} {
		k[t] = kindInsert
	}
	for _, t := range []replication.EventType{replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1,
		replication.UPDATE_ROWS_EVENTv2, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1, replication.PARTIAL_UPDATE_ROWS_EVENT} {
		k[t] = kindUpdate
	}
	for _, t := range []replication.EventType{replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1,
		replication.DELETE_ROWS_EVENTv2, replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1} {
		k[t] = kindDelete
	}
	return k
}()

func isRowsEvent(t replication.EventType) bool { return rowKinds[t] != kindNone }

// rowsPerChange is 2 for update events (before and after image), else 1.
func rowsPerChange(t replication.EventType) int {
	if rowKinds[t] == kindUpdate {
		return 2
	}
	return 1
}

// RowChanges returns the number of row changes a rows event carries
// (an update's before and after image count as one change).
func RowChanges(ev *replication.BinlogEvent) int {
	re, ok := ev.Event.(*replication.RowsEvent)
	if !ok || ev.Header == nil {
		return 0
	}
	switch rowKinds[ev.Header.EventType] {
	case kindNone:
		return 0
	case kindUpdate:
		return len(re.Rows) / 2
	}
	return len(re.Rows)
}

func positionError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrPosition, fmt.Sprintf(format, args...))
}

func mismatchError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrResumeMismatch, fmt.Sprintf(format, args...))
}

// observe feeds one event to the tracker and writes its decision to d (a
// decision the caller reuses, not copied per event).
func (t *tracker) observe(ev *replication.BinlogEvent, d *decision) error {
	d.reset()
	h := ev.Header
	if h == nil {
		return positionError("event without a header")
	}
	if h.EventType == replication.ROTATE_EVENT && h.Flags&replication.LOG_EVENT_ARTIFICIAL_F != 0 {
		return t.fakeRotate(ev)
	}
	if artifact(h, d) {
		return nil
	}
	if !t.sawRotate {
		return positionError("%s event before the dump's Rotate event", h.EventType)
	}

	d.start, d.end = eventSpan(t.next, h)
	if re, ok := ev.Event.(*replication.RotateEvent); ok {
		d.end = Position{File: string(re.NextLogName), Offset: re.Position}
	}

	// Transaction and statement state, as of the end of this event.
	d.gtid = t.updateState(ev)

	if t.replaying {
		c := d.end.Compare(t.from.Streamed)
		switch {
		case c <= 0:
			d.action = actDrop
		case d.start.Compare(t.from.Streamed) < 0:
			return mismatchError("event %s at %s-%s crosses the streamed position %s",
				h.EventType, d.start, d.end, t.from.Streamed)
		default:
			t.replaying = false
			if t.from.Inner > 0 || t.from.Rows > 0 {
				if err := t.partial(ev, d); err != nil {
					return err
				}
			}
			d.action = actDeliver
		}
	} else {
		d.action = actDeliver
	}

	t.next = d.end
	if !t.pending && (t.stage == txnNone || t.stage == txnOpen) {
		t.safe = d.end
		t.safeInTxn = t.stage == txnOpen
		t.safeGTID = ""
		if t.safeInTxn {
			t.safeGTID = t.gtid
		}
	}
	d.before = t.last
	if d.action == actDrop {
		t.last = ResumePosition{Safe: t.safe, Streamed: t.from.Streamed, Rows: t.from.Rows, Inner: t.from.Inner,
			InTxn: t.safeInTxn, GTID: t.safeGTID, inRowsStmt: t.from.inRowsStmt}
		if t.safe.Compare(t.from.Streamed) > 0 { // cannot happen: safe points are event ends
			return positionError("safe point %s passed the streamed position %s", t.safe, t.from.Streamed)
		}
	} else {
		// Field by field (a literal is built, then copied): every field a
		// file-mode position has; the GTID-mode ones stay empty.
		l := &t.last
		l.Safe, l.Streamed, l.Rows, l.Inner = t.safe, d.end, 0, 0
		l.InTxn, l.GTID, l.inRowsStmt = t.safeInTxn, t.safeGTID, t.pending && t.rowsStmt
	}
	d.after = t.last
	return nil
}

// reset clears what every decision sets; before and after are only read
// for actDeliver and actDrop, and every path to those sets both.
func (d *decision) reset() {
	d.action, d.start, d.end, d.gtid = actIgnore, Position{}, Position{}, ""
	d.skipRows, d.skipInner, d.heartbeat = 0, 0, false
}

// artifact recognises what a dump carries besides binlog content, fake
// Rotates aside (each tracker follows those): heartbeats, the
// Format_description resent with LogPos 0 when a dump starts mid-file, and
// events flagged artificial (MariaDB's fake Gtid_list, for one).
// When it does, d says ignore (and heartbeat for a heartbeat).
func artifact(h *replication.EventHeader, d *decision) bool {
	switch {
	case h.EventType == replication.HEARTBEAT_EVENT || h.EventType == replication.HEARTBEAT_LOG_EVENT_V2:
		d.action, d.heartbeat = actIgnore, true
		return true
	case h.EventType == replication.FORMAT_DESCRIPTION_EVENT && h.LogPos == 0,
		h.Flags&replication.LOG_EVENT_ARTIFICIAL_F != 0:
		d.action = actIgnore
		return true
	}
	return false
}

// eventSpan places an event that follows next. The header's LogPos is the
// low 32 bits of the event's end; the high bits come from next, and all of
// it from the size when LogPos is 0 (MariaDB 11.4+). A server may leave
// events out of a dump (MariaDB skips Annotate_rows unless asked), so an
// event can start after next, never before it.
func eventSpan(next Position, h *replication.EventHeader) (start, end Position) {
	size := uint64(h.EventSize)
	end = Position{File: next.File, Offset: next.Offset + size}
	if h.LogPos != 0 {
		off := next.Offset&^uint64(math.MaxUint32) | uint64(h.LogPos)
		if off < end.Offset {
			off += 1 << 32 // the file passed a 4 GiB boundary
		}
		end.Offset = off
	}
	return Position{File: next.File, Offset: end.Offset - size}, end
}

// partial checks that ev, at the streamed position, has the part the
// resume position says was delivered, and sets what to trim.
func (t *tracker) partial(ev *replication.BinlogEvent, d *decision) error {
	target := ev
	if pe, ok := ev.Event.(*replication.TransactionPayloadEvent); ok {
		if int(t.from.Inner) >= len(pe.Events) {
			return mismatchError("the Transaction_payload at %s has %d inner events; the resume position says %d were delivered",
				d.start, len(pe.Events), t.from.Inner)
		}
		d.skipInner = t.from.Inner
		if t.from.Rows == 0 {
			return nil
		}
		target = pe.Events[t.from.Inner]
	} else if t.from.Inner > 0 {
		return mismatchError("the event at %s is %s, not the Transaction_payload the resume position is inside", d.start, ev.Header.EventType)
	}
	n := RowChanges(target)
	if !isRowsEvent(target.Header.EventType) || uint32(n) <= t.from.Rows {
		return mismatchError("the event at %s is %s with %d row changes; the resume position says %d of them were delivered",
			d.start, target.Header.EventType, n, t.from.Rows)
	}
	d.skipRows = t.from.Rows
	return nil
}

// fakeRotate follows a dump's fake Rotate (the decision stays ignore).
func (t *tracker) fakeRotate(ev *replication.BinlogEvent) error {
	re, ok := ev.Event.(*replication.RotateEvent)
	if !ok {
		return positionError("undecoded Rotate event")
	}
	pos := Position{File: string(re.NextLogName), Offset: re.Position}
	if pos.Offset < 4 {
		pos.Offset = 4
	}
	if !t.sawRotate {
		if pos != t.from.Safe {
			return positionError("dump requested at %s started at %s", t.from.Safe, pos)
		}
	} else if pos != t.next {
		if compareFileNames(pos.File, t.next.File) <= 0 || pos.Offset != 4 {
			return positionError("server rotated to %s while the stream was at %s", pos, t.next)
		}
		// The file ended without a Rotate event: the server stopped or
		// crashed and started a new file. Nothing spans files, so the
		// new file's start is a safe point outside any transaction.
		t.pending, t.rowsStmt, t.stage, t.gtid = false, false, txnNone, ""
		if !t.replaying {
			t.safe, t.safeInTxn, t.safeGTID = pos, false, ""
		}
	}
	t.sawRotate = true
	t.next = pos
	return nil
}

// updateState advances the statement and transaction state past ev and
// returns the GTID of the transaction ev belongs to.
func (t *tracker) updateState(ev *replication.BinlogEvent) string {
	typ := ev.Header.EventType
	switch {
	case typ == replication.TABLE_MAP_EVENT:
		t.pending, t.rowsStmt = true, true
	case isRowsEvent(typ):
		if re, ok := ev.Event.(*replication.RowsEvent); ok && re.Flags&replication.RowsEventStmtEndFlag != 0 {
			t.pending, t.rowsStmt = false, false
		}
	case typ == replication.INTVAR_EVENT || typ == replication.RAND_EVENT || typ == replication.USER_VAR_EVENT ||
		typ == replication.MARIADB_ANNOTATE_ROWS_EVENT || typ == replication.ROWS_QUERY_EVENT:
		// context for the statement that follows: resume before it, not between
		t.pending = true
	}

	switch e := ev.Event.(type) {
	case *replication.GTIDEvent:
		t.pending, t.rowsStmt = false, false
		t.stage = txnHeader
		t.gtid = mysqlGTIDString(e)
	case *replication.GtidTaggedLogEvent:
		t.pending, t.rowsStmt = false, false
		t.stage = txnHeader
		t.gtid = mysqlTaggedGTIDString(e)
	case *replication.MariadbGTIDEvent:
		t.pending, t.rowsStmt = false, false
		t.gtid = e.GTID.String()
		if e.Flags&replication.BINLOG_MARIADB_FL_STANDALONE != 0 {
			t.stage = txnStandalone
		} else {
			t.stage = txnOpen
		}
	case *replication.QueryEvent:
		t.pending, t.rowsStmt = false, false
		switch queryKind(e.Query) {
		case queryBegin:
			t.stage = txnOpen
		case queryEnd:
			return t.endTxn()
		default:
			if t.stage != txnOpen {
				return t.endTxn() // a DDL or other statement that is its own transaction
			}
		}
	case *replication.XIDEvent:
		t.pending, t.rowsStmt = false, false
		return t.endTxn()
	case *replication.TransactionPayloadEvent:
		t.pending, t.rowsStmt = false, false
		return t.endTxn() // a whole compressed transaction in one event
	}
	return t.gtid
}

func (t *tracker) between() bool { return !t.pending && t.stage == txnNone }

func (t *tracker) endTxn() string {
	g := t.gtid
	t.stage = txnNone
	t.gtid = ""
	return g
}

func mysqlGTIDString(e *replication.GTIDEvent) string {
	if len(e.SID) != 16 || e.GNO == 0 {
		return "" // anonymous
	}
	var b [36 + 1 + 20]byte
	n := 0
	for i, c := range e.SID {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[n] = '-'
			n++
		}
		b[n], b[n+1] = hexDigits[c>>4], hexDigits[c&15]
		n += 2
	}
	b[n] = ':'
	return string(strconv.AppendInt(b[:n+1], e.GNO, 10))
}

// mysqlTaggedGTIDString is "uuid:tag:gno" (MySQL 8.4 tagged GTIDs), or
// mysqlGTIDString's text when there is no tag; "" when anonymous.
func mysqlTaggedGTIDString(e *replication.GtidTaggedLogEvent) string {
	g := mysqlGTIDString(&e.GTIDEvent)
	if tag := e.Tag.String(); tag != "" && g != "" {
		i := strings.IndexByte(g, ':')
		g = g[:i] + ":" + tag + g[i:]
	}
	return g
}

const hexDigits = "0123456789abcdef"

type queryClass uint8

const (
	queryOther queryClass = iota
	queryBegin            // BEGIN, XA START
	queryEnd              // COMMIT, ROLLBACK, XA END/PREPARE/COMMIT/ROLLBACK
)

// queryKind classifies a Query event's text without allocating: it runs
// for every statement of the stream.
func queryKind(q []byte) queryClass {
	q = bytes.TrimSpace(q)
	hasPrefix := func(p string) bool { return len(q) >= len(p) && bytes.EqualFold(q[:len(p)], []byte(p)) }
	switch {
	case len(q) == 5 && hasPrefix("BEGIN"), hasPrefix("XA START"), hasPrefix("XA BEGIN"):
		return queryBegin
	case len(q) == 6 && hasPrefix("COMMIT"), len(q) == 8 && hasPrefix("ROLLBACK"),
		hasPrefix("XA END"), hasPrefix("XA COMMIT"), hasPrefix("XA ROLLBACK"), hasPrefix("XA PREPARE"):
		return queryEnd
	}
	return queryOther
}
