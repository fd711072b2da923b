package binlogstream

import (
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"
)

// GTID mode. A GTID dump starts at a transaction boundary: the server
// sends every transaction not in the requested set, so the in-flight
// transaction comes again from its GTID event, possibly from another
// server that split its rows into different events. Progress inside it is
// therefore counted in units every server writes alike (Table_maps, row
// changes, statements), never in events or bytes, and a fingerprint of
// what was delivered proves the replayed transaction is the same one.

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// fingerprintAdd folds one unit into a fingerprint: FNV-1a 64 over the
// previous value, the unit's kind and its text, without allocating.
func fingerprintAdd(fp uint64, kind byte, text string) uint64 {
	return fingerprintMore(fingerprintStart(fp, kind), text)
}

// fingerprintStart and fingerprintMore are fingerprintAdd in parts: its
// text may come in pieces.
func fingerprintStart(fp uint64, kind byte) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < 8; i++ {
		h = (h ^ uint64(byte(fp>>(8*i)))) * fnvPrime64
	}
	return (h ^ uint64(kind)) * fnvPrime64
}

func fingerprintMore[T string | []byte](h uint64, text T) uint64 {
	for i := 0; i < len(text); i++ {
		h = (h ^ uint64(text[i])) * fnvPrime64
	}
	return h
}

// rowKind is 'i', 'u' or 'd' for a rows event type, the fingerprint's
// byte for a row change (persisted in tokens: it must not change).
func rowKind(t replication.EventType) byte {
	switch rowKinds[t] {
	case kindInsert:
		return 'i'
	case kindDelete:
		return 'd'
	}
	return 'u'
}

// addRows folds n row changes of a rows event into a fingerprint: each
// is its kind and its table's "schema.table" ("" without a Table_map).
func addRows(fp uint64, ev *replication.BinlogEvent, n int) uint64 {
	kind := rowKind(ev.Header.EventType)
	re, ok := ev.Event.(*replication.RowsEvent)
	for i := 0; i < n; i++ {
		h := fingerprintStart(fp, kind)
		if ok && re.Table != nil {
			h = fingerprintMore(h, re.Table.Schema)
			h = fingerprintMore(h, ".")
			h = fingerprintMore(h, re.Table.Table)
		}
		fp = h
	}
	return fp
}

type gtidTracker struct {
	from     ResumePosition
	executed mysql.GTIDSet // transactions delivered completely

	next      Position
	sawRotate bool

	stage     txnStage
	gtid      string
	progress  TxnProgress // of the current transaction, replayed part included
	replaying bool        // dropping the delivered prefix of from.GTID
	skipping  bool        // dropping a whole transaction already in executed
	lastEnded string      // GTID of the transaction the last event ended
	// the Transaction_payload whose inner events are being observed
	payloadStart, payloadEnd Position
	// executed.String(), cached: it changes once per transaction
	executedStr   string
	executedDirty bool
	last          ResumePosition
	// cur is the current transaction's GTID as its event carried it, so
	// that the executed set is checked and updated without parsing text.
	cur parsedGTID
}

// parsedGTID is a GTID from its event: kind gtidMySQL (sid, gno; untagged)
// or gtidMariaDB (maria); gtidText means only its text (str) is known.
type parsedGTID struct {
	kind  uint8
	str   string
	sid   uuid.UUID
	gno   int64
	maria mysql.MariadbGTID
}

const (
	gtidText uint8 = iota
	gtidMySQL
	gtidMariaDB
)

func (t *gtidTracker) between() bool { return t.stage == txnNone }

func newGTIDTracker(from ResumePosition) (*gtidTracker, error) {
	set, err := mysql.ParseGTIDSet(from.Flavor, from.Executed)
	if err != nil {
		return nil, configError("GTID set %q: %v", from.Executed, err)
	}
	return &gtidTracker{from: from, executed: set, last: from}, nil
}

func (t *gtidTracker) token() ResumePosition {
	if t.executedStr == "" || t.executedDirty {
		t.executedStr, t.executedDirty = t.executed.String(), false
	}
	r := ResumePosition{Flavor: t.from.Flavor, Executed: t.executedStr}
	if t.stage != txnNone {
		r.GTID, r.Progress = t.gtid, t.progress
	}
	return r
}

func (t *gtidTracker) observe(ev *replication.BinlogEvent, d *decision) error {
	d.reset()
	h := ev.Header
	if h == nil {
		return positionError("event without a header")
	}
	if h.EventType == replication.ROTATE_EVENT {
		if re, ok := ev.Event.(*replication.RotateEvent); ok {
			t.next, t.sawRotate = Position{File: string(re.NextLogName), Offset: re.Position}, true
		}
		return nil
	}
	if artifact(h, d) {
		return nil
	}
	// Positions are informational in GTID mode (they differ per server):
	// follow them leniently, as the file-mode tracker does.
	d.start, d.end = eventSpan(t.next, h)
	t.next = d.end
	if pe, ok := ev.Event.(*replication.TransactionPayloadEvent); ok && len(pe.Events) > 0 && t.stage != txnNone {
		// Its inner events are the rest of the transaction: the streamer
		// feeds them one by one to observeInner.
		d.action = actExpand
		t.payloadStart, t.payloadEnd = d.start, d.end
		return nil
	}
	return t.decide(ev, d)
}

