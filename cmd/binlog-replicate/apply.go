package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream"
)

// applier is the listener. It inserts the snapshot's rows, applies the
// row changes of the replicated tables by primary key, and commits them
// with the checkpoint (the last handled event's Resume, which records the
// snapshot's progress too) in one target transaction: a snapshot chunk's
// rows per transaction, committed at the chunk's last row; row changes
// after at least batch of them, at a source commit; and, rows or not, once
// the last commit is interval old, so the checkpoint keeps up with traffic
// the tables filter out.
type applier struct {
	tgt      *target
	tables   map[string]*table
	pats     binlogstream.TablePatterns
	batch    int
	interval time.Duration
	now      func() time.Time
	// snapshotDone is called after a snapshot row's commit and reports
	// whether every table is read (for the log line).
	snapshotDone func() bool

	open       bool // a target transaction is open
	rows       int  // row changes in it
	inSrcTxn   bool // between a source transaction's start and its commit
	resume     binlogstream.ResumePosition
	dirty      bool // resume is past the committed checkpoint
	lastCommit time.Time

	// reads are snapshot rows of readsOf not yet sent: consecutive rows of
	// one table go out as one multi-row INSERT.
	readsOf *table
	reads   []any
	nReads  int
	readsAt string

	applied, snapRows, commits uint64
	checked                    map[*binlogstream.Table]bool
	loggedDone                 bool
	log                        logrus.FieldLogger
	// gate, with --verify, stops the applier between two source
	// transactions for the verifier.
	gate *gate
}

// listen handles ev; with --verify, between the gate's enter and leave.
func (a *applier) listen(ctx context.Context, ev binlogstream.Event) error {
	if a.gate == nil {
		return a.handle(ev)
	}
	if err := a.gate.enter(ctx, ev.Start, ev.End); err != nil {
		return err
	}
	err := a.handle(ev)
	a.gate.leave(ev.End, !a.inSrcTxn)
	return err
}

func (a *applier) handle(ev binlogstream.Event) error {
	if sr, ok := ev.Event.(*binlogstream.SnapshotRead); ok {
		return a.read(&ev, sr)
	}
	if err := a.flushReads(); err != nil {
		return err
	}
	switch e := ev.Event.(type) {
	case *replication.RowsEvent:
		name := string(e.Table.Schema) + "." + string(e.Table.Table)
		if t := a.tables[name]; t != nil {
			if err := a.apply(&ev, e, t); err != nil {
				return err
			}
		}
	case *replication.QueryEvent:
		q := string(e.Query)
		switch {
		case strings.EqualFold(q, "BEGIN"):
			a.inSrcTxn = true
		default:
			a.inSrcTxn = false // COMMIT, or a statement outside a transaction
			if t, ok := ddlTable(string(e.Schema), q, a.replicated); ok {
				what := "replicated table " + t
				if a.tables[t] == nil {
					what = t + ", which matches --tables but is not in the snapshot,"
				}
				return fmt.Errorf("DDL on %s at %s (gtid %q): %q: binlog-replicate does not apply DDL; "+
					"apply it to the target yourself and start again under a new --name", what, ev.Start, ev.GTID, truncate(ev.MaskedQuery(), 200))
			}
		}
	case *replication.MariadbGTIDEvent:
		a.inSrcTxn = !e.IsStandalone()
	case *replication.GTIDEvent:
		a.inSrcTxn = true
	case *replication.XIDEvent:
		a.inSrcTxn = false
	case *binlogstream.Progress:
		a.resume, a.dirty = ev.Resume, true
		// Nothing of ours pending: the checkpoint may move even inside a
		// source transaction (a long one that touches other tables).
		if a.rows == 0 || !a.inSrcTxn {
			return a.commitIfDue(e.Idle)
		}
		return nil
	}
	a.resume, a.dirty = ev.Resume, true
	if a.inSrcTxn {
		return nil
	}
	return a.commitIfDue(false)
}

// read takes one row of the snapshot: it is inserted (the library delivers
// each key's read before any change of it, once), and the chunk's last row
// commits the chunk with its token.
func (a *applier) read(ev *binlogstream.Event, sr *binlogstream.SnapshotRead) error {
	t := a.tables[ev.Table.Schema+"."+ev.Table.Name]
	if t != nil {
		if a.readsOf != t {
			if err := a.flushReads(); err != nil {
				return err
			}
		}
		at, err := a.start(ev, t)
		if err != nil {
			return err
		}
		a.readsOf, a.readsAt = t, at
		if a.reads, err = t.pick(ev.RowValues(0), t.write, a.reads); err != nil {
			return err
		}
		a.nReads++
		a.snapRows++
		if a.nReads*len(t.write) >= maxPlaceholders-len(t.write) {
			if err := a.flushReads(); err != nil {
				return err
			}
		}
	}
	a.resume, a.dirty = ev.Resume, true
	if !sr.ChunkEnd || a.inSrcTxn {
		return nil // a chunk's rows come back to back: commit at its end
	}
	if err := a.commit(); err != nil {
		return err
	}
	if !a.loggedDone && a.snapshotDone != nil && a.snapshotDone() {
		a.loggedDone = true
		a.log.WithField("rows", a.snapRows).Info("snapshot complete")
	}
	return nil
}

// maxPlaceholders bounds one statement's parameters (the protocol's limit
// is 65535).
const maxPlaceholders = 60000

// flushReads inserts the snapshot rows taken since the last flush.
func (a *applier) flushReads() error {
	if a.nReads == 0 {
		return nil
	}
	t, n := a.readsOf, a.nReads
	a.nReads = 0
	_, err := a.tgt.exec(t.insertSQL(n), a.reads...)
	a.reads = a.reads[:0]
	if err != nil {
		if isDuplicateKey(err) {
			err = fmt.Errorf("duplicate key (the target diverged from the source): %w", err)
		}
		return &applyError{op: "snapshot insert into", table: t, at: a.readsAt, err: err}
	}
	return nil
}

