package main

import (
	"encoding/json"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlogstream/binlogstream"
)

// Targets written by earlier versions of binlog-replicate hold the
// snapshot in STATE_DB.snapshot: each table's rows as of a binlog position
// of its own (and key ranges as of older ones, "segments"), which the
// stream compared every change with. This version keeps the snapshot in
// the checkpoint token instead. Such a state continues here only when the
// checkpoint is past every one of those positions: then no change is left
// for a position to skip and the token alone is exact. Anything else is
// refused with what to do.

// legacyTable is one row of an earlier version's STATE_DB.snapshot.
type legacyTable struct {
	name     string
	pos      binlogstream.Position
	gtid     string
	done     bool
	segments string // JSON: [{"file":F,"pos":P,"gtid":G,...}]
}

// legacySegment is the part of an earlier version's key range that says
// which position its rows are as of.
type legacySegment struct {
	File string `json:"file"`
	Pos  uint64 `json:"pos"`
	GTID string `json:"gtid"`
}

// adoptLegacy checks that the checkpoint token covers every position of
// the earlier version's snapshot state and returns the replicated tables.
func adoptLegacy(token string, rows []legacyTable) ([]string, error) {
	refuse := func(why string) error {
		return fmt.Errorf("target: the state was written by an earlier binlog-replicate, whose snapshot kept a binlog position "+
			"per table; %s: finish it with that version (--stop-at-current) or replicate again under a new --name", why)
	}
	if token == "" {
		return nil, refuse("its snapshot is not finished")
	}
	r, err := binlogstream.ParseResumePosition(token)
	if err != nil {
		return nil, fmt.Errorf("target: the checkpoint: %w", err)
	}
	var have mysql.GTIDSet
	if r.IsGTID() {
		if have, err = mysql.ParseGTIDSet(r.Flavor, r.Executed); err != nil {
			return nil, fmt.Errorf("target: the checkpoint's GTID set: %w", err)
		}
	}
	covered := func(p binlogstream.Position, gtid string) (bool, error) {
		if have == nil {
			return p.Compare(r.Streamed) <= 0, nil
		}
		set, err := mysql.ParseGTIDSet(r.Flavor, gtid)
		if err != nil {
			return false, fmt.Errorf("target: a snapshot GTID set %q: %w", gtid, err)
		}
		return have.Contain(set), nil
	}
	var names []string
	for _, t := range rows {
		if !t.done {
			return nil, refuse(fmt.Sprintf("its snapshot of %s is not finished", t.name))
		}
		var segs []legacySegment
		if t.segments != "" {
			if err := json.Unmarshal([]byte(t.segments), &segs); err != nil {
				return nil, fmt.Errorf("target: the snapshot state of %s: %w", t.name, err)
			}
		}
		segs = append(segs, legacySegment{File: t.pos.File, Pos: t.pos.Offset, GTID: t.gtid})
		for _, s := range segs {
			ok, err := covered(binlogstream.Position{File: s.File, Offset: s.Pos}, s.GTID)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, refuse(fmt.Sprintf("the checkpoint has not yet passed the position %s:%d of %s's snapshot", s.File, s.Pos, t.name))
			}
		}
		names = append(names, t.name)
	}
	return names, nil
}
