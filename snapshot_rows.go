package binlogstream

// The snapshot's part in a rows event's delivery (beside.beforeDelivery):
// the changes of keys not yet read are held back, those of keys whose
// chunk is in flight folded into it, and the rest delivered as the event
// was, split where it must be.

import (
	"bytes"
	"context"
	"strings"

	"github.com/binlogstream/binlogstream/internal/ddl"
	"github.com/binlogstream/binlogstream/internal/snapshot"
	"github.com/go-mysql-org/go-mysql/replication"
)

// rowsVerdicts classifies the row changes of a rows event of a table
// under snapshot; nil when the event is delivered as it is.
func (d *snapDriver) rowsVerdicts(ev *Event) ([]snapshot.Verdict, error) {
	re, ok := ev.Event.(*replication.RowsEvent)
	if !ok || re.Table == nil {
		return nil, nil
	}
	id := string(re.Table.Schema) + "." + string(re.Table.Table)
	t := d.meta[id]
	if t == nil {
		return nil, nil
	}
	if _, active := d.state.Active(id); !active && !d.state.Pending(id) {
		return nil, nil
	}
	kind := rowKinds[ev.Header.EventType]
	per := rowsPerChange(ev.Header.EventType)
	n := len(re.Rows) / per
	keys := make([]snapshot.Key, len(re.Rows))
	ptrs := make([]*snapshot.Key, 0, len(re.Rows))
	for i, row := range re.Rows {
		k, err := t.keyOf(t.table, row)
		if err != nil {
			return nil, err
		}
		keys[i] = k
		ptrs = append(ptrs, &keys[i])
	}
	if t.needsServer() {
		if err := d.cmp.keyCmp(t, ptrs); err != nil {
			return nil, err
		}
	}
	out := make([]snapshot.Verdict, n)
	changed := false
	for i := range n {
		c := snapshot.Change{Pos: toPos(ev.End)}
		switch kind {
		case kindInsert:
			c.Kind, c.After = snapshot.Insert, snapshot.Row{Key: keys[i], Data: rowData(cloneRow(re.Rows[i]))}
		case kindDelete:
			c.Kind, c.Before = snapshot.Delete, snapshot.Row{Key: keys[i], Data: rowData(cloneRow(re.Rows[i]))}
		default:
			c.Kind = snapshot.Update
			c.Before = snapshot.Row{Key: keys[2*i], Data: rowData(cloneRow(re.Rows[2*i]))}
			c.After = snapshot.Row{Key: keys[2*i+1], Data: rowData(cloneRow(re.Rows[2*i+1]))}
		}
		out[i] = d.state.Classify(id, c)
		changed = changed || out[i] != snapshot.Deliver
	}
	if !changed {
		return nil, nil
	}
	return out, nil
}

// rowData is a row as a snapshot.Row's Data: a pointer to its values, so
// that a chunk's rows are put there with no allocation (chunkOf).
func rowData(row []any) *[]any { return &row }

// cloneRow copies a row's values off the event's memory, which the source
// may recycle: held changes outlive their event.
func cloneRow(row []any) []any {
	out := make([]any, len(row))
	for i, v := range row {
		switch x := v.(type) {
		case string:
			out[i] = strings.Clone(x)
		case []byte:
			out[i] = bytes.Clone(x)
		default:
			out[i] = v
		}
	}
	return out
}

// splitRows makes the events a rows event becomes under verdicts: each
// run of row changes delivered alike is one event (updates that moved a
// key across the boundary become inserts or deletes); held-back changes
// are left out. Each piece's positions are the original's after its rows.
func splitRows(ev *Event, verdicts []snapshot.Verdict) []Event {
	re := ev.Event.(*replication.RowsEvent)
	kind := rowKinds[ev.Header.EventType]
	per := rowsPerChange(ev.Header.EventType)
	effective := func(v snapshot.Verdict) uint8 {
		switch v {
		case snapshot.AsInsert:
			return kindInsert
		case snapshot.AsDelete:
			return kindDelete
		case snapshot.Suppress:
			return kindNone
		}
		return kind
	}
	orig := *ev
	var out []Event
	for i := 0; i < len(verdicts); {
		k := effective(verdicts[i])
		j := i + 1
		for j < len(verdicts) && effective(verdicts[j]) == k {
			j++
		}
		if k != kindNone {
			out = append(out, piece(&orig, re, k, per, i, j))
		}
		i = j
	}
	return out
}

// piece is the event of row changes [i, j) of ev, delivered as kind k.
func piece(ev *Event, re *replication.RowsEvent, k uint8, per, i, j int) Event {
	hdr := *ev.Header
	nre := *re
	nre.Rows, nre.SkippedColumns = make([][]any, 0, (j-i)*per), nil
	switch {
	case k == rowKinds[hdr.EventType]:
		nre.Rows = re.Rows[i*per : j*per]
		if len(re.SkippedColumns) == len(re.Rows) {
			nre.SkippedColumns = re.SkippedColumns[i*per : j*per]
		}
	case k == kindInsert: // the after images of updates
		hdr.EventType = replication.WRITE_ROWS_EVENTv2
		nre.ColumnBitmap1 = re.ColumnBitmap2
		for x := i; x < j; x++ {
			nre.Rows = append(nre.Rows, re.Rows[2*x+1])
		}
	default: // the before images of updates
		hdr.EventType = replication.DELETE_ROWS_EVENTv2
		for x := i; x < j; x++ {
			nre.Rows = append(nre.Rows, re.Rows[2*x])
		}
	}
	p := *ev
	p.BinlogEvent = &replication.BinlogEvent{Header: &hdr, RawData: ev.RawData, Event: &nre}
	p.before, p.Resume = ev.ResumeAfterRows(i), ev.ResumeAfterRows(j)
	p.rowsOf, p.rowsOff = ev, i
	p.SkippedRows, p.fpRows, p.arena = 0, 0, nil
	return p
}

// beforeDelivery stamps the positions of an event about to be delivered
// as dec says, ends the tables a DROP or RENAME in it takes away, and
// delivers a rows event of a table under snapshot as its verdicts say
// (handled); handled false: the streamer delivers ev as it is.
func (d *snapDriver) beforeDelivery(ctx context.Context, listeners []Listener, ev *Event, dec *decision) (handled bool, err error) {
	d.stamp(&dec.before)
	if q, ok := ev.Event.(*replication.QueryEvent); ok && d.state != nil && ddl.IsDDL(q.Query) {
		d.endDropped(q)
	}
	d.stamp(&dec.after)
	ev.before, ev.Resume = dec.before, dec.after
	if d.state == nil {
		d.at = dec.end
		return false, nil
	}
	if d.at.File == "" {
		d.restart(dec.start) // the first event this dump delivers
	}
	handled, err = d.deliverRows(ctx, listeners, ev)
	if err == nil {
		d.at = dec.end
	}
	return handled, err
}

// deliverRows delivers a rows event of a table under snapshot as its
// verdicts say; delivered false: deliver it as it is.
func (d *snapDriver) deliverRows(ctx context.Context, listeners []Listener, ev *Event) (delivered bool, err error) {
	verdicts, err := d.rowsVerdicts(ev)
	if err != nil || verdicts == nil {
		return false, err
	}
	for _, p := range splitRows(ev, verdicts) {
		if err := d.host.emit(ctx, listeners, p, ev.End); err != nil {
			return true, err
		}
		d.host.setResume(p.Resume)
	}
	d.at = ev.End
	dec := decision{end: ev.End, after: ev.Resume}
	d.host.afterDelivery(ev.BinlogEvent, &dec)
	return true, nil
}
