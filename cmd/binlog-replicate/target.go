package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlogstream/binlogstream"
)

// connect opens a query connection. foundRows makes UPDATE report the rows
// it matched, not the rows it changed, so an update to the same values
// still counts 1 and 0 means a missing row.
func connect(ctx context.Context, dsn binlogstream.DSN, foundRows bool) (*client.Conn, error) {
	tlsCfg, _, err := dsn.TLSConfig()
	if err != nil {
		return nil, err
	}
	opt := func(c *client.Conn) error {
		if tlsCfg != nil {
			c.SetTLSConfig(tlsCfg)
		}
		if foundRows {
			return c.SetCapability(mysql.CLIENT_FOUND_ROWS)
		}
		return nil
	}
	c, err := client.ConnectWithContext(ctx, dsn.Addr(), dsn.User, dsn.Password, "", 10*time.Second, opt)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", dsn, err)
	}
	return c, nil
}

// target is the connection to the target server: the replicated tables
// and, in stateDB, the replicator's own state, written in the same
// transactions as the rows.
type target struct {
	conn    *client.Conn
	stmts   map[string]*client.Stmt
	stateDB string
	name    string // the replicator's name: the key of its state rows
}

func openTarget(ctx context.Context, dsn binlogstream.DSN, stateDB, name string) (*target, error) {
	c, err := connect(ctx, dsn, true)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	t := &target{conn: c, stmts: map[string]*client.Stmt{}, stateDB: stateDB, name: name}
	// One replicator per --name and target: a second one would interleave
	// its commits with ours. A killed one's lock goes with its connection,
	// which the server may notice a moment after the kill: wait a little.
	r, err := c.Execute("SELECT GET_LOCK(?, ?)", "binlog-replicate "+stateDB+"."+name, lockWait.Seconds())
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("target: GET_LOCK: %w", err)
	}
	if got, _ := r.GetInt(0, 0); got != 1 {
		_ = c.Close()
		return nil, fmt.Errorf("target: another binlog-replicate is running with --name %q and --state-db %q on this target", name, stateDB)
	}
	for _, q := range []string{
		// Values come as the source logged them: timestamps in UTC, zero
		// dates allowed, a 0 in an AUTO_INCREMENT column kept.
		"SET SESSION time_zone = '+00:00'",
		"SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION'",
		"SET SESSION foreign_key_checks = 0",
		"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
		"CREATE DATABASE IF NOT EXISTS " + quoteIdent(stateDB),
		"CREATE TABLE IF NOT EXISTS " + t.stateTable("checkpoint") + ` (
			name VARCHAR(64) NOT NULL PRIMARY KEY,
			token VARCHAR(4096) NOT NULL,
			updated TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)
		) ENGINE=InnoDB`,
		"CREATE TABLE IF NOT EXISTS " + t.stateTable("snapshot") + ` (
			name VARCHAR(64) NOT NULL,
			tbl VARCHAR(200) NOT NULL,
			file VARCHAR(255) NOT NULL,
			pos BIGINT UNSIGNED NOT NULL,
			gtid VARCHAR(4096) NOT NULL,
			copied BIGINT UNSIGNED NOT NULL DEFAULT 0,
			done BOOL NOT NULL DEFAULT FALSE,
			last_key VARCHAR(4096) NOT NULL DEFAULT '',
			segments MEDIUMTEXT NULL,
			PRIMARY KEY (name, tbl)
		) ENGINE=InnoDB`,
		"CREATE TABLE IF NOT EXISTS " + t.stateTable("schema_history") + ` (
			seq BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
			name VARCHAR(64) NOT NULL,
			record LONGTEXT NOT NULL,
			KEY (name, seq)
		) ENGINE=InnoDB`,
	} {
		if _, err := c.Execute(q); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("target: %s: %w", firstLine(q), err)
		}
	}
	return t, nil
}

// lockWait is how long a start waits for the previous run's lock.
const lockWait = 5 * time.Second

func firstLine(q string) string {
	for i, c := range q {
		if c == '\n' {
			return q[:i] + " ..."
		}
	}
	return q
}

func (t *target) stateTable(name string) string {
	return quoteIdent(t.stateDB) + "." + quoteIdent(name)
}

