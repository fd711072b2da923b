package clikit

import (
	"context"
	"strings"
	"time"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/sqlconn"
)

// RowEstimator estimates the rows of tables (schema.table); a table it
// does not know is left out of the map.
type RowEstimator func(ctx context.Context, tables []string) (map[string]uint64, error)

// EstimateRows asks server d for its estimate of each table's rows:
// information_schema.TABLES.TABLE_ROWS, which InnoDB takes from sampled
// statistics, so it can be off either way. A table the server does not
// list is left out.
func EstimateRows(d binlogstream.DSN) RowEstimator {
	return func(ctx context.Context, tables []string) (map[string]uint64, error) {
		c, err := d.Connect(ctx)
		if err != nil {
			return nil, err
		}
		defer func() { _ = sqlconn.Close(c) }()
		args := make([]any, len(tables))
		for i, t := range tables {
			args[i] = t
		}
		r, err := c.Execute("SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME), IFNULL(TABLE_ROWS, 0) FROM information_schema.TABLES "+
			"WHERE CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) IN (?"+strings.Repeat(", ?", len(tables)-1)+")", args...)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		rows := make(map[string]uint64, r.RowNumber())
		for i := range r.RowNumber() {
			id, _ := r.GetString(i, 0)
			n, _ := r.GetUint(i, 1)
			rows[id] = n
		}
		return rows, nil
	}
}

// SnapshotProgress follows a snapshot from progress line to progress
// line: the tables it has had to read this run (tables it adds later
// included) and the sum of their estimated rows.
type SnapshotProgress struct {
	seen     map[string]bool
	estimate uint64
	failed   bool // an estimate could not be had: no rows left shown
}

// See adds the tables of pending (SnapshotStats.Pending) not seen before,
// with their estimate; a nil estimate, or one that fails, leaves the rows
// left unknown.
func (p *SnapshotProgress) See(ctx context.Context, pending []string, estimate RowEstimator) {
	var added []string
	for _, id := range pending {
		if !p.seen[id] {
			added = append(added, id)
		}
	}
	if len(added) == 0 {
		return
	}
	if p.seen == nil {
		p.seen = map[string]bool{}
	}
	for _, id := range added {
		p.seen[id] = true
	}
	if estimate == nil {
		p.failed = true
		return
	}
	ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rows, err := estimate(ectx, added)
	if err != nil {
		p.failed = true
		return
	}
	for _, id := range added {
		p.estimate += rows[id]
	}
}

// Tables is how many tables the snapshot has had to read so far.
func (p *SnapshotProgress) Tables() int { return len(p.seen) }

// Estimate is the sum of those tables' estimated rows, and whether every
// one of them was estimated.
func (p *SnapshotProgress) Estimate() (uint64, bool) { return p.estimate, len(p.seen) > 0 && !p.failed }

// RowsLeft is the snapshot's rows left after st.Rows reads: 0 once no
// table is left, else the estimate less the reads while it is above
// them. ok is false when it is not known: no estimate, or reads past
// the estimate with a table still to read.
func (p *SnapshotProgress) RowsLeft(st binlogstream.SnapshotStats) (left uint64, ok bool) {
	est, known := p.Estimate()
	switch {
	case !known:
		return 0, false
	case st.Tables == 0:
		return 0, true
	case est > st.Rows:
		return est - st.Rows, true
	}
	return 0, false
}