// observeInner takes one inner event of the Transaction_payload observe
// answered actExpand for; it shares the payload's position.
func (t *gtidTracker) observeInner(ev *replication.BinlogEvent, d *decision) error {
	d.reset()
	d.start, d.end = t.payloadStart, t.payloadEnd
	return t.decide(ev, d)
}

func (t *gtidTracker) decide(ev *replication.BinlogEvent, d *decision) error {
	d.before = t.last
	act, skipRows, err := t.step(ev)
	if err != nil {
		return err
	}
	d.action, d.skipRows, d.gtid = act, skipRows, t.gtid
	if act == actIgnore {
		return nil
	}
	if t.stage == txnNone { // the event ended its transaction
		d.gtid = t.lastEnded
	}
	t.last = t.token()
	d.after = t.last
	return nil
}

// step advances the transaction state past ev and decides.
func (t *gtidTracker) step(ev *replication.BinlogEvent) (action, uint32, error) {
	begin := func(g string) (action, uint32, error) {
		if t.stage != txnNone && t.stage != txnHeader {
			return 0, 0, positionError("GTID %s starts inside transaction %s", g, t.gtid)
		}
		t.stage, t.gtid, t.progress = txnHeader, g, TxnProgress{Fingerprint: fnvOffset64}
		t.skipping, t.replaying = false, false
		if t.from.GTID != "" {
			if g != t.from.GTID {
				return 0, 0, mismatchError("the dump resumed with transaction %s; the resume position is inside %s", g, t.from.GTID)
			}
			t.replaying = true
			t.from.GTID = "" // matched: later transactions are new
			return actDrop, 0, nil
		}
		if in, err := t.contains(g); err != nil {
			return 0, 0, err
		} else if in {
			t.skipping = true // sent again though delivered: never twice
			return actDrop, 0, nil
		}
		return actDeliver, 0, nil
	}
	const anonymous = "anonymous transaction in a GTID-mode stream (the server has gtid_mode OFF?)"
	switch e := ev.Event.(type) {
	case *replication.GTIDEvent:
		g := mysqlGTIDString(e)
		if g == "" {
			return 0, 0, positionError(anonymous)
		}
		t.cur = parsedGTID{kind: gtidMySQL, str: g, gno: e.GNO}
		copy(t.cur.sid[:], e.SID)
		return begin(g)
	case *replication.GtidTaggedLogEvent:
		g := mysqlTaggedGTIDString(e)
		if g == "" {
			return 0, 0, positionError(anonymous)
		}
		t.cur = parsedGTID{kind: gtidText, str: g}
		return begin(g)
	case *replication.MariadbGTIDEvent:
		g := e.GTID.String()
		t.cur = parsedGTID{kind: gtidMariaDB, str: g, maria: e.GTID}
		act, n, err := begin(g)
		if e.Flags&replication.BINLOG_MARIADB_FL_STANDALONE != 0 {
			t.stage = txnStandalone
		} else {
			t.stage = txnOpen
		}
		return act, n, err
	}
	if t.stage == txnNone {
		// File structure outside transactions (Format_description,
		// Previous_gtids, Gtid_list, Binlog_checkpoint, Stop): per server,
		// nothing a GTID position can deduplicate, so not delivered.
		return actIgnore, 0, nil
	}

	var p TxnProgress // the units this event carries
	ends := false
	switch e := ev.Event.(type) {
	case *replication.QueryEvent:
		switch queryKind(e.Query) {
		case queryBegin:
			t.stage = txnOpen
			p.Other = 1 // context, like Annotate_rows
		case queryEnd:
			ends = true
		default:
			p.Statements = 1
			if t.stage != txnOpen {
				ends = true // DDL: its own transaction
			}
		}
	case *replication.XIDEvent:
		ends = true
	case *replication.TransactionPayloadEvent:
		p.Statements = 1 // a whole compressed transaction: one unit
		ends = true
	case *replication.TableMapEvent:
		p.TableMaps = 1
	case *replication.RowsEvent:
		p.Rows = uint32(RowChanges(ev))
	default:
		p.Other = 1
	}
	if t.skipping {
		if ends {
			t.endTxn()
		}
		return actDrop, 0, nil
	}
	act, skip, err := t.account(ev, p)
	if err != nil {
		return 0, 0, err
	}
	if ends {
		if err := t.addExecuted(t.gtid); err != nil {
			return 0, 0, positionError("add %s to the executed set: %v", t.gtid, err)
		}
		t.executedDirty = true
		t.endTxn()
	}
	return act, skip, nil
}

