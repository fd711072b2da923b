package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/sqlconn"
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
		// The tables this replication copies: fixed by its first run.
		"CREATE TABLE IF NOT EXISTS " + t.stateTable("tables") + ` (
			name VARCHAR(64) NOT NULL,
			tbl VARCHAR(200) NOT NULL,
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
	_ = sqlconn.Close(t.conn)
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

// loadState reads the checkpoint ("" before the first commit) and the
// tables this replication copies (none before its first run). A state an
// earlier version wrote (STATE_DB.snapshot) is adopted when its checkpoint
// is past its snapshot (adoptLegacy) and refused otherwise.
func (t *target) loadState() (token string, tables map[string]bool, err error) {
	r, err := t.exec("SELECT token FROM "+t.stateTable("checkpoint")+" WHERE name = ?", t.name)
	if err != nil {
		return "", nil, fmt.Errorf("target: read the checkpoint: %w", err)
	}
	if r.RowNumber() > 0 {
		token, _ = r.GetString(0, 0)
	}
	tables = map[string]bool{}
	r, err = t.exec("SELECT tbl FROM "+t.stateTable("tables")+" WHERE name = ?", t.name)
	if err != nil {
		return "", nil, fmt.Errorf("target: read the table list: %w", err)
	}
	for i := range r.RowNumber() {
		tbl, _ := r.GetString(i, 0)
		tables[tbl] = true
	}
	legacy, err := t.loadLegacy()
	if err != nil || len(legacy) == 0 {
		return token, tables, err
	}
	names, err := adoptLegacy(token, legacy)
	if err != nil {
		return "", nil, err
	}
	err = t.inTx(func() error {
		for _, n := range names {
			tables[n] = true
			if _, err := t.exec("INSERT IGNORE INTO "+t.stateTable("tables")+" (name, tbl) VALUES (?, ?)", t.name, n); err != nil {
				return err
			}
		}
		_, err := t.exec("DELETE FROM "+t.stateTable("snapshot")+" WHERE name = ?", t.name)
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("target: adopt the earlier version's table list: %w", err)
	}
	return token, tables, nil
}

// loadLegacy reads an earlier version's snapshot state, if the target has
// one for this name.
func (t *target) loadLegacy() ([]legacyTable, error) {
	r, err := t.exec("SELECT tbl, file, pos, gtid, done, COALESCE(segments, '') FROM "+t.stateTable("snapshot")+" WHERE name = ?", t.name)
	var me *mysql.MyError
	if errors.As(err, &me) && me.Code == mysql.ER_NO_SUCH_TABLE {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("target: read the earlier version's snapshot state: %w", err)
	}
	var out []legacyTable
	for i := range r.RowNumber() {
		var lt legacyTable
		lt.name, _ = r.GetString(i, 0)
		lt.pos.File, _ = r.GetString(i, 1)
		lt.pos.Offset, _ = r.GetUint(i, 2)
		lt.gtid, _ = r.GetString(i, 3)
		done, _ := r.GetInt(i, 4)
		lt.done = done != 0
		lt.segments, _ = r.GetString(i, 5)
		out = append(out, lt)
	}
	return out, nil
}

// saveTables records the replicated tables, before the first commit.
func (t *target) saveTables(tables []*table) error {
	return t.inTx(func() error {
		if _, err := t.exec("DELETE FROM "+t.stateTable("tables")+" WHERE name = ?", t.name); err != nil {
			return err
		}
		for _, tb := range tables {
			if _, err := t.exec("INSERT INTO "+t.stateTable("tables")+" (name, tbl) VALUES (?, ?)", t.name, tb.String()); err != nil {
				return fmt.Errorf("target: record the table list: %w", err)
			}
		}
		return nil
	})
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

// missingRow says which row the target lacks: key holds the values of
// t's primary key columns.
func missingRow(t *table, key []any) error {
	parts := make([]string, len(key))
	for i, v := range key {
		switch x := v.(type) {
		case []byte:
			v = strconv.Quote(string(x))
		case string:
			v = strconv.Quote(x)
		}
		parts[i] = fmt.Sprintf("%s=%v", t.cols[t.key[i]], v)
	}
	return fmt.Errorf("the target has no row with primary key %s (the target diverged from the source)", strings.Join(parts, ", "))
}

func isDuplicateKey(err error) bool {
	var me *mysql.MyError
	return errors.As(err, &me) && me.Code == mysql.ER_DUP_ENTRY
}