// replicated reports whether schema.name is replicated, or would be if it
// existed (a DDL creating it stops the run too: the table list is fixed by
// the snapshot).
func (a *applier) replicated(schema, name string) bool {
	return a.tables[schema+"."+name] != nil || a.pats.Match(schema, name)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func (a *applier) commitIfDue(flush bool) error {
	if !a.dirty {
		return nil
	}
	if a.rows >= a.batch || flush || a.now().Sub(a.lastCommit) >= a.interval {
		return a.commit()
	}
	return nil
}

// commit writes the checkpoint into the open transaction (opening one for
// a checkpoint alone) and commits it.
func (a *applier) commit() error {
	if !a.dirty {
		return nil
	}
	if err := a.flushReads(); err != nil {
		return err
	}
	if err := a.begin(); err != nil {
		return err
	}
	if err := a.tgt.saveToken(a.resume.String()); err != nil {
		return err
	}
	if _, err := a.tgt.conn.Execute("COMMIT"); err != nil {
		return fmt.Errorf("target: COMMIT: %w", err)
	}
	a.open, a.rows, a.dirty, a.lastCommit = false, 0, false, a.now()
	a.commits++
	return nil
}

func (a *applier) begin() error {
	if a.open {
		return nil
	}
	if _, err := a.tgt.conn.Execute("BEGIN"); err != nil {
		return fmt.Errorf("target: BEGIN: %w", err)
	}
	a.open = true
	return nil
}

// start checks ev's table and opens the target transaction for its
// changes; at names ev's position for errors.
func (a *applier) start(ev *binlogstream.Event, t *table) (at string, err error) {
	if err := a.check(ev, t); err != nil {
		return "", err
	}
	if err := a.begin(); err != nil {
		return "", err
	}
	at = ev.End.String()
	if ev.GTID != "" {
		at += " (gtid " + ev.GTID + ")"
	}
	return at, nil
}

// apply applies one rows event's changes of table t.
func (a *applier) apply(ev *binlogstream.Event, re *replication.RowsEvent, t *table) error {
	at, err := a.start(ev, t)
	if err != nil {
		return err
	}
	var args []any
	switch binlogstream.RowKind(ev.Header.EventType) {
	case "insert": // one statement per event (or per 60000 values): a duplicate fails it
		per := max(1, 60000/len(t.write))
		for from := 0; from < len(re.Rows); from += per {
			to := min(from+per, len(re.Rows))
			args = args[:0]
			for i := from; i < to; i++ {
				if args, err = t.pick(ev.RowValues(i), t.write, args); err != nil {
					return err
				}
			}
			if _, err := a.tgt.exec(t.insertSQL(to-from), args...); err != nil {
				if isDuplicateKey(err) {
					err = fmt.Errorf("duplicate key (the target diverged from the source): %w", err)
				}
				return &applyError{op: "insert into", table: t, at: at, err: err}
			}
		}
	case "update":
		for i := 0; i+1 < len(re.Rows); i += 2 {
			if args, err = t.pick(ev.RowValues(i+1), t.write, args[:0]); err != nil {
				return err
			}
			if args, err = t.pick(ev.RowValues(i), t.key, args); err != nil {
				return err
			}
			if err := a.one(t.updateSQL(), args, "update", t, at); err != nil {
				return err
			}
		}
	case "delete":
		for i := range re.Rows {
			if args, err = t.pick(ev.RowValues(i), t.key, args[:0]); err != nil {
				return err
			}
			if err := a.one(t.deleteSQL(), args, "delete from", t, at); err != nil {
				return err
			}
		}
	}
	a.rows += binlogstream.RowChanges(ev.BinlogEvent)
	a.applied += uint64(binlogstream.RowChanges(ev.BinlogEvent))
	return nil
}

// one runs an UPDATE or DELETE that must find exactly one row (the target
// connection counts found rows, not changed ones).
func (a *applier) one(q string, args []any, op string, t *table, at string) error {
	r, err := a.tgt.exec(q, args...)
	if err != nil {
		if isDuplicateKey(err) {
			err = fmt.Errorf("duplicate key (the target diverged from the source): %w", err)
		}
		return &applyError{op: op, table: t, at: at, err: err}
	}
	if r.AffectedRows != 1 {
		return &applyError{op: op, table: t, at: at, err: missingRow(t, args[len(args)-len(t.key):])}
	}
	return nil
}

// hashColumnRE names the hidden column of a MariaDB long unique key, which
// row images end with and information_schema.COLUMNS leaves out.
var hashColumnRE = regexp.MustCompile(`^DB_ROW_HASH_[0-9]+$`)

// check makes sure the event's table is the one the snapshot copied:
// same column names in the same order.
func (a *applier) check(ev *binlogstream.Event, t *table) error {
	if a.checked[ev.Table] {
		return nil
	}
	if !ev.Table.Known() {
		return fmt.Errorf("%s at %s: the columns are unknown (%s)", t, ev.End, ev.Table.Unknown)
	}
	got := ev.Table.ColumnNames()
	for len(got) > len(t.cols) && hashColumnRE.MatchString(got[len(got)-1]) {
		got = got[:len(got)-1] // a long unique key's hidden hash (MariaDB): not written
	}
	if !slices.Equal(got, t.cols) {
		return fmt.Errorf("%s at %s: the binlog's columns %v differ from the snapshot's %v (DDL the stream did not see?)", t, ev.End, got, t.cols)
	}
	a.checked[ev.Table] = true
	return nil
}
