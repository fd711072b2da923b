package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream"
)

// applier is the streaming phase's listener. It applies the row changes
// of the replicated tables by primary key and commits them with the
// checkpoint (the last handled event's Resume) in one target transaction
// per batch: after at least batch row changes, at a source commit; and,
// rows or not, once the last commit is interval old, so the checkpoint
// keeps up with traffic the tables filter out.
type applier struct {
	tgt      *target
	tables   map[string]*table
	pats     binlogstream.TablePatterns
	snaps    map[string]snapTest
	batch    int
	interval time.Duration
	now      func() time.Time

	open       bool // a target transaction is open
	rows       int  // row changes in it
	inSrcTxn   bool // between a source transaction's start and its commit
	resume     binlogstream.ResumePosition
	dirty      bool // resume is past the committed checkpoint
	lastCommit time.Time

	applied, commits uint64
	checked          map[*binlogstream.Table]bool
	flavor           string
	last             place // the last rows event's, to parse a GTID once per transaction
}

// place is where an event sits, for the snapshot tests: its end, and in
// GTID mode its transaction's GTID as a set.
type place struct {
	end      binlogstream.Position
	gtid     mysql.GTIDSet
	gtidText string
}

// placeOf returns ev's place; a GTID that does not parse is an error,
// never taken as covered.
func (a *applier) placeOf(ev *binlogstream.Event) (place, error) {
	p := place{end: ev.End}
	if ev.GTID == "" {
		return p, nil
	}
	if ev.GTID == a.last.gtidText {
		p.gtid, p.gtidText = a.last.gtid, a.last.gtidText
		return p, nil
	}
	g, err := mysql.ParseGTIDSet(a.flavor, ev.GTID)
	if err != nil {
		return p, fmt.Errorf("the GTID %q of the event at %s: %w", ev.GTID, ev.End, err)
	}
	p.gtid, p.gtidText = g, ev.GTID
	a.last = p
	return p, nil
}

// snapTest says whether a change of a table at an event's position is
// already in the table's snapshot: file mode by position, GTID mode by the
// snapshot's GTID set. segs are the key ranges copied as of older
// positions (segments.go), pos and gtid the newest.
type snapTest struct {
	pos  binlogstream.Position
	gtid mysql.GTIDSet
	segs []segTest
}

type segTest struct {
	upto []string
	snapTest
}

// coversKey is covers for the row with integer key k.
func (s snapTest) coversKey(p place, k []string) bool {
	for _, seg := range s.segs {
		if compareKeys(k, seg.upto) <= 0 {
			return seg.covers(p)
		}
	}
	return s.covers(p)
}

// covers reports whether the snapshot holds the change at p.
func (s snapTest) covers(p place) bool {
	if s.gtid != nil && p.gtid != nil {
		return s.gtid.Contain(p.gtid)
	}
	return p.end.Compare(s.pos) <= 0
}

func newSnapTests(snaps map[string]snapState, flavor string, gtidMode bool) (map[string]snapTest, error) {
	out := map[string]snapTest{}
	one := func(name string, pos binlogstream.Position, gtid string) (snapTest, error) {
		st := snapTest{pos: pos}
		if gtidMode {
			set, err := mysql.ParseGTIDSet(flavor, gtid)
			if err != nil {
				return st, fmt.Errorf("snapshot state of %s: GTID set %q: %w", name, gtid, err)
			}
			st.gtid = set
		}
		return st, nil
	}
	for name, s := range snaps {
		st, err := one(name, s.pos, s.gtid)
		if err != nil {
			return nil, err
		}
		for _, seg := range s.segs {
			t, err := one(name, binlogstream.Position{File: seg.File, Offset: seg.Pos}, seg.GTID)
			if err != nil {
				return nil, err
			}
			st.segs = append(st.segs, segTest{upto: seg.Upto, snapTest: t})
		}
		out[name] = st
	}
	return out, nil
}

func (a *applier) listen(_ context.Context, ev binlogstream.Event) error {
	switch e := ev.Event.(type) {
	case *replication.RowsEvent:
		name := string(e.Table.Schema) + "." + string(e.Table.Table)
		if t := a.tables[name]; t != nil {
			p, err := a.placeOf(&ev)
			if err != nil {
				return err
			}
			switch st := a.snaps[name]; {
			case !st.covers(p): // after the newest snapshot: every row
				err = a.apply(&ev, e, t)
			case len(st.segs) > 0: // rows of older key ranges may need it
				err = a.applyByKey(&ev, p, e, t, st)
			}
			if err != nil {
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

// applyByKey applies the changes of an event that the table's newest
// snapshot holds to the rows whose key range was copied at an older
// position that does not hold it. An update that moves a row between two
// such ranges is a delete from one and an insert into the other, each
// where its range needs it.
func (a *applier) applyByKey(ev *binlogstream.Event, p place, re *replication.RowsEvent, t *table, st snapTest) error {
	at, err := a.start(ev, t)
	if err != nil {
		return err
	}
	needs := func(row []any) (bool, error) {
		kv, err := t.pick(row, t.key, nil)
		if err != nil {
			return false, err
		}
		k, err := intKey(kv)
		if err != nil {
			return false, fmt.Errorf("%s at %s: %w", t, at, err)
		}
		return !st.coversKey(p, k), nil
	}
	insert := func(row []any) error {
		args, err := t.pick(row, t.write, nil)
		if err != nil {
			return err
		}
		if _, err := a.tgt.exec(t.insertSQL(1), args...); err != nil {
			if isDuplicateKey(err) {
				err = fmt.Errorf("duplicate key (the target diverged from the source): %w", err)
			}
			return &applyError{op: "insert into", table: t, at: at, err: err}
		}
		return nil
	}
	del := func(row []any) error {
		args, err := t.pick(row, t.key, nil)
		if err != nil {
			return err
		}
		return a.one(t.deleteSQL(), args, "delete from", t, at)
	}
	n := 0
	kind := binlogstream.RowKind(ev.Header.EventType)
	per := 1
	if kind == "update" {
		per = 2
	}
	for i := 0; i+per <= len(re.Rows); i += per {
		row := ev.RowValues(i)
		need, err := needs(row)
		if err != nil {
			return err
		}
		if kind == "update" {
			after := ev.RowValues(i + 1)
			needAfter, err := needs(after)
			if err != nil {
				return err
			}
			switch {
			case need && needAfter:
				var args []any
				if args, err = t.pick(after, t.write, nil); err == nil {
					if args, err = t.pick(row, t.key, args); err == nil {
						err = a.one(t.updateSQL(), args, "update", t, at)
					}
				}
			case need:
				err = del(row)
			case needAfter:
				err = insert(after)
			default:
				continue
			}
			if err != nil {
				return err
			}
			n++
			continue
		}
		if !need {
			continue
		}
		if kind == "insert" {
			err = insert(row)
		} else {
			err = del(row)
		}
		if err != nil {
			return err
		}
		n++
	}
	a.rows += n
	a.applied += uint64(n)
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
		return &applyError{op: op, table: t, at: at, err: errMissingRow}
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