func (t *target) close() {
	for _, s := range t.stmts {
		_ = s.Close()
	}
	_ = t.conn.Close()
}

// exec runs q with args through a prepared statement kept for the session.
func (t *target) exec(q string, args ...any) (*mysql.Result, error) {
	if len(args) == 0 {
		return t.conn.Execute(q)
	}
	s, ok := t.stmts[q]
	if !ok {
		var err error
		if s, err = t.conn.Prepare(q); err != nil {
			return nil, err
		}
		t.stmts[q] = s
	}
	return s.Execute(args...)
}

// snapState is how far the snapshot of one table got: the binlog position
// its rows are consistent with (file position and GTID set), or, for the
// key ranges of segs, older ones; rows copied, whether it is complete, and
// the key of the last row copied (integer keys only).
type snapState struct {
	pos     binlogstream.Position
	gtid    string
	copied  uint64
	done    bool
	lastKey []string
	segs    []segment
}

// loadState reads the checkpoint ("" before streaming began) and the
// snapshot state of every table.
func (t *target) loadState() (token string, snaps map[string]snapState, err error) {
	r, err := t.exec("SELECT token FROM "+t.stateTable("checkpoint")+" WHERE name = ?", t.name)
	if err != nil {
		return "", nil, fmt.Errorf("target: read the checkpoint: %w", err)
	}
	if r.RowNumber() > 0 {
		token, _ = r.GetString(0, 0)
	}
	r, err = t.exec("SELECT tbl, file, pos, gtid, copied, done, last_key, COALESCE(segments, '') FROM "+
		t.stateTable("snapshot")+" WHERE name = ?", t.name)
	if err != nil {
		return "", nil, fmt.Errorf("target: read the snapshot state: %w", err)
	}
	snaps = map[string]snapState{}
	for i := range r.RowNumber() {
		tbl, _ := r.GetString(i, 0)
		file, _ := r.GetString(i, 1)
		pos, _ := r.GetUint(i, 2)
		gtid, _ := r.GetString(i, 3)
		copied, _ := r.GetUint(i, 4)
		done, _ := r.GetInt(i, 5)
		last, _ := r.GetString(i, 6)
		segText, _ := r.GetString(i, 7)
		segs, err := decodeSegments(segText)
		if err != nil {
			return "", nil, fmt.Errorf("target: the snapshot state of %s: %w", tbl, err)
		}
		snaps[tbl] = snapState{pos: binlogstream.Position{File: file, Offset: pos}, gtid: gtid, copied: copied,
			done: done != 0, lastKey: decodeKey(last), segs: segs}
	}
	return token, snaps, nil
}

// saveToken writes the checkpoint; call it inside the transaction whose
// rows it covers.
func (t *target) saveToken(token string) error {
	_, err := t.exec("INSERT INTO "+t.stateTable("checkpoint")+" (name, token) VALUES (?, ?) "+
		"ON DUPLICATE KEY UPDATE token = VALUES(token)", t.name, token)
	if err != nil {
		return fmt.Errorf("target: write the checkpoint: %w", err)
	}
	return nil
}

// inTx runs fn in a target transaction and commits it.
func (t *target) inTx(fn func() error) error {
	if _, err := t.conn.Execute("BEGIN"); err != nil {
		return fmt.Errorf("target: BEGIN: %w", err)
	}
	if err := fn(); err != nil {
		_, _ = t.conn.Execute("ROLLBACK")
		return err
	}
	if _, err := t.conn.Execute("COMMIT"); err != nil {
		return fmt.Errorf("target: COMMIT: %w", err)
	}
	return nil
}

// applyError names what diverged: the target lacks a row the source
// changed, or has one the source inserts. Neither happens when the
// checkpoint is exact, so the run stops instead of papering over it.
type applyError struct {
	op    string
	table *table
	at    string // the event's binlog position
	err   error
}

func (e *applyError) Error() string {
	return fmt.Sprintf("%s %s at %s: %v", e.op, e.table, e.at, e.err)
}

func (e *applyError) Unwrap() error { return e.err }

var errMissingRow = errors.New("the target has no row with that primary key (the target diverged from the source)")

func isDuplicateKey(err error) bool {
	var me *mysql.MyError
	return errors.As(err, &me) && me.Code == mysql.ER_DUP_ENTRY
}