// account adds an event's units to the transaction's progress and decides,
// while replaying, how much of it was delivered before. Each kind of unit
// is a prefix of the transaction: a unit was delivered if its index within
// its kind is below the delivered count.
func (t *gtidTracker) account(ev *replication.BinlogEvent, p TxnProgress) (action, uint32, error) {
	want := t.from.Progress
	prev := t.progress
	t.progress.TableMaps += p.TableMaps
	t.progress.Statements += p.Statements
	t.progress.Other += p.Other
	t.progress.Rows += p.Rows
	if !t.replaying {
		t.progress.Fingerprint = t.fold(t.progress.Fingerprint, ev, p.Statements > 0, int(p.Rows))
		return actDeliver, 0, nil
	}
	var done uint32 // row changes of this event delivered before
	switch {
	case p.Rows == 0 && isRowsEvent(ev.Header.EventType):
		// A rows event whose table is filtered out (no rows decoded): it
		// carries no unit and is never delivered, so it proves nothing.
		return actDrop, 0, nil
	case p.Other > 0:
		// Context (BEGIN, Annotate_rows, ...): its own prefix. It proves
		// nothing; the first data unit after the prefix does.
		if t.progress.Other <= want.Other {
			return actDrop, 0, nil
		}
		return actDeliver, 0, nil
	case p.TableMaps > 0 && t.progress.TableMaps <= want.TableMaps,
		p.Statements > 0 && t.progress.Statements <= want.Statements:
		t.progress.Fingerprint = t.fold(t.progress.Fingerprint, ev, p.Statements > 0, 0)
		return actDrop, 0, nil
	case p.Rows > 0 && prev.Rows < want.Rows:
		done = min(want.Rows-prev.Rows, p.Rows)
		t.progress.Fingerprint = t.fold(t.progress.Fingerprint, ev, false, int(done))
		if done == p.Rows {
			return actDrop, 0, nil
		}
	}
	// The first unit not delivered before: the delivered prefix is behind
	// us, complete. Prove it was this transaction before delivering more.
	counted := TxnProgress{TableMaps: prev.TableMaps, Rows: prev.Rows + done, Statements: prev.Statements}
	if !counted.reached(want) || t.progress.Fingerprint != want.Fingerprint {
		return 0, 0, mismatchError("the replayed transaction %s differs from the one delivered before: "+
			"%d table maps, %d row changes and %d statements replayed before new data, %d, %d and %d delivered (fingerprint %x, want %x)",
			t.gtid, counted.TableMaps, counted.Rows, counted.Statements, want.TableMaps, want.Rows, want.Statements,
			t.progress.Fingerprint, want.Fingerprint)
	}
	t.replaying = false
	t.progress.Fingerprint = t.fold(t.progress.Fingerprint, ev, p.Statements > 0, int(p.Rows-done))
	return actDeliver, done, nil
}

// fold adds an event's statement (if stmt) and rows of its row changes to
// a fingerprint.
func (t *gtidTracker) fold(fp uint64, ev *replication.BinlogEvent, stmt bool, rows int) uint64 {
	if stmt {
		if q, ok := ev.Event.(*replication.QueryEvent); ok {
			fp = fingerprintAdd(fp, 'q', string(q.Query))
		} else {
			fp = fingerprintAdd(fp, 'p', "")
		}
	}
	if rows > 0 {
		fp = addRows(fp, ev, rows)
	}
	return fp
}

func (t *gtidTracker) endTxn() {
	t.lastEnded = t.gtid
	t.stage, t.gtid, t.progress, t.skipping = txnNone, "", TxnProgress{}, false
}

// contains says whether g is in the executed set.
func (t *gtidTracker) contains(g string) (bool, error) {
	if t.cur.str == g {
		switch set := t.executed.(type) {
		case *mysql.MysqlGTIDSet:
			if t.cur.kind == gtidMySQL {
				for _, iv := range (*set)[t.cur.sid][mysql.Tag{}] {
					if iv.Start <= t.cur.gno && t.cur.gno < iv.Stop {
						return true, nil
					}
				}
				return false, nil
			}
		case *mysql.MariadbGTIDSet:
			if t.cur.kind == gtidMariaDB {
				have, ok := set.Sets[t.cur.maria.DomainID]
				return ok && have.Contain(&t.cur.maria), nil
			}
		}
	}
	one, err := mysql.ParseGTIDSet(t.from.Flavor, g)
	if err != nil {
		return false, positionError("GTID %q: %v", g, err)
	}
	return t.executed.Contain(one), nil
}

// addExecuted adds g to the executed set: in place when it extends the
// set's last interval for its source (the common case: transactions in
// order), else as go-mysql's Update does.
func (t *gtidTracker) addExecuted(g string) error {
	if t.cur.str == g {
		switch set := t.executed.(type) {
		case *mysql.MysqlGTIDSet:
			if t.cur.kind == gtidMySQL {
				ivs := (*set)[t.cur.sid][mysql.Tag{}]
				if n := len(ivs); n > 0 && ivs[n-1].Stop == t.cur.gno {
					ivs[n-1].Stop++ // the slice shares its array with the map's
					return nil
				}
				set.AddGTID(t.cur.sid, t.cur.gno)
				return nil
			}
		case *mysql.MariadbGTIDSet:
			if t.cur.kind == gtidMariaDB {
				return set.AddSet(&t.cur.maria)
			}
		}
	}
	return t.executed.Update(g)
}
