package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream"
)

// resolveTables lists the source's base tables the patterns select, with
// their columns (in row-image order) and primary keys, sorted by name.
func resolveTables(src *client.Conn, pats binlogstream.TablePatterns) ([]*table, error) {
	r, err := src.Execute(`SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, EXTRA, DATA_TYPE FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
		ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION`)
	if err != nil {
		return nil, fmt.Errorf("source: list columns: %w", err)
	}
	byName := map[string]*table{}
	var out []*table
	isInt := map[string]bool{} // schema.table.column of integer type
	for i := range r.RowNumber() {
		schema, _ := r.GetString(i, 0)
		name, _ := r.GetString(i, 1)
		col, _ := r.GetString(i, 2)
		extra, _ := r.GetString(i, 3)
		dataType, _ := r.GetString(i, 4)
		switch strings.ToLower(dataType) {
		case "tinyint", "smallint", "mediumint", "int", "bigint":
			isInt[schema+"."+name+"."+col] = true
		}
		if !pats.Match(schema, name) {
			continue
		}
		t := byName[schema+"."+name]
		if t == nil {
			t = &table{schema: schema, name: name}
			byName[schema+"."+name] = t
			out = append(out, t)
		}
		if !strings.Contains(strings.ToUpper(extra), "GENERATED") {
			t.write = append(t.write, len(t.cols))
		}
		t.cols = append(t.cols, col)
	}
	r, err = src.Execute(`SELECT s.TABLE_SCHEMA, s.TABLE_NAME, s.COLUMN_NAME FROM information_schema.STATISTICS s
		JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = s.TABLE_SCHEMA AND t.TABLE_NAME = s.TABLE_NAME
		WHERE s.INDEX_NAME = 'PRIMARY' AND t.TABLE_TYPE = 'BASE TABLE'
		ORDER BY s.TABLE_SCHEMA, s.TABLE_NAME, s.SEQ_IN_INDEX`)
	if err != nil {
		return nil, fmt.Errorf("source: list primary keys: %w", err)
	}
	for i := range r.RowNumber() {
		schema, _ := r.GetString(i, 0)
		name, _ := r.GetString(i, 1)
		col, _ := r.GetString(i, 2)
		if t := byName[schema+"."+name]; t != nil {
			if len(t.key) == 0 {
				t.intKey = true
			}
			t.intKey = t.intKey && isInt[schema+"."+name+"."+col]
			for c, n := range t.cols {
				if n == col {
					t.key = append(t.key, c)
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("source: no table matches --tables")
	}
	r, err = src.Execute(`SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES
		WHERE TABLE_TYPE NOT IN ('BASE TABLE') AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')`)
	if err != nil {
		return nil, fmt.Errorf("source: list table types: %w", err)
	}
	kind := map[string]string{}
	for i := range r.RowNumber() {
		schema, _ := r.GetString(i, 0)
		name, _ := r.GetString(i, 1)
		typ, _ := r.GetString(i, 2)
		kind[schema+"."+name] = typ
	}
	for _, t := range out {
		switch k := kind[t.schema+"."+t.name]; {
		case k == "SYSTEM VERSIONED":
			// Its binlog holds the history rows the source's versioning
			// writes (an update is also an insert of the old row), which a
			// versioned target would write again.
			return nil, fmt.Errorf("source: table %s is system-versioned (MariaDB): binlog-replicate does not replicate such tables", t)
		case len(t.key) == 0 && k != "":
			return nil, fmt.Errorf("source: %s is a %s, not a base table: binlog-replicate replicates base tables", t, strings.ToLower(k))
		case len(t.key) == 0:
			return nil, fmt.Errorf("source: table %s has no primary key: binlog-replicate applies changes by primary key", t)
		}
	}
	return out, nil
}

// consistentSnapshot starts a read transaction on src and returns the
// binlog position its reads are consistent with, as a file position and
// a GTID set.
//
// MariaDB gives it without blocking writers: START TRANSACTION WITH
// CONSISTENT SNAPSHOT makes the binlog position of the snapshot's last
// commit available as the binlog_snapshot_file/_position status
// variables. MySQL has no such variables: the shortest lock that gives a
// consistent position is FLUSH TABLES WITH READ LOCK around the start of
// the snapshot and SHOW MASTER STATUS (which holds the executed GTID set),
// released as soon as both are read; writers wait for that long only.
func consistentSnapshot(src *client.Conn) (pos binlogstream.Position, gtid string, err error) {
	if _, err := src.Execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		return pos, "", err
	}
	if !strings.Contains(strings.ToLower(src.GetServerVersion()), "mariadb") {
		return mysqlSnapshot(src)
	}
	if _, err := src.Execute("START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
		return pos, "", err
	}
	r, err := src.Execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
	if err != nil {
		return pos, "", err
	}
	for i := range r.RowNumber() {
		name, _ := r.GetString(i, 0)
		val, _ := r.GetString(i, 1)
		switch strings.ToLower(name) {
		case "binlog_snapshot_file":
			pos.File = val
		case "binlog_snapshot_position":
			if _, err := fmt.Sscan(val, &pos.Offset); err != nil {
				return pos, "", fmt.Errorf("binlog_snapshot_position %q: %w", val, err)
			}
		}
	}
	if pos.File == "" {
		return pos, "", fmt.Errorf("the source reports no binlog_snapshot_file: is log_bin on?")
	}
	r, err = src.Execute("SELECT BINLOG_GTID_POS(?, ?)", pos.File, pos.Offset)
	if err != nil {
		return pos, "", err
	}
	gtid, _ = r.GetString(0, 0)
	return pos, gtid, nil
}

func mysqlSnapshot(src *client.Conn) (pos binlogstream.Position, gtid string, err error) {
	if _, err := src.Execute("FLUSH TABLES WITH READ LOCK"); err != nil {
		return pos, "", fmt.Errorf("FLUSH TABLES WITH READ LOCK (needs RELOAD): %w", err)
	}
	defer func() {
		if _, uerr := src.Execute("UNLOCK TABLES"); uerr != nil && err == nil {
			err = uerr
		}
	}()
	if _, err := src.Execute("START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
		return pos, "", err
	}
	r, err := src.Execute("SHOW MASTER STATUS")
	if err != nil { // MySQL 8.4 renamed it
		if r, err = src.Execute("SHOW BINARY LOG STATUS"); err != nil {
			return pos, "", err
		}
	}
	if r.RowNumber() == 0 {
		return pos, "", fmt.Errorf("SHOW MASTER STATUS is empty: is log_bin on?")
	}
	pos.File, _ = r.GetString(0, 0)
	pos.Offset, _ = r.GetUint(0, 1)
	if len(r.Fields) >= 5 {
		gtid, _ = r.GetString(0, 4)
	}
	return pos, gtid, nil
}

// snapshot copies every table not yet done to the target in key-order
// chunks, from one consistent snapshot, and returns the updated state.
//
// A table is consistent with the snapshot position recorded with it, and
// the stream applies a table's changes only after that position. A table
// whose copy was cut by a crash is copied again from the start of a new
// snapshot (its partial rows deleted, in the same transaction that
// records the new position): the rows copied before the crash are as of
// the old position, the rest would be as of the new one, and no single
// position would then say which of the table's changes to apply.
func snapshot(ctx context.Context, log logrus.FieldLogger, srcDSN binlogstream.DSN, tgt *target,
	tables []*table, snaps map[string]snapState, chunk int) error {
	var todo []*table
	for _, t := range tables {
		if !snaps[t.String()].done {
			todo = append(todo, t)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	src, err := connect(ctx, srcDSN, false)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	defer src.Close()
	if _, err := src.Execute("SET SESSION time_zone = '+00:00'"); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	pos, gtid, err := consistentSnapshot(src)
	if err != nil {
		return fmt.Errorf("source: consistent snapshot: %w", err)
	}
	log.WithFields(logrus.Fields{"position": pos, "gtid": gtid, "tables": len(todo)}).Info("snapshot started")
	for _, t := range todo {
		if err := ctx.Err(); err != nil {
			return err
		}
		prev := snaps[t.String()]
		st, err := copyTable(ctx, src, tgt, t, pos, gtid, prev, chunk)
		if err != nil {
			return err
		}
		log.WithFields(logrus.Fields{"table": t.String(), "rows": st.copied, "resumed_at_key": encodeKey(prev.lastKey),
			"segments": len(st.segs)}).Info("table copied")
		snaps[t.String()] = st
	}
	_, err = src.Execute("COMMIT")
	return err
}

// copyTable copies t as of the snapshot at pos/gtid, in key-order chunks,
// and returns the table's state. prev is the state an interrupted copy
// left: a table with an integer key resumes after its last copied key
// (that range becomes a segment as of the old position), any other is
// copied again.
func copyTable(ctx context.Context, src *client.Conn, tgt *target, t *table, pos binlogstream.Position, gtid string,
	prev snapState, chunk int) (snapState, error) {
	if err := createTarget(src, tgt, t); err != nil {
		return prev, err
	}
	chunk = max(1, min(chunk, 60000/len(t.write))) // a statement takes at most 65535 placeholders
	st, last, resume, err := copyStart(t, pos, gtid, prev)
	if err != nil {
		return prev, err
	}
	if err := tgt.inTx(func() error { return startCopy(tgt, t, st, prev, resume) }); err != nil {
		return prev, err
	}
	keyAt := keyColumns(t)
	for {
		if err := ctx.Err(); err != nil { // stopped: the committed chunks stay
			return prev, err
		}
		done, err := copyChunk(src, tgt, t, &st, &last, keyAt, chunk)
		if err != nil {
			return prev, err
		}
		if done {
			st.done = true
			return st, nil
		}
	}
}

// copyStart is the state a copy of t as of pos/gtid starts from, the key
// of the last row already copied (nil for none), and whether the copy
// resumes prev's (t has an integer key and prev copied rows).
func copyStart(t *table, pos binlogstream.Position, gtid string, prev snapState) (st snapState, last []any, resume bool, err error) {
	st = snapState{pos: pos, gtid: gtid}
	resume = t.intKey && prev.pos.File != "" && len(prev.lastKey) > 0
	if !resume {
		return st, nil, false, nil
	}
	st.segs, st.lastKey, st.copied = prev.segs, prev.lastKey, prev.copied
	// No segment for a position no row was copied at (a second kill
	// before the first chunk of a resumed copy).
	if n := len(st.segs); n == 0 || compareKeys(st.segs[n-1].Upto, prev.lastKey) != 0 {
		st.segs = append(slices.Clone(st.segs), segment{Upto: prev.lastKey, File: prev.pos.File, Pos: prev.pos.Offset, GTID: prev.gtid})
	}
	if last, err = keyArgs(prev.lastKey); err != nil {
		return st, nil, true, fmt.Errorf("target: the snapshot state of %s: %w", t, err)
	}
	return st, last, true, nil
}

// startCopy, in a target transaction, readies t's target table (kept on a
// resume, emptied for a copy of a new snapshot, required empty for a
// first copy) and records st as t's snapshot state, not done.
func startCopy(tgt *target, t *table, st, prev snapState, resume bool) error {
	switch {
	case resume:
	case prev.pos.File != "":
		// Rows copied as of an older snapshot, and no key order we can
		// compare in: copy the table again.
		if _, err := tgt.exec("DELETE FROM " + t.quoted()); err != nil {
			return fmt.Errorf("target: clear %s for a new snapshot: %w", t, err)
		}
	default:
		if r, err := tgt.exec("SELECT 1 FROM " + t.quoted() + " LIMIT 1"); err != nil {
			return fmt.Errorf("target: %w", err)
		} else if r.RowNumber() > 0 {
			return fmt.Errorf("target: table %s is not empty: binlog-replicate copies into empty tables", t)
		}
	}
	_, err := tgt.exec("INSERT INTO "+tgt.stateTable("snapshot")+
		" (name, tbl, file, pos, gtid, copied, done, last_key, segments) VALUES (?, ?, ?, ?, ?, ?, FALSE, ?, ?) "+
		"ON DUPLICATE KEY UPDATE file = VALUES(file), pos = VALUES(pos), gtid = VALUES(gtid), copied = VALUES(copied), "+
		"done = FALSE, last_key = VALUES(last_key), segments = VALUES(segments)",
		tgt.name, t.String(), st.pos.File, st.pos.Offset, st.gtid, st.copied, encodeKey(st.lastKey), encodeSegments(st.segs))
	return err
}

// keyColumns is where each of t's key columns is among its written ones.
func keyColumns(t *table) []int {
	keyAt := make([]int, len(t.key))
	for i, k := range t.key {
		for j, w := range t.write {
			if w == k {
				keyAt[i] = j
			}
		}
	}
	return keyAt
}

// copyChunk copies the next chunk of t's rows after the key last (nil:
// from the first) and the state st in one target transaction, advancing
// last and st; done once a chunk comes back short.
func copyChunk(src *client.Conn, tgt *target, t *table, st *snapState, last *[]any, keyAt []int, chunk int) (done bool, err error) {
	r, err := src.Execute(t.selectChunkSQL(*last != nil, chunk), *last...)
	if err != nil {
		return false, fmt.Errorf("source: read %s: %w", t, err)
	}
	n := r.RowNumber()
	args := make([]any, 0, n*len(t.write))
	for i := range n {
		for j := range t.write {
			args = append(args, ownValue(r.Values[i][j].Value()))
		}
	}
	if n > 0 {
		*last = (*last)[:0]
		for _, j := range keyAt {
			*last = append(*last, args[(n-1)*len(t.write)+j])
		}
		if t.intKey {
			if st.lastKey, err = intKey(*last); err != nil {
				return false, fmt.Errorf("source: %s: %w", t, err)
			}
		}
	}
	done = n < chunk
	err = tgt.inTx(func() error {
		if n > 0 {
			if _, err := tgt.exec(t.insertSQL(n), args...); err != nil {
				return &applyError{op: "snapshot insert into", table: t, at: st.pos.String(), err: err}
			}
		}
		_, err := tgt.exec("UPDATE "+tgt.stateTable("snapshot")+" SET copied = copied + ?, done = ?, last_key = ? WHERE name = ? AND tbl = ?",
			n, done, encodeKey(st.lastKey), tgt.name, t.String())
		return err
	})
	if err != nil {
		return false, err
	}
	st.copied += uint64(n)
	return done, nil
}

// ownValue copies bytes out of the result's buffer.
func ownValue(v any) any {
	if b, ok := v.([]byte); ok {
		return append([]byte{}, b...)
	}
	return v
}

// createTarget creates the table on the target as the source defines it,
// unless it exists.
func createTarget(src *client.Conn, tgt *target, t *table) error {
	r, err := src.Execute("SHOW CREATE TABLE " + t.quoted())
	if err != nil {
		return fmt.Errorf("source: SHOW CREATE TABLE %s: %w", t, err)
	}
	ddl, _ := r.GetString(0, 1)
	prefix := "CREATE TABLE " + quoteIdent(t.name) + " "
	if !strings.HasPrefix(ddl, prefix) {
		return fmt.Errorf("source: SHOW CREATE TABLE %s: unexpected %q", t, firstLine(ddl))
	}
	ddl = "CREATE TABLE IF NOT EXISTS " + t.quoted() + " " + ddl[len(prefix):]
	if _, err := tgt.exec("CREATE DATABASE IF NOT EXISTS " + quoteIdent(t.schema)); err != nil {
		return fmt.Errorf("target: %w", err)
	}
	if _, err := tgt.exec(ddl); err != nil {
		return fmt.Errorf("target: create %s: %w", t, err)
	}
	return nil
}
